"""Joining an arriving chunk to the motion in progress (docs/CLIENT-LOOP.md "Stitching").

Row i of a chunk is the action for i periods after the observation it was computed from. When the
chunk can first play, `late` periods have already passed (actions executed since its observation,
plus any rows still buffered ahead of it). Above the open-loop window (pi05-droid: refills of
0.6-0.8 s, chunks of 0.533 s) `late` exceeds the window, so no row of it is "for now": every
choice plays rows computed from an older observation. The modes:

* ``continue`` (default): rows are taken from the moment being played (row `late`, or as late as
  the chunk allows while a full window remains) and applied as motion that continues from the last
  target, each step pulled part of the way (ANCHOR: at once toward a position ahead, slowly toward
  one behind) toward where the chunk itself puts the arm at that moment, and no joint is taken
  past where the chunk is heading to stop. Past its last row the chunk's position is its last step
  continued, shrinking at the ratio of its last two steps (`_Heading`). The arm never jumps or
  steps back, and an error carried by an old observation is corrected instead of integrated into
  an overshoot.
* ``align``: rows for moments already past are skipped (at least one is kept) and the rest played
  as they are: exact when `late` is below the window, nearly nothing to play above it.
* ``none``: the first window of rows as they are (the reference client): a prefetched absolute
  chunk steps the arm back by what was played while it was in flight.

Row kinds: absolute targets are rewritten; displacement rows (`joint_delta`, cumulative from the
observation's joints) keep their values and carry the `q_ref` that makes `q_ref + row` the
stitched target (a velocity controller reads the same rows as velocities, unchanged); rows of any
other space (velocities) are only time-aligned.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from operator import add, sub
from typing import List, Optional, Sequence

__all__ = ["ANCHOR", "ANCHOR_ROWS", "STITCH_MODES", "Action", "Join", "RowKind", "Stitcher", "blend_seam", "is_absolute_space",
           "seam_jump"]

STITCH_MODES = ("continue", "align", "none")
# How far a stitched step is pulled toward the chunk's own position for that moment. Measured in the
# closed loop (bench/bench_latency.py, bench/join_figure.py): 0 carries a stale observation's error
# forward as overshoot; 1 jumps toward a position the arm left long ago. Toward a position AHEAD
# (along the chunk's way: the arm trails what the chunk says, as on a moving goal) the pull grows in
# over the seam's first ANCHOR_ROWS rows, so the offset is gone before the next chunk; grown over a
# whole window it left a third of it, and the arm trailed a moving goal by that much more (RMS 0.145
# against 0.137 rad). Toward a position BEHIND (the arm already went further on an older plan) it
# grows over the whole window, as braking toward a stale position only slows the approach (settling
# at 0.8 s took 4.3-4.7 s that way, 4.7-4.8 s with the quick pull); `stop` keeps it from overshooting.
ANCHOR = 0.5
ANCHOR_ROWS = 3
_STEADY = 0.999  # a ratio of consecutive steps this close to 1: moving on, not slowing down
_ABSOLUTE_MARKERS = ("absolute", "position", "joint_pos")
_DISPLACEMENT_SPACES = ("joint_delta",)

Row = List[float]


class Action(list):
    """One row to play: the floats act() receives, plus where they came from."""

    __slots__ = ("chunk", "due_at", "instruction", "observed_at", "played_at", "q_ref", "rid", "row", "swap_since")

    def __init__(self, values: Sequence[float], row: int, q_ref: Optional[Row] = None):
        super().__init__(values)
        self.row = row  # index in its chunk's rows
        self.q_ref = q_ref  # displacement rows: target = q_ref + row (joints); else None
        self.rid: Optional[str] = None  # the request the chunk answered
        self.chunk = 0  # the chunk's number in its run
        self.observed_at: Optional[float] = None  # monotonic time of the chunk's observation
        self.swap_since: Optional[float] = None  # a new instruction went with this chunk's request
        self.instruction: Optional[str] = None  # the instruction in force its request carried
        self.due_at: Optional[float] = None  # the moment it was computed for: observed_at + row/hz
        self.played_at: Optional[float] = None  # when the loop handed it to act() (monotonic)

    @property
    def age_s(self) -> Optional[float]:
        """How old the observation behind it was when it played (None: not played, or unknown)."""
        if self.played_at is None or self.observed_at is None:
            return None
        return self.played_at - self.observed_at

    @property
    def lateness_s(self) -> Optional[float]:
        """How long after the moment it was computed for it played (0: on time)."""
        if self.played_at is None or self.due_at is None:
            return None
        return self.played_at - self.due_at

    def target(self, joints: int) -> Optional[Row]:
        """The joint target this row commands on a position controller, if one can be told."""
        if self.q_ref is not None:
            return [q + d for q, d in zip(self.q_ref, self[:joints])]
        return None


def is_absolute_space(action_space: Optional[str]) -> bool:
    """Rows are targets, not increments."""
    space = (action_space or "").lower()
    return any(marker in space for marker in _ABSOLUTE_MARKERS)


def seam_jump(last: Optional[Sequence[float]], first: Optional[Sequence[float]]) -> Optional[float]:
    """Largest per-dimension distance across the seam; None when there is nothing to compare."""
    if last is None or first is None or len(last) != len(first) or not len(first):
        return None
    return max(abs(float(a) - float(b)) for a, b in zip(first, last))


def blend_seam(rows: List[Row], last: Sequence[float], steps: int) -> List[Row]:
    """smooth_seam (docs/PROTOCOL.md §7.10): ramp the first `steps` rows linearly out of `last`:
    row_i ← (1−w)·last + w·row_i with w = (i+1)/(n+1). A width mismatch leaves the rows untouched."""
    n = min(steps, len(rows))
    if n <= 0 or any(len(row) != len(last) for row in rows[:n]):
        return rows
    blended = [list(row) for row in rows]
    for i in range(n):
        w = (i + 1) / (n + 1)
        blended[i] = [(1.0 - w) * float(a) + w * float(b) for a, b in zip(last, rows[i])]
    return blended


@dataclass(frozen=True)
class RowKind:
    """What a chunk's rows mean for stitching: targets, displacements or neither; and how many
    leading columns are joints (the rest, a gripper, are played as they are)."""

    absolute: bool
    displacement: bool
    joints: Optional[int]  # None: every column

    @classmethod
    def of(cls, action_space: Optional[str], layout: Optional[dict], width: int) -> RowKind:
        joints: Optional[int] = None
        if layout:
            j, g = int(layout.get("joint_positions", 0) or 0), int(layout.get("gripper", 0) or 0)
            if j and j + g == width:
                joints = j
        space = (action_space or "").lower()
        return cls(is_absolute_space(space), space in _DISPLACEMENT_SPACES, joints)


@dataclass
class Join:
    """A stitched chunk: the rows to buffer, and the raw row they start from (for max_seam_jump)."""

    rows: List[Action]
    raw_first: Row


class Stitcher:
    """Joins chunks for one run: `mode` (STITCH_MODES), the open-loop window, smooth_seam."""

    def __init__(self, mode: str, horizon: Optional[int], smooth_seam: int):
        self.mode = mode
        self.horizon = horizon
        self.smooth_seam = smooth_seam
        # A continued seam has no jump to ramp out of: a ramp there would stall the first rows
        # and then catch up with a step of up to twice the chunk's own (run() warns).
        self.ramps = smooth_seam > 0 and mode != "continue"

    def join(self, steps: Sequence[Sequence[float]], kind: RowKind, *, late: int, last: Optional[Action],
             q_obs: Optional[Sequence[float]], first_of_run: bool, window: Optional[int] = None) -> Join:
        """The rows of a chunk (all of them, `steps`) to play after `last` (None at a run's
        start), `late` periods after its observation, whose joints were `q_obs` (None if unknown)."""
        rows = [list(map(float, row)) for row in steps]
        n = min(self.horizon or window or len(rows), len(rows))
        joints = kind.joints if kind.joints is not None else (len(q_obs) if kind.displacement and q_obs else len(rows[0]))
        ref = list(q_obs[:joints]) if q_obs is not None and len(q_obs) >= joints else None
        if self.mode == "continue":
            start = max(0, min(late, len(rows) - n))
        elif self.mode == "align":
            start = min(max(0, late), n - 1)
        else:
            start = 0
        stop = start + n if self.mode == "continue" else n
        picked = range(start, stop)
        positions = _positions(rows, kind, joints, ref)
        targets: Optional[List[Row]] = None
        if positions is not None:
            targets = [positions[i] for i in picked]
            before = _target_of(last, kind, joints)
            if self.mode == "continue" and before is not None:
                targets = _continue(positions, before, picked, late, _start_of(positions, start, ref, kind))
            if self.ramps and kind.displacement and not first_of_run and before is not None:
                targets = blend_seam(targets, before, self.smooth_seam)  # ramps targets, never the rows
        out: List[Action] = []
        for k, i in enumerate(picked):
            if targets is not None and kind.displacement:
                out.append(Action(rows[i], i, list(map(sub, targets[k], rows[i][:joints]))))
            elif targets is not None and kind.absolute:
                out.append(Action(targets[k] + rows[i][joints:], i))
            else:
                out.append(Action(rows[i], i, ref if kind.displacement else None))
        if self.ramps and kind.absolute and not first_of_run and last is not None:
            # the reference's ramp: whole rows, out of the last action played (docs/PROTOCOL.md §7.10)
            blended = blend_seam([list(a) for a in out], list(last), self.smooth_seam)
            out = [Action(values, a.row, a.q_ref) for values, a in zip(blended, out)]
        return Join(out, rows[start])


def _positions(rows: List[Row], kind: RowKind, joints: int, ref: Optional[Row]) -> Optional[List[Row]]:
    """Where each row puts the joints, if its space says: targets as they are, displacements from
    the observation's joints; None for any other space or an unknown reference."""
    if kind.absolute:
        return [row[:joints] for row in rows]
    if kind.displacement and ref is not None:
        return [list(map(add, ref, row[:joints])) for row in rows]
    return None


