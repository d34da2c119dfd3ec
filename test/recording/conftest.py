"""The recording suites: their helpers (_runs.py) live beside them."""

from __future__ import annotations

import os
import sys

# --import-mode=importlib does not put test folders on sys.path.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
