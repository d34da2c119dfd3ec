"""`python -m sequence_ai ...` is the `sequence-ai` command."""

import sys

from .cli import main

sys.exit(main())
