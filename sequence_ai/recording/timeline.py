"""The timeline plot of a recorded run (needs matplotlib): what `sequence-ai replay` and the demo draw.

Top: each joint command over time (as the ROS node published it, where the file has that; else
each action as handed to act()), with chunk seams (thin grey lines), held time (shaded) and
instruction changes (red dashed). Displacement rows (joint_delta) without the node's commands are
drawn as what they are, each chunk's displacements from the joint state it was computed from: one
line piece per chunk, broken at the seams and labelled so, never a sawtooth read as jerks. Joints
whose lines are identical draw as one line whose legend entry names them all. Middle: every
request as a bar from when it was sent to when its answer arrived, at the height of its latency;
failed requests as red crosses. Bottom: each action's age (its chunk's observation to act()) and
lateness (act() past the moment its row was computed for), where the file has them (a file written
before them: an empty panel that says so).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple, Union

from .reader import RunRecord
from .summary import RunSummary, command_series, in_range, summarize

__all__ = ["plot_timeline", "timeline_figure"]

MAX_SERIES = 64  # joint lines drawn (a wider command is a fault, not an arm)
MAX_LABELS = 20  # instruction changes annotated with their text (the rest: the line only)
DISPLACEMENT_SPACES = ("joint_delta",)  # rows relative to each chunk's reference pose (episode.py likewise)


def plot_timeline(record: RunRecord, path: Union[str, Path], *, title: Optional[str] = None) -> Path:
    """Write the timeline PNG of `record` to `path` and return the path. Values not finite or
    beyond ±VALUE_LIMIT are left out (a gap in their line); `summary.out_of_range` counts them.
    Everything is drawn as a few collections, so a file of many events draws in bounded time."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig = timeline_figure(record, title=title)
    import matplotlib.pyplot as plt

    try:
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)
    return path


