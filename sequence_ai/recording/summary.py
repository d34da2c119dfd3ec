"""What a recording says about its run, in numbers and in lines of text (`sequence-ai replay`)."""

from __future__ import annotations

import bisect
import datetime
import math
from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence, Tuple

from .reader import RunRecord

__all__ = ["VALUE_LIMIT", "RunSummary", "command_series", "in_range", "out_of_range", "summarize", "summary_lines"]

VALUE_LIMIT = 1e9  # no joint or action reads more (in any unit): a value beyond is a fault, not motion


@dataclass(frozen=True)
class RunSummary:
    start_ns: Optional[int]
    duration_s: float
    actions: int
    requests: int
    answers: int
    failed: int
    latencies_s: Tuple[float, ...]
    seams_s: Tuple[float, ...]  # seconds after the start at which a new chunk's first action played
    held: Tuple[Tuple[float, float, str], ...]  # (from s, to s, reason): to the next action, or the end
    instruction_changes: Tuple[Tuple[float, str], ...]
    # of the actions that carry them (a file from before has none): observation to act(), and past
    # the moment each row was computed for
    ages_s: Tuple[float, ...] = ()
    latenesses_s: Tuple[float, ...] = ()

    @property
    def held_s(self) -> float:
        return sum(end - begin for begin, end, _ in self.held)


def summarize(record: RunRecord) -> RunSummary:
    start = record.start_ns
    last = max([c.t_ns for c in record.commands] + [a.t_ns for a in record.answers] + [h[0] for h in record.holds]
               + ([record.outcome_ns] if record.outcome_ns else []) or [start or 0])

    def s(ns: int) -> float:
        return (ns - (start or 0)) / 1e9

    seams, previous = [], None
    for command in record.commands:
        if previous is not None and command.rid != previous:
            seams.append(s(command.t_ns))
        previous = command.rid
    command_times = sorted(c.t_ns for c in record.commands)
    held = []
    for t_ns, reason, _actions in record.holds:
        after = bisect.bisect_right(command_times, t_ns)  # the next action, if any
        held.append((s(t_ns), s(command_times[after] if after < len(command_times) else last), reason))
    answered = [a for a in record.answers if not a.error]
    return RunSummary(
        start_ns=start, duration_s=s(last) if start is not None else 0.0, actions=len(record.commands),
        requests=len(record.requests), answers=len(answered), failed=len(record.answers) - len(answered),
        latencies_s=tuple(a.latency_s for a in answered), seams_s=tuple(seams), held=tuple(held),
        instruction_changes=tuple((s(t), text) for t, text in record.instructions),
        ages_s=tuple(c.age_s for c in record.commands if c.age_s is not None),
        latenesses_s=tuple(c.lateness_s for c in record.commands if c.lateness_s is not None))


