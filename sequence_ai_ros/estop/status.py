"""The e-stop's /diagnostics status: engaged or released, and every publisher on its topic with what
it says."""

from __future__ import annotations

from typing import Optional, Sequence

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue

__all__ = ["estop_status"]


def estop_status(*, name: str, topic: str, holds: Sequence[str], sources: Sequence, heartbeat_s: float,
                 heartbeat_age_s: Optional[float], now_s: float) -> DiagnosticStatus:
    """ERROR while the e-stop is engaged (the message says why), else WARN while a publisher floods
    the topic, else OK. One value per publisher on the topic (sources.Source), gone ones included:
    `publisher <node> (gid <hex>)` → pressing / released / silent / cannot connect / gone ... N s ago,
    with its rate when it floods."""
    values = [KeyValue(key="topic", value=topic), KeyValue(key="engaged", value=str(bool(holds)))]
    if heartbeat_s > 0:
        age = "never" if heartbeat_age_s is None else f"{heartbeat_age_s:.3f}"
        values += [KeyValue(key="heartbeat_s", value=f"{heartbeat_s:g}"), KeyValue(key="last_message_age_s", value=age)]
    for source in sources:
        state = source.state if source.gone_s is None else f"{source.state} {now_s - source.gone_s:.0f} s ago"
        values.append(KeyValue(key=f"publisher {source.label}", value=state))
    values += [KeyValue(key=f"holds {i + 1}", value=hold) for i, hold in enumerate(holds)]
    flooding = [f"{s.label} floods it at {s.rate_hz:.0f} messages/s" for s in sources if s.gone_s is None and s.flooding]
    if holds:
        level, summary = DiagnosticStatus.ERROR, f"e-stop engaged on {topic}: {'; '.join(holds + flooding)}"
    else:
        live = len([s for s in sources if s.gone_s is None])
        level, summary = DiagnosticStatus.WARN if flooding else DiagnosticStatus.OK, \
            f"e-stop released ({live} publisher(s))" + "".join(f"; {f}" for f in flooding)
    return DiagnosticStatus(level=level, name=f"{name}: e-stop", message=summary, hardware_id=topic, values=values)
