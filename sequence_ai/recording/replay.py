"""`sequence-ai replay RECORDING...`: each run's summary from its file alone, and a total.

    sequence-ai replay run.mcap                       # its summary
    sequence-ai replay out/recordings/                # every .mcap in the folder: a summary each, then a total
    sequence-ai replay a.mcap b.mcap                  # the same for the files named
    sequence-ai replay run.mcap --plot run.png        # and its timeline (needs matplotlib)
    sequence-ai replay out/recordings/ --plot plots/  # one <name>-timeline.png each in plots/ (a folder:
                                                      # for several files, a folder named, or a PATH that is one)

The summary needs the [record] extra only; matplotlib is imported only for --plot.

Exit codes: 0 every file read (a file cut short by a crash still reads, and says so); 1 a file not
there, the [record] extra missing, or a plot that could not be drawn; 2 usage, or a file refused —
not an MCAP recording, malformed, nothing readable in it, or over the reader's caps (ReadLimits,
docs/RECORDING.md) — in one line, never a traceback: a recording from elsewhere is untrusted input.
Several files: each is read whatever the one before did, and the exit code is the worst of them.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple

__all__ = ["add_arguments", "replay"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path, metavar="RECORDING",
                        help="MCAP files written by recorded runs, or folders of them (their .mcap files)")
    parser.add_argument("--plot", metavar="PATH",
                        help="also draw the timeline (needs matplotlib): the PNG's path for one file named; a folder "
                             "(one <name>-timeline.png each) for several, for a folder named, or when PATH is one")
    parser.add_argument("--no-plot", action="store_true", help=argparse.SUPPRESS)  # the default: older commands run


def replay(paths: Sequence[Path], plot: Optional[str], out: TextIO, err: TextIO) -> int:
    files: List[Path] = []
    for path in paths:
        found = sorted(path.glob("*.mcap")) if path.is_dir() else [path]
        if not found:
            print(f"error: no recordings (.mcap files) in {path}", file=err)
            return 1
        files.extend(found)
    several = len(files) > 1 or any(p.is_dir() for p in paths)  # a summary each, then a total
    folder = plot is not None and (several or plot.endswith(("/", os.sep)) or Path(plot).is_dir())
    worst, total = 0, _Total()
    for number, file in enumerate(files):
        if number:
            print(file=out)
        code, record = _summary(file, out, err)
        worst = max(worst, code)
        total.add(file, record)
        if record is not None and plot is not None:
            target = Path(plot) / f"{file.stem}-timeline.png" if folder else Path(plot)
            worst = max(worst, _plot(record, target, out, err))
    if several:
        print(file=out)
        print(total.line(), file=out)
    return worst


def _summary(file: Path, out: TextIO, err: TextIO) -> Tuple[int, Any]:
    """Print the summary of `file`: (exit code, the record read, or None)."""
    try:
        from .reader import RecordingRefused, read_run
        from .summary import summary_lines

        if not file.is_file():
            print(f"error: {file} is not a file", file=err)
            return 1, None
        record = read_run(file)
        if not record.topics and record.damage:
            raise RecordingRefused(f"{file}: no complete record in it ({record.damage})")
        lines: List[str] = summary_lines(record)
    except ImportError as exc:
        print(f"error: {exc}", file=err)
        return 1, None
    except RecordingRefused as exc:
        print(f"error: {exc}", file=err)
        return 2, None
    except OSError as exc:
        print(f"error: {file}: {exc.strerror or exc}", file=err)
        return 1, None
    except Exception as exc:  # MemoryError, or what the caps missed: still one line, no traceback
        print(f"error: {file} could not be read ({type(exc).__name__}: {str(exc)[:200]})", file=err)
        return 2, None
    print("\n".join(lines), file=out)
    return 0, record


def _plot(record: Any, target: Path, out: TextIO, err: TextIO) -> int:
    try:
        from .summary import VALUE_LIMIT, out_of_range
        from .timeline import plot_timeline

        written = plot_timeline(record, target)
    except Exception as exc:  # no matplotlib, a folder that cannot be written, ...
        print(f"error: no plot of {record.path}: {exc}", file=err)
        return 1
    left_out = out_of_range(record)[0]
    print(f"timeline: {written}" + (f" ({left_out} values left out: not finite or beyond ±{VALUE_LIMIT:g})"
                                   if left_out else ""), file=out)
    return 0


class _Total:
    """What several recordings add up to: runs read and not, actions, chunks, time, endings."""

    def __init__(self) -> None:
        self.files, self.unread, self.actions, self.chunks, self.seconds = 0, 0, 0, 0, 0.0
        self.endings: Dict[str, int] = {}

    def add(self, file: Path, record: Any) -> None:
        self.files += 1
        if record is None:
            self.unread += 1
            return
        from .summary import summarize

        summary = summarize(record)
        self.actions += summary.actions
        self.chunks += summary.answers
        self.seconds += summary.duration_s
        ending = record.outcome.reason if record.outcome is not None else "no outcome"
        self.endings[ending] = self.endings.get(ending, 0) + 1

    def line(self) -> str:
        read = self.files - self.unread
        endings = ", ".join(f"{reason} {n}" for reason, n in sorted(self.endings.items()))
        return (f"total: {self.files} recording{'s' if self.files != 1 else ''}, {read} read" + (f", {self.unread} not" if self.unread else "")
                + f": {self.actions} actions, {self.chunks} chunks, {self.seconds:.2f} s"
                + (f"; endings: {endings}" if endings else ""))
