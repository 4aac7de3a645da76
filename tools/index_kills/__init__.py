"""Writers killed during index work, and writers racing index commits (issue 38, part 4).

``python -m tools.index_kills kills --count 200`` (``make kill-index``) and ``python -m
tools.index_kills races --commits 1000`` (``make race-index``); :mod:`.kills` and
:mod:`.races` say what is run, :mod:`.checks` what must hold afterwards."""