def _percentile(values: List[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def in_range(value: float) -> bool:
    return math.isfinite(value) and abs(value) <= VALUE_LIMIT


def command_series(record: RunRecord) -> Tuple[List[int], List[Sequence[float]], List[str]]:
    """What reached the robot, as (times ns, rows, names): the ROS node's published commands (joint
    units, holds included) when the file has them, else each action as handed to act()."""
    if record.arm_commands:
        published = record.arm_commands
        rows = [m.velocity if len(m.velocity) else m.position for m in published]
        return [m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec for m in published], rows, list(
            published[-1].name)
    names = list(record.run.joint_names) if record.run is not None else []
    return [c.t_ns for c in record.commands], [c.values for c in record.commands], names


def out_of_range(record: RunRecord) -> Tuple[int, Optional[Tuple[str, int, float]]]:
    """How many commanded values, request latencies and actions' ages and lateness are not finite
    or beyond ±VALUE_LIMIT (the plot leaves them out), and the first: (what, time ns, value)."""
    def values() -> Iterator[Tuple[str, int, float]]:
        times, rows, _ = command_series(record)
        for t_ns, row in zip(times, rows):
            yield from (("a command", t_ns, float(v)) for v in row)
        yield from (("a request latency", a.t_ns, float(a.latency_s)) for a in record.answers)
        for c in record.commands:
            yield from ((what, c.t_ns, value) for what, value in (("an action's age", c.age_s),
                                                                  ("an action's lateness", c.lateness_s))
                        if value is not None)

    count, first = 0, None
    for what, t_ns, value in values():
        if not in_range(value):
            count += 1
            first = first or (what, t_ns, value)
    return count, first


def summary_lines(record: RunRecord) -> List[str]:
    summary = summarize(record)
    if record.recording_error:
        state = f"the recording stopped writing early ({record.recording_error}); it holds the run up to then"
    elif record.complete:
        state = "complete"
    else:
        state = ("not finished by its writer (crash or kill?); read up to its last complete chunk"
                 + (f" ({record.damage})" if record.damage else ""))
    lines = [f"{record.path}: {state}"]
    run = record.run
    if run is not None:
        started = datetime.datetime.fromtimestamp(summary.start_ns / 1e9, tz=datetime.timezone.utc)
        hz = "" if math.isnan(run.control_hz) else f", {run.control_hz:g} Hz"
        lines.append(f"model {run.model}, episode {run.episode_id or '-'}{hz}, client {run.client_version}, "
                     f"started {started:%Y-%m-%d %H:%M:%S} UTC")
    lines.append(f"{summary.duration_s:.2f} s: {summary.actions} actions, {summary.answers} chunks from "
                 f"{summary.requests} requests" + (f" ({summary.failed} failed)" if summary.failed else ""))
    if summary.latencies_s:
        ms = [v * 1000.0 for v in summary.latencies_s]
        lines.append(f"request latency: p50 {_percentile(ms, 0.5):.0f} ms, p95 {_percentile(ms, 0.95):.0f} ms, "
                     f"max {max(ms):.0f} ms")
    for what, values in (("action age (observation to act())", summary.ages_s),
                         ("action lateness (act() past the moment its row was for)", summary.latenesses_s)):
        ms = [v * 1000.0 for v in values if in_range(v)]
        if ms:
            lines.append(f"{what}: p50 {_percentile(ms, 0.5):.0f} ms, max {max(ms):.0f} ms")
    if summary.held:
        reasons = sorted({reason for _, _, reason in summary.held})
        lines.append(f"held {summary.held_s:.2f} s over {len(summary.held)} holds ({', '.join(reasons)})")
    for t, text in summary.instruction_changes:
        lines.append(f"instruction at {t:.2f} s: {text!r}")
    wild, first = out_of_range(record)
    if first is not None:
        what, t_ns, value = first
        lines.append(f"{wild} values not finite or beyond ±{VALUE_LIMIT:g} (the first: {value:g}, {what} at "
                     f"{_seconds(t_ns, summary.start_ns):.2f} s)")
    dropped = _dropped(record)
    views = ", ".join(f"{view} {n}" for view, n in sorted(record.frame_counts.items()))
    lines.append(f"frames: {sum(record.frame_counts.values())} recorded" + (f" ({views})" if views else "")
                 + (f", {dropped} dropped" if dropped is not None else ""))
    outcome = record.outcome
    if outcome is None:
        lines.append("outcome: none in the file (the run did not end normally)")
    else:
        parts = [f"outcome: {outcome.reason}, {outcome.actions} actions over {outcome.chunks} chunks in "
                 f"{outcome.elapsed_s:.2f} s"]
        if outcome.underruns:
            parts.append(f"{outcome.underruns} underrun{'' if outcome.underruns == 1 else 's'} ({outcome.underrun_s:.2f} s)")
        if not math.isnan(outcome.max_seam_jump):
            parts.append(f"max seam jump {outcome.max_seam_jump:.4g}")
        if outcome.message:
            parts.append(outcome.message)
        lines.append(", ".join(parts))
    lines.append("topics:")
    lines.extend(f"  {topic:<50} {count:>6}  {schema}" for topic, (schema, count) in record.topics.items())
    return lines


def _dropped(record: RunRecord) -> Optional[int]:
    if record.outcome is not None:
        return int(record.outcome.frames_dropped)
    stats = record.metadata.get("sequence_ai.recording")
    return int(stats["frames_dropped"]) if stats and stats.get("frames_dropped", "").isdigit() else None


def _seconds(t_ns: int, start_ns: Optional[int]) -> float:
    return (t_ns - (start_ns or 0)) / 1e9
