"""`sequence-ai export --format lerobot RECORDING... OUT_DIR`: recorded runs as a training set.

    sequence-ai export --format lerobot runs/ dataset/                  # every .mcap in runs/
    sequence-ai export --format lerobot a.mcap b.mcap dataset/ --fps 5 --views exterior_1
    sequence-ai export --format lerobot runs/ dataset/ --only-completed # runs that succeeded only

One episode per recording (episode.py says how a run becomes steps), written by lerobot's own
writer (to_lerobot.py). An OUT_DIR that holds a dataset gets the new runs appended; a run already
in it is skipped, so the same command can run again as recordings accumulate.

Two passes. The first reads each file and checks what it would build against the stated limits
and the budget (export_limits.py): its rate, its frame count, each frame's size from its header,
and its values. Nothing is decoded or written in it. If the files that pass are over the budget
together, nothing is written. The second pass writes them.

Each problem is one line naming the file: a file that is not a recording, one cut short (what it
holds is exported, and the line says how much of the file was unreadable), a frame that is not an
image, a run that does not fit the dataset (another robot's shape); each refusal likewise, naming
the field over its limit. Either way that file is skipped, the others are exported, and the last
line names what was not. Exit codes: 0 every recording exported or skipped on purpose, 1 a problem
with at least one, 2 usage, or something refused (a file, or the whole export over the budget).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple

from .export_limits import FPS, ExportBudget

__all__ = ["add_arguments", "export"]

EXIT_OK, EXIT_PROBLEMS, EXIT_REFUSED = 0, 1, 2
KEEP_EPISODES_BYTES = 256 << 20  # first-pass episodes kept for the second (frames' encoded bytes), else read again
NAMED = 20  # files the last line names


def _fps(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not FPS[0] <= value <= FPS[1]:
        raise argparse.ArgumentTypeError(f"must be a whole number from {FPS[0]} to {FPS[1]} (got {text})")
    return value


def _positive(kind: Any) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if not 0 < value < float("inf"):
            raise argparse.ArgumentTypeError(f"must be a positive number (got {text})")
        return value
    return parse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    budget = ExportBudget()
    parser.add_argument("--format", required=True, choices=["lerobot"], help="the dataset format (lerobot: v3.0)")
    parser.add_argument("paths", nargs="+", type=Path, metavar="RECORDING... OUT_DIR",
                        help="MCAP recordings (or folders of them), then the dataset folder")
    parser.add_argument("--fps", type=_fps, metavar="N",
                        help=f"frames per second, {FPS[0]} to {FPS[1]} (default: the model's control frequency; "
                             "others are resampled)")
    parser.add_argument("--views", metavar="V1,V2", help="camera views to include (default: every recorded view)")
    parser.add_argument("--only-completed", action="store_true",
                        help="skip runs that did not succeed (a fault, an e-stop, an interrupt, or no outcome)")
    parser.add_argument("--repo-id", metavar="NAME", help="the dataset's repo_id (default: local/<OUT_DIR's name>)")
    parser.add_argument("--robot-type", metavar="NAME", help="info.json's robot_type (default: the model)")
    parser.add_argument("--max-frames", type=_positive(int), default=budget.frames, metavar="N",
                        help=f"the most frames one export writes (default {budget.frames:,})")
    parser.add_argument("--max-gib", type=_positive(float), default=budget.image_bytes / (1 << 30), metavar="G",
                        help=f"the most decoded image data one export hands lerobot, GiB (default "
                             f"{budget.image_bytes >> 30})")
    parser.add_argument("--bad-values", choices=["refuse", "flag"], default="refuse",
                        help="actions, states or commands not finite or beyond float32: refuse the run (default), "
                             "or write them as they are and flag the episode in meta/sequence_ai_episodes.jsonl")


def recordings_in(paths: Sequence[Path]) -> List[Path]:
    """The files named, a folder standing for the .mcap files in it (sorted: recording order)."""
    found: List[Path] = []
    for path in paths:
        found.extend(sorted(path.glob("*.mcap")) if path.is_dir() else [path])
    return found


@dataclass
class _Planned:
    """A file the first pass found fit to write: what it would write, and its episode if kept."""

    path: Path
    frames: int
    image_bytes: int
    flagged: Dict[str, int]
    episode: Any = None


@dataclass
class _Tally:
    skipped: int = 0
    failed: List[str] = field(default_factory=list)  # "name (why)", each file not exported
    refused: bool = False

    def problem(self, path: Path, line: str, why: str, err: TextIO) -> None:
        print(f"error: {path}: {line}", file=err)
        self.failed.append(f"{path.name} ({why})")

    def refuse(self, path: Path, line: str, what: str, err: TextIO) -> None:
        self.problem(path, f"refused: {line}", f"refused: {what}", err)
        self.refused = True


def export(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if len(args.paths) < 2:
        print("error: export needs at least one recording and the dataset folder (RECORDING... OUT_DIR)", file=err)
        return 2
    views = [v.strip() for v in args.views.split(",") if v.strip()] if args.views else None
    budget = ExportBudget(frames=args.max_frames, image_bytes=int(args.max_gib * (1 << 30)))
    *sources, out_dir = args.paths
    try:
        from .to_lerobot import LeRobotTarget, require_lerobot

        require_lerobot()
        target = LeRobotTarget(out_dir, repo_id=args.repo_id, robot_type=args.robot_type)
    except (ImportError, ValueError) as exc:
        print(f"error: {exc}", file=err)
        return 1
    files = recordings_in(sources)
    if not files:
        print(f"error: no recordings in {', '.join(str(s) for s in sources)}", file=err)
        return 1
    tally = _Tally()
    planned, kept = [], 0
    for path in files:
        item = _plan(path, args, views, budget, target, tally, out, err)
        if item is not None:
            kept += sum(len(data) for images in item.episode.images.values() for data in images)
            if kept > KEEP_EPISODES_BYTES:  # the second pass reads it again
                item.episode = None
            planned.append(item)
    frames, image_bytes = sum(p.frames for p in planned), sum(p.image_bytes for p in planned)
    if frames > budget.frames or image_bytes > budget.image_bytes:
        largest = max(planned, key=lambda p: (p.frames, p.image_bytes))
        over = (f"{frames:,} frames, over the budget of {budget.frames:,} (--max-frames raises it)"
                if frames > budget.frames else f"{_size(image_bytes)} of decoded images, over the budget of "
                f"{_size(budget.image_bytes)} (--max-gib raises it)")
        print(f"error: refused: the {len(planned)} recordings to export make {over}; the largest is {largest.path} "
              f"({largest.frames:,} frames, {_size(largest.image_bytes)}); nothing written", file=err)
        return EXIT_REFUSED
    written, frames = _write(planned, args, views, budget, target, tally, out, err)
    lines = tally.failed[:NAMED] + ([f"and {len(tally.failed) - NAMED} more"] if len(tally.failed) > NAMED else [])
    print(f"{written} episode(s), {frames} frames written to {out_dir}; {tally.skipped} skipped"
          + (f"; not exported: {', '.join(lines)}" if lines else ""), file=out)
    return EXIT_REFUSED if tally.refused else EXIT_PROBLEMS if tally.failed else EXIT_OK


def _plan(path: Path, args: argparse.Namespace, views: Optional[List[str]], budget: ExportBudget, target: Any,
          tally: _Tally, out: TextIO, err: TextIO) -> Optional[_Planned]:
    """The first pass over one file: what it would write, or None (said in one line)."""
    from .episode import NotAnEpisode, episode_of
    from .export_limits import BadFrame, OverLimit, image_bytes, values_out_of_range
    from .reader import read_run
    from .walk import RecordingRefused

    if not path.is_file():
        tally.problem(path, "no such file", "no such file", err)
        return None
    try:
        episode = episode_of(read_run(path, frames=True), fps=args.fps, views=views, budget=budget)
        if args.only_completed and not episode.succeeded:
            print(f"skipped {path}: the run ended {episode.reason} (--only-completed)", file=out)
            tally.skipped += 1
            return None
        if episode.key in target.episodes:
            print(f"skipped {path}: already in the dataset as episode {target.episodes[episode.key]}", file=out)
            tally.skipped += 1
            return None
        decoded = image_bytes(episode.views, episode.images, (step.frames for step in episode.steps))
        if decoded > budget.image_bytes:
            raise OverLimit("image bytes", f"its {len(episode.steps):,} frames are {_size(decoded)} of decoded "
                                           f"images, over the budget of {_size(budget.image_bytes)} (--max-gib "
                                           "raises it)")
        bad = [b for b in (values_out_of_range("action", (s.action for s in episode.played), episode.action_names),
                           values_out_of_range("observation.state", (s.state for s in episode.played),
                                               episode.state_names),
                           values_out_of_range(f"action.{episode.joint_command_kind}",
                                               (s.joint_command or () for s in episode.played),
                                               episode.joint_command_names)) if b]
    except RecordingRefused as exc:  # malformed, or over the reader's limits: says which
        reason = str(exc)[len(f"{path}: "):] if str(exc).startswith(f"{path}: ") else str(exc)
        tally.problem(path, f"not a recording: {reason}", "not a recording", err)
        return None
    except OverLimit as exc:
        tally.refuse(path, str(exc), exc.field, err)
        return None
    except (NotAnEpisode, BadFrame) as exc:
        tally.problem(path, str(exc), "a bad frame" if isinstance(exc, BadFrame) else str(exc).split(":")[0], err)
        return None
    except Exception as exc:  # MemoryError, or what the checks missed: still one line, and the next file
        tally.problem(path, f"could not be read ({type(exc).__name__}: {str(exc)[:200]})", type(exc).__name__, err)
        return None
    if bad and args.bad_values == "refuse":
        tally.refuse(path, f"{'; '.join(map(str, bad))}. Refusing is the default; --bad-values flag writes them "
                           "as they are (NaN, ±inf) and flags the episode in meta/sequence_ai_episodes.jsonl",
                     f"{', '.join(b.feature for b in bad)} values", err)
        return None
    for b in bad:
        print(f"warning: {path}: {b}: written as they are (--bad-values flag), flagged in "
              "meta/sequence_ai_episodes.jsonl", file=err)
    if not episode.complete:
        ending = "the run's ending is not in it" if episode.reason == "unknown" else f"it ended {episode.reason}"
        print(f"warning: {path} was cut short ({episode.damage}): exporting the {len(episode.steps)} frames it "
              f"holds; {_unread_tail(path)} bytes after its last complete record could not be read, and {ending}",
              file=err)
    return _Planned(path, len(episode.steps), decoded, {b.feature: b.count for b in bad}, episode)


def _write(planned: List[_Planned], args: argparse.Namespace, views: Optional[List[str]], budget: ExportBudget,
           target: Any, tally: _Tally, out: TextIO, err: TextIO) -> Tuple[int, int]:
    """The second pass: each planned file into the dataset; (episodes, frames) written."""
    from .episode import episode_of
    from .reader import read_run

    written = frames = 0
    progress = _Progress(err, enabled=err.isatty())
    try:
        for number, item in enumerate(planned, 1):
            path = item.path
            try:
                episode = item.episode or episode_of(read_run(path, frames=True), fps=args.fps, views=views,
                                                     budget=budget)
                item.episode = None
                if episode.key in target.episodes:  # the same run twice in this export
                    print(f"skipped {path}: already in the dataset as episode {target.episodes[episode.key]}",
                          file=out)
                    tally.skipped += 1
                    continue
                problem = target.mismatch(episode)
                if problem:
                    tally.problem(path, problem, "another shape", err)
                    continue
                progress.start(f"{number}/{len(planned)} {path.name}", len(episode.steps))
                index = target.write(episode, progress.advance, item.flagged)
            except ValueError as exc:
                progress.end()
                tally.problem(path, f"lerobot refused a frame: {' '.join(str(exc).split())[:300]}", "a bad frame", err)
                continue
            except Exception as exc:  # a frame whose pixels do not decode, MemoryError: the next file
                progress.end()
                tally.problem(path, f"a frame could not be written ({type(exc).__name__}: "
                                    f"{' '.join(str(exc).split())[:200]})", "a bad frame", err)
                continue
            progress.end()
            written, frames = written + 1, frames + len(episode.steps)
            print(f"episode {index}: {path.name}, {len(episode.steps)} frames at {episode.fps} fps, "
                  f"ended {episode.reason}, tasks: {' | '.join(episode.tasks)}", file=out)
    finally:
        progress.end()
        target.close()
    return written, frames


def _size(n: float) -> str:
    """Bytes in the unit that reads best: 270 KiB, 12.5 MiB, 64 GiB."""
    for unit, shift in (("GiB", 30), ("MiB", 20)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.3g} {unit}"
    return f"{n / 1024:.3g} KiB"


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