def _target_of(last: Optional[Action], kind: RowKind, joints: int) -> Optional[Row]:
    """The joint target the last played row commanded, if it can be told."""
    if last is None:
        return None
    if kind.absolute:
        return [float(v) for v in last[:joints]] if len(last) >= joints else None
    if kind.displacement and isinstance(last, Action):  # a plain row (predict()) carries no q_ref
        return last.target(joints)
    return None


def _start_of(positions: List[Row], start: int, ref: Optional[Row], kind: RowKind) -> Row:
    """The position the chunk's first picked row moves from: the row before it, else the
    observation's joints, else (absolute rows, joints unknown) one step back from the first."""
    if start > 0:
        return positions[start - 1]
    if ref is not None and len(ref) == len(positions[0]):
        return ref
    if len(positions) > 1:
        return [2 * a - b for a, b in zip(positions[0], positions[1])]
    return positions[0]


def _continue(positions: List[Row], before: Row, picked: range, late: int, previous: Row) -> List[Row]:
    """Each picked row's step, applied from the last target, pulled toward the chunk's own
    position for the moment it plays, and never past where the chunk is heading.

    Joint by joint (no joint's path depends on another's): down each joint's column of rows, with
    what stays the same for the joint (its fastest step, its direction, its stop) looked up once."""
    n, total = len(picked), len(positions)
    ahead = _Heading(positions)
    fastest = _fastest_steps(positions, positions[picked[0]], previous)
    # the chunk's own position for the moment each picked row plays, and how far it pulls
    anchors = [positions[late + k] if late + k < total else ahead.position(late + k - total + 1) for k in range(n)]
    catch_up = [ANCHOR * min(1.0, (k + 1) / ANCHOR_ROWS) for k in range(n)]  # toward a position ahead
    ease = [ANCHOR * (k + 1) / n for k in range(n)]  # toward one behind
    start = picked[0]
    columns = []
    for c, q, f, d, stop, column, anchor in zip(before, previous, fastest, ahead.direction, ahead.stop,
                                                 zip(*positions), zip(*anchors)):
        out = []
        for p, w_ahead, w_behind, a in zip(column[start:start + n], catch_up, ease, anchor):
            m = c + (p - q)
            m = m + (w_ahead if (a - m) * d > 0 else w_behind) * (a - m)
            # the pull never makes a joint faster than the chunk itself ever moves it:
            # min(f, m - c), then max(-f, ·), as those builtins choose
            x = m - c
            x = x if x < f else f
            x = c + (x if x > -f else -f)
            if d:
                # the pull may slow a joint to a stop, never turn it back (returning is for a
                # chunk that saw it there)
                if (x - c) * d < 0:  # never against the chunk's direction of travel ...
                    x = c
                if stop is not None and (x - stop) * d > 0:  # ... nor past where it stops
                    x = c if (c - stop) * d > 0 else stop
            out.append(x)
            c, q = x, p
        columns.append(out)
    if not columns:  # no joint to move: as many (empty) targets as rows
        return [[] for _ in picked]
    return [list(row) for row in zip(*columns)]


