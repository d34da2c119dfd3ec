"""`sequence-ai replay run.mcap`: the run's summary, and its timeline plot, from the file alone.

    sequence-ai replay run.mcap                    # summary + run-timeline.png beside the file
    sequence-ai replay run.mcap --plot out/t.png   # the plot elsewhere
    sequence-ai replay run.mcap --no-plot          # the summary only (no matplotlib needed)

Exit codes: 0 read (a file cut short by a crash still reads, and says so); 1 no file there, the
[record] extra missing, or the plot could not be written; 2 usage, or the file refused — not an
MCAP recording, malformed, nothing readable in it, or over the reader's caps (ReadLimits,
docs/RECORDING.md) — in one line, never a traceback: a recording from elsewhere is untrusted input.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import List, Optional, TextIO

__all__ = ["add_arguments", "replay"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="an MCAP file written by a recorded run")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--plot", type=Path, metavar="PNG", help="where the timeline goes (default: beside the file)")
    where.add_argument("--no-plot", action="store_true", help="print the summary only")


def default_plot_path(file: Path) -> Path:
    return file.with_name(f"{file.stem}-timeline.png")


def replay(file: Path, plot: Optional[Path], no_plot: bool, out: TextIO, err: TextIO) -> int:
    try:
        from .reader import RecordingRefused, read_run
        from .summary import summary_lines

        if not file.is_file():
            print(f"error: {file} is not a file", file=err)
            return 1
        record = read_run(file)
        if not record.topics and record.damage:
            raise RecordingRefused(f"{file}: no complete record in it ({record.damage})")
        lines: List[str] = summary_lines(record)
    except ImportError as exc:
        print(f"error: {exc}", file=err)
        return 1
    except RecordingRefused as exc:
        print(f"error: {exc}", file=err)
        return 2
    except OSError as exc:
        print(f"error: {file}: {exc.strerror or exc}", file=err)
        return 1
    except Exception as exc:  # MemoryError, or what the caps missed: still one line, no traceback
        print(f"error: {file} could not be read ({type(exc).__name__}: {str(exc)[:200]})", file=err)
        return 2
    print("\n".join(lines), file=out)
    if no_plot:
        return 0
    target = plot or default_plot_path(file)
    try:
        from .summary import VALUE_LIMIT, out_of_range
        from .timeline import plot_timeline

        written = plot_timeline(record, target)
    except Exception as exc:  # no matplotlib, a folder that cannot be written, ...
        print(f"error: no plot: {exc}", file=err)
        return 1
    left_out = out_of_range(record)[0]
    print(f"timeline: {written}" + (f" ({left_out} values left out: not finite or beyond ±{VALUE_LIMIT:g})"
                                   if left_out else ""), file=out)
    return 0
