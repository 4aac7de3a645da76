"""Names in an IVF index directory as pylance 14 writes them (V3): the two files and the
columns they hold."""

INDEX_FILE = "index.idx"      # the sub-index (FLAT: no rows; HNSW: the graph) and the centroids
AUX_FILE = "auxiliary.idx"    # every indexed row: its row id and the quantizer's code
ROW_ID = "_rowid"
FLAT_MARKER = "__flat_marker"