def _fastest_steps(positions: List[Row], first: Row, previous: Row) -> Row:
    """Per joint, the largest step the chunk takes: between consecutive rows, and from `previous`
    (where its first picked row moves from) to that row, `first`. One max() down each joint's
    column, taking the steps in the order (and by the comparison) of max() row after row."""
    return [max(chain((f,), map(abs, map(sub, column[1:], column))))
            for f, column in zip(map(abs, map(sub, first, previous)), zip(*positions))]


class _Heading:
    """Where a chunk is heading past its last row, joint by joint: its last step, repeated with
    the ratio of its last two steps (1: moving steadily on; below 1: slowing toward a stop at
    `stop`; a reversal: stopped at its last row)."""

    def __init__(self, positions: List[Row]):
        self.last = positions[-1]
        if len(positions) < 3:
            self.step = [0.0] * len(self.last)
            self.ratio = [0.0] * len(self.last)
        else:
            self.step = [a - b for a, b in zip(positions[-1], positions[-2])]
            before = [a - b for a, b in zip(positions[-2], positions[-3])]
            self.ratio = [min(1.0, v / u) if u != 0 and v * u > 0 else 0.0 for v, u in zip(self.step, before)]
        self.stop = [p + v * r / (1.0 - r) if r < _STEADY else None
                     for p, v, r in zip(self.last, self.step, self.ratio)]
        self.direction = [(a > b) - (a < b) for a, b in zip(positions[-1], positions[0])]

    def position(self, m: int) -> Row:
        """Where the chunk would be `m` rows past its last one."""
        out = []
        for p, v, r in zip(self.last, self.step, self.ratio):
            out.append(p + v * m if r >= _STEADY else p + v * r * (1.0 - r ** m) / (1.0 - r))
        return out
