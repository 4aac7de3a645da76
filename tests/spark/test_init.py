"""pyspark stays optional: importing lancefmt (and the Spark helpers that need no Spark) never
imports it."""
import subprocess
import sys


def test_lancefmt_does_not_import_pyspark():
    code = ("import sys, lancefmt, lancefmt.spark, lancefmt.spark.options, lancefmt.spark.filters; "
            "assert 'pyspark' not in sys.modules, sorted(m for m in sys.modules if 'spark' in m)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
