"""The optional e-stop input: a latched `std_msgs/Bool` topic (parameter `estop_topic`).

`true` stops the running goal within one control period (hold, outcome `estop`, goal aborted with
STATUS_ESTOP) and refuses every goal until a `false` releases it. The subscription is RELIABLE and
TRANSIENT_LOCAL, so a node that starts after the e-stop was pressed still sees it; a publisher
that is not latched cannot connect, and the node logs an error naming the topic when one tries.
Before any message arrives the e-stop counts as released.
"""

from __future__ import annotations

from typing import Callable

from std_msgs.msg import Bool

try:
    from rclpy.event_handler import SubscriptionEventCallbacks
except ImportError:  # Humble
    from rclpy.qos_event import SubscriptionEventCallbacks

from .qos import LATCHED

__all__ = ["EStop"]


class EStop:
    def __init__(self, node, topic: str, on_engaged: Callable[[], None], callback_group=None):
        self.topic = node.resolve_topic_name(topic)
        self.engaged = False
        self._on_engaged = on_engaged
        self._logger = node.get_logger()
        events = SubscriptionEventCallbacks(incompatible_qos=self._on_incompatible_qos)
        node.create_subscription(Bool, topic, self._on_message, LATCHED, callback_group=callback_group,
                                 event_callbacks=events)

    def _on_message(self, message: Bool) -> None:
        if message.data:
            if not self.engaged:
                self._logger.error(f"e-stop engaged on {self.topic}: stopping and refusing goals until released")
            self.engaged = True  # before stopping: a goal claimed meanwhile sees it (node.py)
            self._on_engaged()
        elif self.engaged:
            self.engaged = False
            self._logger.warning(f"e-stop released on {self.topic}: goals are accepted again")

    def _on_incompatible_qos(self, event) -> None:
        self._logger.error(f"a publisher on the e-stop topic {self.topic} cannot connect: its QoS is not "
                           f"RELIABLE + TRANSIENT_LOCAL (latched); this node does not see that e-stop")
