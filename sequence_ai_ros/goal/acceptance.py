"""Which goals the node takes (docs/ROS.md "How a goal runs", 2).

A goal the node cannot run is rejected in the goal callback, the standard answer (`ros2 action
send_goal` prints "Goal was rejected."): fields run() would refuse (goal/fields.py), the node
shutting down, the e-stop engaged, the model not ready, or another goal holding the slot
(busy_policy reject). Why goes out on the latched ~/goal_refused, for a planner to read after the
rejection, and to the log at WARN; nothing moves. The one refusal after acceptance is a
preempting goal whose running goal did not stop within PREEMPT_WAIT_S (`claim`). A cancel request
is always accepted: the goal's run stops now, or as it begins.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Tuple

from rclpy.action import CancelResponse, GoalResponse
from rclpy.node import Node
from std_msgs.msg import String

from ..qos import LATCHED
from .fields import goal_fields_problem
from .slot import GoalRun, GoalSlot

__all__ = ["PREEMPT_WAIT_S", "GoalAcceptance", "Refusal"]

# Why no goal may start now (None: nothing in the way): the node shutting down, the e-stop, the
# model's warm-up, asked in order before each goal.
Refusal = Callable[[], Optional[str]]

# How long a preempting goal waits for the running one to stop.
PREEMPT_WAIT_S = 5.0


class GoalAcceptance:
    """The action server's goal and cancel callbacks, and the claim of the slot that follows."""

    def __init__(self, node: Node, goals: GoalSlot, refusals: Sequence[Refusal]):
        self.goals, self._refusals = goals, tuple(refusals)
        self._log = node.get_logger()
        self._refused_pub = node.create_publisher(String, "~/goal_refused", LATCHED)

    def refusal(self, goal: Any) -> Optional[str]:
        """Why `goal` cannot run now (None: it can), the slot aside."""
        problem = goal_fields_problem(goal)  # what run() would refuse, refused before acceptance
        if problem is not None:
            return problem
        for refusal in self._refusals:
            why = refusal()
            if why is not None:
                return why
        return None

    def on_goal(self, goal: Any) -> GoalResponse:
        refusal = self.refusal(goal)
        if refusal is None and not self.goals.reserve():
            refusal = "busy: another goal is running (busy_policy: reject)"
        if refusal is None:
            return GoalResponse.ACCEPT
        self._log.warning(f"goal rejected: {refusal}")
        self._refused_pub.publish(String(data=refusal))
        return GoalResponse.REJECT

    def on_cancel(self, goal_handle: Any) -> CancelResponse:
        # Logged before the stop: the line's stamp is when the node took the request.
        self._log.info(f"stop requested: canceled (cancel of goal {bytes(goal_handle.goal_id.uuid).hex()})")
        self.goals.cancel(goal_handle)  # also a goal whose run has not begun yet
        return CancelResponse.ACCEPT

    def claim(self, goal_handle: Any, begin: Callable[[GoalRun], None]) -> Tuple[Optional[GoalRun], str]:
        """The accepted goal's run, begun (`begin`, GoalSlot.claim); or None and why: with busy_policy
        preempt, the running goal did not stop in time."""
        run = self.goals.claim(goal_handle, begin, PREEMPT_WAIT_S)
        if run is not None:
            return run, ""
        refusal = f"busy: the running goal did not stop within {PREEMPT_WAIT_S:g}s (busy_policy: preempt)"
        self._log.warning(f"goal refused: {refusal}")
        return None, refusal
