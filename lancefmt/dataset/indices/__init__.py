"""Operations on a dataset's indices that commit: create, drop, optimize, and the distributed
build's segments (an operation layer beside ``mutate``, ``maintain`` and ``refs``)."""
