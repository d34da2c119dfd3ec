"""The optional e-stop input: a latched `std_msgs/Bool` topic (parameter `estop_topic`), tracked
per publisher (estop/sources.py says what engages it and what releases what).

Engaged, it stops the running goal within one control period (hold, outcome `estop`, the goal
aborted with STATUS_ESTOP) and refuses every goal, naming why. The subscription is RELIABLE and
TRANSIENT_LOCAL, so a node that starts while a publisher presses still sees that press, and its
history is KEEP_ALL: a press from one publisher is never pushed out of the queue by a burst of
`false` from another. Each wake-up takes every sample queued (estop/take.py) and acts on each
publisher's newest value, so a press waits behind no other traffic; a publisher that said `true`
within the take presses first (the running goal stops), even if its newest value is `false`.
The ROS graph is read every GRAPH_POLL_S to learn which publishers are
there and which went away (a SIGKILLed one disappears when its DDS participant's lease runs out:
Fast DDS's default is 20 s). `~/release_estop` (std_srvs/Trigger) is the explicit release.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Dict, List, Optional, Set, Tuple

from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_srvs.srv import Trigger

try:
    from rclpy.event_handler import SubscriptionEventCallbacks
except ImportError:  # Humble
    from rclpy.qos_event import SubscriptionEventCallbacks

from .sources import EStopSources, Source
from .status import estop_status
from .take import GID_BYTES, EStopInput, Sample

__all__ = ["EStop"]

GRAPH_POLL_S = 0.25  # how often the graph is read (and the heartbeat checked, if it is not faster)
# Latched like every TRANSIENT_LOCAL topic of the node, but every sample kept until taken.
ESTOP_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL)


class EStop:
    """The e-stop on `estop_topic`: while engaged it stops the running goal (`on_engaged`) and
    refuses goals (`goal_refusal`); `~/release_estop` is its explicit release. Its subscription and
    the graph poll live on `input_node` when given: a node spun by an executor of its own (the
    policy node's `_estop` companion), so a take waits behind no other callback and a flood's
    wake-ups cost only the few entities of that node's wait set."""

    def __init__(self, node, topic: str, *, start_engaged: bool, heartbeat_s: float,
                 on_engaged: Callable[[], None], input_node=None, callback_group=None):
        self.topic = node.resolve_topic_name(topic)  # the node's remaps applied; absolute for input_node
        self._node = input_node or node
        callback_group = callback_group or self._node.default_callback_group  # a Waitable needs one
        self._logger = node.get_logger()
        self._on_engaged = on_engaged
        self._heartbeat_s = heartbeat_s
        self.sources = EStopSources(start_engaged=start_engaged, heartbeat_s=heartbeat_s, now_s=time.monotonic)
        self._lock = threading.Lock()  # one transition logged at a time, in order
        self._was_engaged = False
        self._warned: Set[Tuple[str, bytes]] = set()  # (what, gid): said once per publisher
        events = SubscriptionEventCallbacks(incompatible_qos=self._on_incompatible_qos)
        self._input = EStopInput(self._node, self.topic, ESTOP_QOS, self._on_samples, callback_group, events,
                                 self._on_broken)
        # A steady clock: the graph and a dead-man's heartbeat are wall-time matters, even under use_sim_time.
        period = min(GRAPH_POLL_S, heartbeat_s / 4) if heartbeat_s > 0 else GRAPH_POLL_S
        self._node.create_timer(period, self._poll, callback_group=callback_group,
                                clock=Clock(clock_type=ClockType.STEADY_TIME))
        node.create_service(Trigger, "~/release_estop", self._release, callback_group=ReentrantCallbackGroup())
        holds = self.sources.holds()  # no goal to stop yet: only say so
        self._was_engaged = bool(holds)
        if holds:
            self._logger.error(f"e-stop engaged on {self.topic}: {'; '.join(holds)}: goals are refused")

    @property
    def engaged(self) -> bool:
        return self.sources.engaged

    def goal_refusal(self) -> Optional[str]:
        """Why no goal may start now, or None when the e-stop is released (goal/acceptance.py asks)."""
        if not self.engaged:
            return None
        holds = self.sources.holds()
        return f"e-stop engaged on {self.topic}: {'; '.join(holds)}" if holds else f"e-stop engaged on {self.topic}"

    def status(self, node_name: str) -> DiagnosticStatus:
        return estop_status(name=node_name, topic=self.topic, holds=self.sources.holds(), sources=self.sources.sources(),
                            heartbeat_s=self._heartbeat_s, heartbeat_age_s=self.sources.heartbeat_age_s(),
                            now_s=time.monotonic())

    def destroy(self) -> None:
        self._input.destroy(self._node)

    # -- inputs ----------------------------------------------------------------------------------
    def _on_samples(self, samples: List[Sample]) -> None:
        """One take: every publisher that said `true` in it presses first (so a press released
        within the same take still stops the goal), then each takes its newest value."""
        by_gid: Dict[bytes, List[Sample]] = {}
        for sample in samples:
            by_gid.setdefault(sample.gid, []).append(sample)
        # A publisher whose newest value is false but that pressed within the take (an undecodable
        # message is a press too, and the one named first): its press, before its newest value.
        presses = [next((s for s in said if not s.decoded), None) or next(s for s in said if s.pressed)
                   for said in by_gid.values() if any(s.pressed for s in said) and not said[-1].pressed]
        for press in presses:
            self._heard(press)
        if presses:
            self._update()
        for said in by_gid.values():
            self._heard(said[-1], count=len(said))
        self._update()

    def _heard(self, sample: Sample, count: int = 0) -> None:
        source, before = self.sources.heard(sample.gid, sample.pressed, decoded=sample.decoded, count=count)
        if sample.pressed and before is not True:  # how long it waited (two processes' wall clocks)
            waited = f" (sent {(time.time_ns() - sample.sent_ns) / 1e6:.0f} ms before it was taken)" if sample.sent_ns else ""
            self._logger.error(f"e-stop pressed by {source.label} on {self.topic}{waited}")
        elif not sample.pressed and before is True:
            self._logger.warning(f"e-stop press of {source.label} released on {self.topic}")
        if not sample.decoded:
            self._warn_once("undecodable", sample.gid, f"a message on the e-stop topic {self.topic} from "
                            f"{source.label} could not be decoded: it counts as a press from that publisher "
                            f"(logged once per publisher)")
        if source.flooding:
            self._warn_once("flooding", sample.gid, f"{source.label} floods the e-stop topic {self.topic} at "
                            f"{source.rate_hz:.0f} messages/s; its values still count, /diagnostics shows its rate "
                            f"(logged once per publisher)")

    def _warn_once(self, what: str, gid: bytes, text: str) -> None:
        if (what, gid) in self._warned:
            return
        self._warned.add((what, gid))
        if what == "undecodable":
            self._logger.error(text)
        else:
            self._logger.warning(text)

    def _poll(self) -> None:
        listed = {}
        for info in self._node.get_publishers_info_by_topic(self.topic):
            name = f"{info.node_namespace.rstrip('/')}/{info.node_name}"
            qos = info.qos_profile
            connectable = (info.topic_type == "std_msgs/msg/Bool" and qos.reliability == ReliabilityPolicy.RELIABLE
                           and qos.durability == DurabilityPolicy.TRANSIENT_LOCAL)
            listed[bytes(info.endpoint_gid[:GID_BYTES])] = (name, connectable)
        for source in self.sources.listed(listed):
            self._log_gone(source)
        self._update()

    def _log_gone(self, source: Source) -> None:
        if source.pressed:
            self._logger.error(f"e-stop publisher {source.label} went away while pressing: the e-stop stays "
                               f"engaged until ~/release_estop")
        else:
            self._logger.warning(f"e-stop publisher {source.label} went away ({'silent' if source.pressed is None else 'released'})")

    def _release(self, request, response):
        response.success, response.message = self.sources.release()
        if response.success:  # rclpy refuses two severities from one call site, hence two calls
            self._logger.warning(f"~/release_estop: {response.message}")
        else:
            self._logger.error(f"~/release_estop: {response.message}")
        self._update()
        return response

    def _update(self) -> None:
        """Log a change of state, and stop any running goal while engaged."""
        holds: List[str] = self.sources.holds()
        with self._lock:
            was, self._was_engaged = self._was_engaged, bool(holds)
            if holds and not was:
                self._logger.error(f"e-stop engaged on {self.topic}: {'; '.join(holds)}: stopping and refusing goals")
            elif was and not holds:
                self._logger.warning(f"e-stop released on {self.topic}: goals are accepted again")
        if holds:
            self._on_engaged()

    def _on_incompatible_qos(self, event) -> None:
        self._logger.error(f"a publisher on the e-stop topic {self.topic} cannot connect: its QoS is not "
                           f"RELIABLE + TRANSIENT_LOCAL (latched); its value is unknown, so it holds the e-stop "
                           f"engaged until it goes away (/diagnostics names it)")

    def _on_broken(self, why: str) -> None:
        self._logger.error(f"the e-stop on {self.topic} cannot tell its publishers apart: {why}; every message "
                           f"counts as a press")
