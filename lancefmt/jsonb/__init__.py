"""Lance's JSON columns: the JSONB binary format, JSON text <-> JSONB, JSONPath, and the
``json_*`` filter functions' semantics.

Lance stores an ``arrow.json`` column as a ``large_binary`` field with the logical type
``json`` and the extension name ``lance.json``; each value is one JSONB document in the
binary format of the ``jsonb`` crate (Databend's), which pylance uses. Reads turn it back into
``arrow.json`` strings as pylance does.

* :mod:`.codec`: JSON text -> JSONB bytes and back, whole Arrow arrays at a time;
* :mod:`.value`: reading one JSONB document (types, members, elements, conversions);
* :mod:`.path`: JSONPath (``$.a.b[0]``) parsing and selection.
"""
from .codec import (  # noqa: F401
    ARROW_JSON_EXT_NAME,
    LANCE_JSON_EXT_NAME,
    decode,
    decode_array,
    encode,
    encode_array,
)
