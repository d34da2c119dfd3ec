"""What the client itself prints to a terminal: the run's status line and warming progress.

The status line (`progress=True`, or a TTY with `progress="auto"`) overwrites itself on stderr
with a carriage return; a warming line printed meanwhile first ends that line, so the two are
never glued together. Warnings point at the caller's code, not at this package (`warn_user`).
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from typing import Type

__all__ = ["status_line", "warming_line", "warn_user"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_lock = threading.Lock()
_line_open = False  # a status line is on stderr without its newline


def status_line(text: str) -> None:
    """One self-overwriting status line on stderr; `done` ends it."""
    global _line_open
    with _lock:
        end = "\n" if text == "done" else ""
        sys.stderr.write(f"\r[sequences] {text:<10}{end}")
        sys.stderr.flush()
        _line_open = text != "done"


def _eta_text(eta_s: float) -> str:
    return f"{eta_s:.0f}s" if eta_s < 90 else f"~{eta_s / 60:.0f} min"


def warming_line(waited_s: float, eta_s: float) -> None:
    """The default on_warming (docs/PROTOCOL.md §7.5): one line on stdout per warm-wait sleep."""
    global _line_open
    with _lock:
        if _line_open:
            sys.stderr.write("\n")
            sys.stderr.flush()
            _line_open = False
        print(f"[sequences] starting the model, about {_eta_text(eta_s)} to go (waited {waited_s:.0f}s so far)",
              file=sys.stdout, flush=True)


def warn_user(message: str, category: Type[Warning] = UserWarning) -> None:
    """warnings.warn pointing at the first frame outside this package: the caller's own line
    (their run() call, or the thread function that made it), wherever inside it the warning arose."""
    frame = sys._getframe(1)
    level = 2  # stacklevel 1 is this function's own line, 2 its caller's (frame above)
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)).startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level if frame is not None else 1)
