import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_demo_runs_and_agrees_with_pylance():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "demo.py")], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "all data files found where lancefmt resolved them: OK" in out.stdout
    assert "id 2 name=cold" in out.stdout and "before_append -> version 3" in out.stdout
    assert "lancefmt 486  pylance 486" in out.stdout
