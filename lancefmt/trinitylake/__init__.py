"""TrinityLake storage locations: root normalisation, optimized file names, root-node names,
the latest-version hint and the lakehouse definition file name (see :mod:`.locations`)."""
from .locations import (  # noqa: F401
    LATEST_HINT_FILE, LakehouseLocations, encode_latest_hint, file_location, find_latest_version,
    lakehouse_def_file_name, murmur3_32, node_file_name, node_file_names, normalize_root,
    optimized_file_name, optimized_file_names, parse_latest_hint, parse_root_node_file_name,
    relative_location, root_node_file_name,
)