def timeline_figure(record: RunRecord, *, title: Optional[str] = None) -> Any:
    """The timeline as a matplotlib Figure of three axes (commands, request latency, the actions'
    age and lateness), not yet written; the caller closes it (`matplotlib.pyplot.close`)."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError("the timeline plot needs matplotlib: pip install 'sequence-ai[replay]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection, PolyCollection

    summary = summarize(record)
    start = summary.start_ns or 0

    def s(ns: int) -> float:
        return (ns - start) / 1e9

    fig, (ax, bx, cx) = plt.subplots(3, 1, figsize=(11, 9), sharex=True,
                                     gridspec_kw={"height_ratios": [3, 1.3, 1.3]})
    times_ns, rows, names = command_series(record)
    times = [s(t) for t in times_ns]
    displacements = not record.arm_commands and _space(record) in DISPLACEMENT_SPACES
    if displacements:  # a gap (NaN) between chunks: each chunk's rows are from its own reference pose
        times, rows = _broken_at_seams(times, rows, [c.rid for c in record.commands])
    if rows:
        width = min(min(len(row) for row in rows), MAX_SERIES)
        labels = [names[j] if len(names) >= width else (f"joint {j + 1}" if j < 7 else f"gripper {j - 6}")
                  for j in range(width)]
        for same in _identical_columns(rows, width):
            ax.plot(times, [_drawable(row[same[0]]) for row in rows], lw=1.1, drawstyle="steps-post",
                    label=" = ".join(labels[j] for j in same) + (" (one line)" if len(same) > 1 else ""))
        if width:  # the displacements' note heads the legend, where the lines are named
            ax.legend(loc="lower right", fontsize=7, ncol=4, title_fontsize=7, title=(
                f"{_space(record)} rows: each chunk's displacements from the joint state it was computed from, "
                "not positions;\nthe breaks at the seams are a new reference, not motion") if displacements else None)
    across = ax.get_xaxis_transform()  # x in seconds, y from the bottom (0) to the top (1) of the axes
    ax.add_collection(LineCollection([[(t, 0), (t, 1)] for t in summary.seams_s], colors="0.6", linewidths=0.6,
                                     zorder=0, transform=across), autolim=False)
    ax.add_collection(PolyCollection([[(b, 0), (b, 1), (e, 1), (e, 0)] for b, e in _spans(summary)],
                                     facecolors="tab:orange", alpha=0.25, linewidths=0, transform=across),
                      autolim=False)
    changes = summary.instruction_changes
    for axis in (ax, bx, cx):
        axis.add_collection(LineCollection([[(t, 0), (t, 1)] for t, _ in changes], colors="crimson",
                                           linestyles="--", linewidths=1.4, transform=axis.get_xaxis_transform()),
                            autolim=False)
    for t, text in changes[:MAX_LABELS]:
        ax.annotate(f"instruction: {text[:80]}", (t, 1.0), xycoords=("data", "axes fraction"), fontsize=8,
                    color="crimson", xytext=(4, -12), textcoords="offset points")
    bars, arrived, failed = [], [], []
    for answer in record.answers:
        if not in_range(answer.latency_s):
            continue
        latency_ms = answer.latency_s * 1000.0
        if answer.error:
            failed.append((s(answer.t_ns), latency_ms))
        else:
            bars.append([(s(answer.sent_ns), latency_ms), (s(answer.t_ns), latency_ms)])
            arrived.append((s(answer.t_ns), latency_ms))
    bx.add_collection(LineCollection(bars, colors="tab:blue", linewidths=2, capstyle="butt"))
    _points(bx, arrived, "o", color="tab:blue", ms=3)
    _points(bx, failed, "x", color="tab:red", ms=7)
    bx.add_collection(LineCollection([[(b, 0), (b, 1)] for b, _ in _spans(summary)], colors="tab:orange",
                                     linewidths=1.0, transform=bx.get_xaxis_transform()), autolim=False)
    events = list(summary.seams_s) + [t for span in _spans(summary) for t in span] + [t for t, _ in changes]
    if events:  # the x axis spans every event, not only the commands
        ax.dataLim.update_from_data_x(events, ignore=False)
        ax.autoscale_view()
    bx.autoscale_view()
    bx.set_ylabel("request latency (ms)\nsent → answered")
    bx.set_ylim(bottom=0)
    _freshness(cx, record, s)
    cx.set_xlabel("seconds since the run started (held: shaded, seams: grey)")
    ax.set_ylabel("command as published (joint units)" if record.arm_commands else
                  "action as played: displacement\nfrom its chunk's reference pose" if displacements else
                  "action as played")
    ax.set_title(title or _title(record, summary), fontsize=10)
    fig.tight_layout()
    return fig


def _freshness(axis: Any, record: RunRecord, s: Any) -> None:
    """Each action's age and lateness (ms) at the time it was handed to act(), with the zero line:
    lateness below it is a row played before the moment it was computed for."""
    times = [s(c.t_ns) for c in record.commands]
    drawn = False
    for name, color, values in (("age: observation → act()", "tab:purple", [c.age_s for c in record.commands]),
                                ("lateness: act() − its row's moment", "tab:green",
                                 [c.lateness_s for c in record.commands])):
        if any(v is not None for v in values):
            axis.plot(times, [math.nan if v is None else _drawable(v * 1000.0) for v in values], lw=1.0,
                      marker=".", ms=2, color=color, label=name)
            drawn = True
    axis.axhline(0.0, color="0.5", lw=0.6)
    if drawn:
        axis.legend(loc="upper right", fontsize=7)
    else:
        axis.text(0.5, 0.5, "no action age or lateness in this file (none played, or recorded before they were)",
                  ha="center", va="center", transform=axis.transAxes, fontsize=8, color="0.4")
    axis.set_ylabel("action freshness (ms)")


def _space(record: RunRecord) -> str:
    return next((a.action_space for a in record.answers if a.action_space), "")


def _broken_at_seams(times: List[float], rows: List[Sequence[float]],
                     rids: List[str]) -> Tuple[List[float], List[Sequence[float]]]:
    """The series with a row of NaN (a gap in every line) where the next chunk's rows begin."""
    if not rows:
        return times, rows
    gap = [math.nan] * len(rows[0])
    out_times, out_rows = [times[0]], [rows[0]]
    for i in range(1, len(rows)):
        if rids[i] != rids[i - 1]:
            out_times.append(times[i])
            out_rows.append(gap)
        out_times.append(times[i])
        out_rows.append(rows[i])
    return out_times, out_rows


def _identical_columns(rows: List[Sequence[float]], width: int) -> List[List[int]]:
    """The columns 0..width-1 grouped by identical drawn values over the whole series (first-seen
    order). Each column is compared with each group's first, stopping at the first difference."""
    groups: List[List[int]] = []
    for j in range(width):
        for group in groups:
            k = group[0]
            if all(repr(_drawable(row[j])) == repr(_drawable(row[k])) for row in rows):  # NaN (a gap) equals NaN
                group.append(j)
                break
        else:
            groups.append([j])
    return groups


def _drawable(value: float) -> float:
    return float(value) if in_range(value) else math.nan  # NaN: matplotlib leaves a gap


def _spans(summary: RunSummary) -> List[Any]:
    """Each hold as (from s, to s), at least 0.02 s wide so a short one shows."""
    return [(begin, max(end, begin + 0.02)) for begin, end, _reason in summary.held]


def _points(axis: Any, points: Sequence[Any], marker: str, **style: Any) -> None:
    if points:
        axis.plot([x for x, _ in points], [y for _, y in points], marker, linestyle="none", **style)


def _title(record: RunRecord, summary: RunSummary) -> str:
    model = record.run.model if record.run is not None else "run"
    outcome = record.outcome
    head = (f"{model}: {len(record.commands)} actions (no outcome in the file)" if outcome is None else
            f"{model}: {outcome.actions} actions, {outcome.chunks} chunks, {outcome.underruns} underruns, "
            f"reason {outcome.reason}")
    share = f" ({100 * summary.held_s / summary.duration_s:.0f} %)" if summary.duration_s > 0 else ""
    return f"{head}\nheld {summary.held_s:.1f} s of {summary.duration_s:.1f} s{share}"
