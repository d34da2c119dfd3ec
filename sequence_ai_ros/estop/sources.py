"""Who holds the e-stop: the latest value of each publisher on the e-stop topic, kept apart.

The e-stop is engaged while any of these holds (docs/ROS.md "The e-stop"):

* a live publisher's latest value is `true` (it presses);
* a live publisher that can never be heard (its QoS is not RELIABLE + TRANSIENT_LOCAL, or its
  type is not std_msgs/Bool): its value is unknown, so it counts as pressing (a pendant set up
  wrong must not look released). One that can connect but has published nothing yet holds
  nothing: it has said nothing (a latched value arrives with discovery);
* a publisher went away while pressing (a killed pendant, a pulled cable): a *lost press*;
* the node has not been released since it started (`start_engaged`): a node that starts cannot
  know what it missed while it was down;
* heartbeat mode: no message from any publisher for `heartbeat_s`.

What releases what: a publisher's `false` releases its own press and nothing else. Lost presses
and the start latch are released only by `release()` (the node's `~/release_estop` service),
which is refused while a live publisher presses or cannot connect, a publisher the graph lists
has sent nothing yet (its latched value may be a press still on its way), or the heartbeat has
lapsed. A publisher that sends `false` over and over (a dashboard, a dead-man pendant) so never
releases a press it did not make; one that sends faster than FLOOD_HZ is reported as flooding
(its values count as any publisher's). A message that cannot be decoded counts as pressing, from
its publisher. Pure logic on a monotonic clock; estop/topic.py feeds it from ROS.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Tuple

__all__ = ["EStopSources", "Source"]

# A publisher heard but never listed by the graph is taken as gone once this long has passed since
# it was last heard (the graph normally lists a publisher before its first sample arrives).
UNLISTED_GRACE_S = 2.0
GONE_KEPT = 8  # gone publishers that press nothing, still shown in diagnostics
# A publisher sending more messages a second than this is reported as flooding (docs/ROS.md "The
# e-stop"): a dead-man pendant repeats at tens of Hz; a thousand a second is a loop gone wrong.
FLOOD_HZ = 100.0
RATE_WINDOW_S = 1.0  # its rate: messages counted over windows this long


@dataclass
class Source:
    """One publisher on the e-stop topic."""

    gid: bytes
    name: str  # its node, as the graph names it ("" until the graph lists it)
    pressed: Optional[bool] = None  # its latest value; None: not heard yet
    connectable: bool = True  # its QoS and type let its messages reach the node
    listed: bool = False  # the graph lists it now
    ever_listed: bool = False
    last_heard_s: Optional[float] = None
    gone_s: Optional[float] = None  # when it went away
    undecodable: int = 0  # messages from it that could not be decoded (each counted as pressing)
    garbled: bool = False  # its latest value came from a message that could not be decoded
    rate_hz: float = 0.0  # messages a second over its last whole RATE_WINDOW_S
    window_s: Optional[float] = None  # the current window began
    window_count: int = 0

    @property
    def flooding(self) -> bool:
        return self.rate_hz > FLOOD_HZ

    @property
    def label(self) -> str:
        return f"{self.name or 'a publisher'} (gid {self.gid.hex()})"

    @property
    def state(self) -> str:
        if self.gone_s is not None:
            return "gone while pressing: a lost press" if self.pressed else "gone"
        if self.pressed is None:
            return "silent" if self.connectable else "cannot connect: counts as pressing"
        state = "pressing" if self.pressed else "released"
        if self.garbled:
            state += " (a message that could not be decoded)"
        if self.flooding:
            state += f"; flooding: {self.rate_hz:.0f} messages/s (more than {FLOOD_HZ:g}/s)"
        return state


class EStopSources:
    """Every publisher on the e-stop topic and what it said, the start latch and the heartbeat:
    whether the e-stop is engaged, and what holds it."""

    def __init__(self, *, start_engaged: bool, heartbeat_s: float, now_s: Callable[[], float]):
        self._now_s = now_s
        self._heartbeat_s = heartbeat_s
        self._lock = threading.Lock()
        self._sources: Dict[bytes, Source] = {}
        self._start_latch = start_engaged
        self._started_s = now_s()
        self._last_message_s: Optional[float] = None

    # -- what happened ----------------------------------------------------------------------------
    def heard(self, gid: bytes, pressed: bool, *, decoded: bool = True, count: int = 0) -> Tuple[Source, Optional[bool]]:
        """The publisher `gid` said `pressed` (a message that could not be decoded: `decoded`
        False, pressed True), after `count` messages more from it counted towards its rate:
        (a copy of) its source and what it said before."""
        with self._lock:
            now = self._now_s()
            self._last_message_s = now
            source = self._sources.get(gid)
            if source is None:
                source = self._sources[gid] = Source(gid=gid, name="")
            before = source.pressed
            source.gone_s = None  # heard, so alive: its word replaces whatever it said before
            source.pressed = pressed
            source.garbled = not decoded
            source.undecodable += not decoded
            source.last_heard_s = now
            _count(source, count, now)
            return Source(**vars(source)), before

    def listed(self, publishers: Mapping[bytes, Tuple[str, bool]]) -> List[Source]:
        """The graph's publishers on the topic now (gid -> (node name, can connect)); returns
        those that went away."""
        gone = []
        with self._lock:
            now = self._now_s()
            for gid, (name, connectable) in publishers.items():
                source = self._sources.setdefault(gid, Source(gid=gid, name=name))
                source.name, source.connectable, source.listed, source.ever_listed = name, connectable, True, True
                source.gone_s = None  # listed again (a graph that flickered): alive, its value stands
            for source in self._sources.values():
                if source.gid in publishers or source.gone_s is not None:
                    continue
                source.listed = False
                unlisted_long = source.last_heard_s is None or now - source.last_heard_s > UNLISTED_GRACE_S
                if source.ever_listed or unlisted_long:
                    source.gone_s = now
                    gone.append(source)
            self._forget_old()
        return gone

    def release(self) -> Tuple[bool, str]:
        """The explicit release: lost presses and the start latch. (False, why) while something
        live still holds the e-stop; nothing is released then."""
        with self._lock:
            live = self._live_holds()
            live += [f"{s.label} has sent nothing since it appeared (its latched value may be a press on its way)"
                     for s in self._sources.values() if s.listed and s.connectable and s.pressed is None]
            if live:
                return False, "not released: " + "; ".join(live)
            lost = [s for s in self._sources.values() if s.gone_s is not None and s.pressed]
            released = [f"the lost press of {s.label}" for s in lost]
            if self._start_latch:
                released.append("the start latch")
            for source in lost:
                source.pressed = False
            self._start_latch = False
            self._forget_old()
        return True, ("released " + ", ".join(released)) if released else "the e-stop was not engaged"

    # -- what it means ----------------------------------------------------------------------------
    @property
    def engaged(self) -> bool:
        return bool(self.holds())

    def holds(self) -> List[str]:
        """Why the e-stop is engaged, one line per cause; empty when it is released."""
        with self._lock:
            holds = self._live_holds()
            holds += [f"{s.label} went away while pressing (call ~/release_estop once it is safe)"
                      for s in self._sources.values() if s.gone_s is not None and s.pressed]
            if self._start_latch:
                holds.append("not released since the node started (call ~/release_estop once it is safe)")
            return holds

    def sources(self) -> List[Source]:
        with self._lock:
            now = self._now_s()
            for source in self._sources.values():
                _count(source, 0, now)  # a publisher that stopped sending is not flooding any more
            return [Source(**vars(s)) for s in self._sources.values()]

    def heartbeat_age_s(self) -> Optional[float]:
        """Seconds since the last message from any publisher (None: none yet)."""
        with self._lock:
            return None if self._last_message_s is None else self._now_s() - self._last_message_s

    def _live_holds(self) -> List[str]:
        holds = []
        for source in self._sources.values():
            if source.gone_s is None and source.pressed is None and not source.connectable:
                holds.append(f"{source.label} cannot connect (not RELIABLE + TRANSIENT_LOCAL, or not std_msgs/Bool): "
                             f"its value is unknown")
            elif source.gone_s is None and source.pressed:
                holds.append(f"{source.label} presses it (publish false there to release it)")
        if self._heartbeat_s > 0:
            now = self._now_s()
            if self._last_message_s is None:
                waited = now - self._started_s
                holds.append(f"heartbeat: no e-stop message since the node started {waited:.1f} s ago")
            elif now - self._last_message_s > self._heartbeat_s:
                holds.append(f"heartbeat: no e-stop message for {now - self._last_message_s:.1f} s "
                             f"(estop_heartbeat_s {self._heartbeat_s:g})")
        return holds

    def _forget_old(self) -> None:
        """Keep the latest GONE_KEPT gone publishers that hold nothing (a dashboard restarted all day
        would otherwise grow the table without end); lost presses are never forgotten."""
        gone = sorted((s for s in self._sources.values() if s.gone_s is not None and not s.pressed),
                      key=lambda s: s.gone_s or 0.0)
        for source in gone[:-GONE_KEPT] if len(gone) > GONE_KEPT else []:
            del self._sources[source.gid]


def _count(source: Source, count: int, now: float) -> None:
    """Count `count` messages towards `source`'s rate; a window RATE_WINDOW_S long or more closes
    with its rate (a publisher silent for whole windows drops to the rate of the time since)."""
    if source.window_s is None:
        source.window_s, source.window_count = now, count
        return
    source.window_count += count
    elapsed = now - source.window_s
    if elapsed >= RATE_WINDOW_S:
        source.rate_hz = source.window_count / elapsed
        source.window_s, source.window_count = now, 0
