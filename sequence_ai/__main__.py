"""`python -m sequence_ai ...` is the `sequence-ai` command."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
