"""Fuzzing lancefmt's untrusted-input entry points with atheris (libFuzzer for Python).

``python -m fuzz.seeds DIR`` writes seed corpora (files made by pylance and by lancefmt);
``python -m fuzz.run TARGET [libFuzzer flags] [CORPUS...]`` fuzzes one target;
``make fuzz SECONDS=N`` runs every target N seconds; ``tests/fuzz`` runs each a few seconds
with a fixed seed and replays every kept finding in ``fuzz/regressions/<target>/``.
"""
