"""`sequence-ai export --format lerobot RECORDING... OUT_DIR`: recorded runs as a training set.

    sequence-ai export --format lerobot runs/ dataset/                  # every .mcap in runs/
    sequence-ai export --format lerobot a.mcap b.mcap dataset/ --fps 5 --views exterior_1
    sequence-ai export --format lerobot runs/ dataset/ --only-completed # runs that succeeded only

One episode per recording (episode.py says how a run becomes steps), written by lerobot's own
writer (to_lerobot.py). An OUT_DIR that holds a dataset gets the new runs appended; a run already
in it is skipped, so the same command can run again as recordings accumulate.

Each problem is one line naming the file: a file that is not a recording, one cut short (what it
holds is exported, and the line says how much of the file was unreadable), a run that does not
fit the dataset (another robot's shape). Exit codes: 0 every recording exported or skipped on
purpose, 1 a problem with at least one, 2 usage.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import List, Sequence, TextIO

__all__ = ["add_arguments", "export"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", required=True, choices=["lerobot"], help="the dataset format (lerobot: v3.0)")
    parser.add_argument("paths", nargs="+", type=Path, metavar="RECORDING... OUT_DIR",
                        help="MCAP recordings (or folders of them), then the dataset folder")
    parser.add_argument("--fps", type=int, metavar="N",
                        help="frames per second (default: the model's control frequency; others are resampled)")
    parser.add_argument("--views", metavar="V1,V2", help="camera views to include (default: every recorded view)")
    parser.add_argument("--only-completed", action="store_true",
                        help="skip runs that did not succeed (a fault, an e-stop, an interrupt, or no outcome)")
    parser.add_argument("--repo-id", metavar="NAME", help="the dataset's repo_id (default: local/<OUT_DIR's name>)")
    parser.add_argument("--robot-type", metavar="NAME", help="info.json's robot_type (default: the model)")


def recordings_in(paths: Sequence[Path]) -> List[Path]:
    """The files named, a folder standing for the .mcap files in it (sorted: recording order)."""
    found: List[Path] = []
    for path in paths:
        found.extend(sorted(path.glob("*.mcap")) if path.is_dir() else [path])
    return found


def export(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if len(args.paths) < 2:
        print("error: export needs at least one recording and the dataset folder (RECORDING... OUT_DIR)", file=err)
        return 2
    if args.fps is not None and args.fps <= 0:
        print(f"error: --fps must be a positive whole number (got {args.fps})", file=err)
        return 2
    views = [v.strip() for v in args.views.split(",") if v.strip()] if args.views else None
    *sources, out_dir = args.paths
    try:
        from .episode import NotAnEpisode, episode_of
        from .reader import read_run
        from .to_lerobot import LeRobotTarget, require_lerobot
        from .walk import RecordingRefused

        require_lerobot()
        target = LeRobotTarget(out_dir, repo_id=args.repo_id, robot_type=args.robot_type)
    except (ImportError, ValueError) as exc:
        print(f"error: {exc}", file=err)
        return 1
    files = recordings_in(sources)
    if not files:
        print(f"error: no recordings in {', '.join(str(s) for s in sources)}", file=err)
        return 1
    problems = written = frames = skipped = 0
    progress = _Progress(err, enabled=err.isatty())
    try:
        for number, path in enumerate(files, 1):
            if not path.is_file():
                print(f"error: {path}: no such file", file=err)
                problems += 1
                continue
            try:
                episode = episode_of(read_run(path, frames=True), fps=args.fps, views=views)
            except RecordingRefused as exc:  # malformed, or over the reader's limits: says which
                reason = str(exc)[len(f"{path}: "):] if str(exc).startswith(f"{path}: ") else str(exc)
                print(f"error: {path}: not a recording: {reason}", file=err)
                problems += 1
                continue
            except NotAnEpisode as exc:
                print(f"error: {path}: {exc}", file=err)
                problems += 1
                continue
            if not episode.complete:
                ending = "the run's ending is not in it" if episode.reason == "unknown" else f"it ended {episode.reason}"
                print(f"warning: {path} was cut short ({episode.damage}): exporting the {len(episode.steps)} frames "
                      f"it holds; {_unread_tail(path)} bytes after its last complete record could not be read, and "
                      f"{ending}", file=err)
            if args.only_completed and not episode.succeeded:
                print(f"skipped {path}: the run ended {episode.reason} (--only-completed)", file=out)
                skipped += 1
                continue
            if episode.key in target.episodes:
                print(f"skipped {path}: already in the dataset as episode {target.episodes[episode.key]}", file=out)
                skipped += 1
                continue
            problem = target.mismatch(episode)
            if problem:
                print(f"error: {path}: {problem}", file=err)
                problems += 1
                continue
            progress.start(f"{number}/{len(files)} {path.name}", len(episode.steps))
            try:
                index = target.write(episode, progress.advance)
            except ValueError as exc:
                progress.end()
                print(f"error: {path}: lerobot refused a frame: {' '.join(str(exc).split())}", file=err)
                problems += 1
                continue
            progress.end()
            written, frames = written + 1, frames + len(episode.steps)
            print(f"episode {index}: {path.name}, {len(episode.steps)} frames at {episode.fps} fps, "
                  f"ended {episode.reason}, tasks: {' | '.join(episode.tasks)}", file=out)
    finally:
        progress.end()
        target.close()
    print(f"{written} episode(s), {frames} frames written to {out_dir}; {skipped} skipped, {problems} with problems",
          file=out)
    return 1 if problems else 0


def _unread_tail(path: Path) -> int:
    """Bytes of a file cut short after its last complete MCAP record."""
    from mcap.stream_reader import StreamReader

    size = path.stat().st_size
    with open(path, "rb") as stream:
        good = 0
        try:
            for _ in StreamReader(stream, emit_chunks=True).records:
                good = stream.tell()
        except Exception:  # the record the file was cut in
            pass
    return max(0, size - good)


class _Progress:
    """One self-overwriting line on a terminal: the file, and its frames written so far."""

    def __init__(self, stream: TextIO, enabled: bool):
        self.stream, self.enabled = stream, enabled
        self.label, self.total, self.done, self.open = "", 0, 0, False

    def start(self, label: str, total: int) -> None:
        self.label, self.total, self.done = label, max(1, total), 0
        self._draw()

    def advance(self, n: int) -> None:
        self.done += n
        if self.done == self.total or self.done % 10 == 0:
            self._draw()

    def end(self) -> None:
        if self.open:
            self.stream.write("\n")
            self.stream.flush()
            self.open = False

    def _draw(self) -> None:
        if not self.enabled:
            return
        filled = 30 * self.done // self.total
        saving = ", saving (lerobot writes the images and the stats)" if self.done == self.total else ""
        self.stream.write(f"\r[export] {self.label} [{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total} "
                          f"frames{saving}")
        self.stream.flush()
        self.open = True

