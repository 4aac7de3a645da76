"""Lance's own Python tests (lancedb/lance ``python/python/tests``), run against lancefmt.

The tests are taken from a git directory of the lance repository at run time (never copied into
this repository), run file by file in their own pytest process, once on pylance (the baseline,
stored in ``baseline.json``) and once with ``import lance`` answered by lancefmt (``shim/``).
``python -m tools.pylance_suite --help`` and docs/pylance-suite.md say how.
"""
