"""``python -m lancefmt``: the command line (see lancefmt.cli)."""
import sys

from .cli import main

sys.exit(main())
