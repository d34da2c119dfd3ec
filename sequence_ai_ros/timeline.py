"""A run's timeline as a PNG: what the arm was commanded, when it held, and where chunks met.

`Timeline` is what the plot needs and nothing else, so it can be filled from any source: the demo
fills it from the topics it records live; a recording of the run can fill it just as well.

    plot_timeline(Timeline(control_hz=15.0, commands=[(t, [q1..q7, gripper]), ...], ...), path)

Held time is read from the commands themselves: a gap of more than 1.5 control periods between two
commands is time the arm held (an underrun, or the hold at the end); it is shaded. The lower panel
shows the largest joint step between consecutive commands, where a seam between two chunks shows as
a spike, with the moments chunks arrived.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Sequence, Tuple

__all__ = ["Timeline", "held_spans", "plot_timeline"]

# A gap between commands longer than this many periods is time the arm held.
HELD_GAP_PERIODS = 1.5


@dataclass
class Timeline:
    control_hz: float
    commands: List[Tuple[float, List[float]]] = field(default_factory=list)  # (seconds, joint values)
    chunk_times: List[float] = field(default_factory=list)  # when a chunk was installed, seconds
    switches: List[Tuple[float, str]] = field(default_factory=list)  # (seconds, new instruction)
    title: str = ""


def held_spans(times: Sequence[float], control_hz: float) -> List[Tuple[float, float]]:
    """(start, end) of every gap between consecutive commands longer than HELD_GAP_PERIODS periods;
    the arm held from one period after the last command to the next command."""
    period = 1.0 / control_hz
    return [(a + period, b) for a, b in zip(times, times[1:]) if b - a > HELD_GAP_PERIODS * period]


def plot_timeline(timeline: Timeline, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(11, 7), sharex=True, gridspec_kw={"height_ratios": [3, 1.4]})
    commands = timeline.commands
    times = [t for t, _ in commands]
    spans = held_spans(times, timeline.control_hz)
    for start, end in spans:
        for axis in (ax, bx):
            axis.axvspan(start, end, color="tab:red", alpha=0.12, lw=0)
    if commands:
        width = min(len(v) for _, v in commands)
        for j in range(width):
            ax.plot(times, [v[j] for _, v in commands], lw=1.2, label=f"joint {j + 1}" if j < 7 else "gripper")
        steps = [max(abs(x - y) for x, y in zip(a[:7], b[:7])) for (_, a), (_, b) in zip(commands, commands[1:])]
        bx.plot(times[1:], steps, ".", ms=3, color="black", label="largest joint step between commands")
    for t in timeline.chunk_times:
        bx.axvline(t, color="tab:blue", lw=0.8, alpha=0.6)
    for t, text in timeline.switches:
        for axis in (ax, bx):
            axis.axvline(t, color="crimson", ls="--", lw=1.5)
        ax.annotate(f"set_instruction: {text}", (t, ax.get_ylim()[1]), fontsize=8, color="crimson",
                    xytext=(4, -12), textcoords="offset points")
    held = sum(end - start for start, end in spans)
    total = (times[-1] - times[0]) if len(times) > 1 else 0.0
    bx.set_xlabel("seconds since the goal was sent (shaded: the arm held; blue lines: a chunk arrived)")
    bx.set_ylabel("step (rad)")
    ax.set_ylabel("command (rad; gripper m)")
    share = f" ({100 * held / total:.0f} %)" if total > 0 else ""
    ax.set_title(f"{timeline.title}\nheld {held:.1f} s of {total:.1f} s{share} in {len(spans)} stops", fontsize=10)
    ax.legend(loc="upper right", fontsize=7, ncol=4)
    bx.legend(loc="upper right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
