"""``python -m tools.index_kills {kills,races} ...``: run a campaign and print its figures
(JSON); the exit status is 1 when an invariant failed."""
from __future__ import annotations

import argparse
import json
import os
import sys


def main(argv=None) -> int:
    os.environ.setdefault("LANCE_LOG", "error")  # a refused compaction is counted, not logged
    ap = argparse.ArgumentParser(prog="python -m tools.index_kills")
    sub = ap.add_subparsers(dest="what", required=True)
    k = sub.add_parser("kills", help="SIGKILL index writers (kills.py)")
    k.add_argument("--count", type=int, default=200)
    k.add_argument("--spark", type=int, default=0, help="of which Spark index builds")
    k.add_argument("--seed", type=int, default=0)
    k.add_argument("--stores", default="local,s3")
    k.add_argument("--workdir", default="/tmp/index-kills")
    k.add_argument("-v", "--verbose", action="store_true")
    r = sub.add_parser("races", help="writers racing index commits (races.py)")
    r.add_argument("--commits", type=int, default=1000)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--stores", default="local,s3")
    r.add_argument("--workdir", default="/tmp/index-races")
    r.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    if a.what == "kills":
        from .kills import Config, campaign

        report = campaign(Config(kills=a.count, seed=a.seed, stores=tuple(a.stores.split(",")),
                                 spark_kills=a.spark, workdir=a.workdir, verbose=a.verbose),
                          log=lambda m: print(m, file=sys.stderr, flush=True))
    else:
        from .races import Config, campaign

        report = campaign(Config(commits=a.commits, seed=a.seed, stores=tuple(a.stores.split(",")),
                                 workdir=a.workdir, verbose=a.verbose),
                          log=lambda m: print(m, file=sys.stderr, flush=True))
    print(json.dumps(report.summary(), indent=1))
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
