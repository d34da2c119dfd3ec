"""The timeline plot of a recorded run (needs matplotlib): what `sequence-ai replay` and the demo draw.

Top: each joint command over time (as the ROS node published it, where the file has that; else
each action as handed to act()), with chunk seams (thin grey lines), held time (shaded) and
instruction changes (red dashed). Bottom: every request as a bar from when it was sent to when
its answer arrived, at the height of its latency; failed requests as red crosses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple, Union

from .reader import RunRecord
from .summary import RunSummary, summarize

__all__ = ["plot_timeline"]


def plot_timeline(record: RunRecord, path: Union[str, Path], *, title: Optional[str] = None) -> Path:
    """Write the timeline PNG of `record` to `path` and return the path."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError("the timeline plot needs matplotlib: pip install 'sequence-ai[replay]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = summarize(record)
    start = summary.start_ns or 0

    def s(ns: int) -> float:
        return (ns - start) / 1e9

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(11, 7), sharex=True, gridspec_kw={"height_ratios": [3, 1.3]})
    times, rows, names = _command_series(record, s)
    if rows:
        width = min(len(row) for row in rows)
        for j in range(width):
            label = names[j] if len(names) == width else (f"joint {j + 1}" if j < 7 else f"gripper {j - 6}")
            ax.plot(times, [row[j] for row in rows], lw=1.1, label=label, drawstyle="steps-post")
        ax.legend(loc="lower right", fontsize=7, ncol=4)
    for seam in summary.seams_s:
        ax.axvline(seam, color="0.6", lw=0.6, zorder=0)
    for begin, end, _reason in summary.held:
        ax.axvspan(begin, max(end, begin + 0.02), color="tab:orange", alpha=0.25, lw=0)
    for t, text in summary.instruction_changes:
        for axis in (ax, bx):
            axis.axvline(t, color="crimson", ls="--", lw=1.4)
        ax.annotate(f"instruction: {text}", (t, 1.0), xycoords=("data", "axes fraction"), fontsize=8,
                    color="crimson", xytext=(4, -12), textcoords="offset points")
    for answer in record.answers:
        sent, arrived = s(answer.sent_ns), s(answer.t_ns)
        if answer.error:
            bx.plot([arrived], [answer.latency_s * 1000.0], "x", color="tab:red", ms=7)
            continue
        latency_ms = answer.latency_s * 1000.0
        bx.plot([sent, arrived], [latency_ms, latency_ms], color="tab:blue", lw=2, solid_capstyle="butt")
        bx.plot([arrived], [latency_ms], "o", color="tab:blue", ms=3)
    for begin, _end, _reason in summary.held:
        bx.axvline(begin, color="tab:orange", lw=1.0)
    bx.set_ylabel("request latency (ms)\nsent → answered")
    bx.set_ylim(bottom=0)
    bx.set_xlabel("seconds since the run started (held: shaded, seams: grey)")
    ax.set_ylabel("command as published (joint units)" if record.arm_commands else "action as played")
    ax.set_title(title or _title(record, summary), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _command_series(record: RunRecord, s: Callable[[int], float]) -> Tuple[List[float], List[Sequence[float]], List[str]]:
    """What reached the robot: the ROS node's published commands (joint units, holds included)
    when the file has them, else each action as handed to act() (the model's rows)."""
    if record.arm_commands:
        published = record.arm_commands
        rows = [list(m.velocity) if len(m.velocity) else list(m.position) for m in published]
        return [s(m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec) for m in published], rows, list(
            published[-1].name)
    names = list(record.run.joint_names) if record.run is not None else []
    return [s(c.t_ns) for c in record.commands], [c.values for c in record.commands], names


def _title(record: RunRecord, summary: RunSummary) -> str:
    model = record.run.model if record.run is not None else "run"
    outcome = record.outcome
    head = (f"{model}: {len(record.commands)} actions (no outcome in the file)" if outcome is None else
            f"{model}: {outcome.actions} actions, {outcome.chunks} chunks, {outcome.underruns} underruns, "
            f"reason {outcome.reason}")
    share = f" ({100 * summary.held_s / summary.duration_s:.0f} %)" if summary.duration_s > 0 else ""
    return f"{head}\nheld {summary.held_s:.1f} s of {summary.duration_s:.1f} s{share}"
