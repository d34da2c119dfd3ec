"""Sending an Act goal without rclpy's goal/result response race.

rclpy's ActionClient registers the future of a goal (or result) request only after the request
is sent; on a multi-threaded executor another thread can take the response first and drop it
("Ignoring unexpected goal response"), and the planner waits forever. Sending from a callback of
the node's default, mutually exclusive callback group — the action client's own group — and
asking for the result from the goal response's own callback closes that window.
"""

from __future__ import annotations

import threading
from typing import Any, Optional

from sequence_ai_ros.action import Act


class GoalRun:
    def __init__(self, node: Any, planner: Any, instruction: str, max_seconds: float, max_actions: int = 0):
        assert planner.act.wait_for_server(timeout_sec=10.0), "no act action server"
        self.accepted: Optional[bool] = None
        self.response: Any = None  # the GetResult response: .status and .result
        self._done = threading.Event()
        goal = Act.Goal(instruction=instruction, max_seconds=float(max_seconds), max_actions=max_actions)

        def on_result(future: Any) -> None:
            self.response = future.result()
            self._done.set()

        def on_goal(future: Any) -> None:
            handle = future.result()
            self.accepted = bool(handle.accepted)
            if not handle.accepted:
                self._done.set()
                return
            handle.get_result_async().add_done_callback(on_result)

        def send() -> None:
            timer.cancel()
            planner.act.send_goal_async(goal).add_done_callback(on_goal)

        timer = node.create_timer(0.001, send)
        self._node, self._timer = node, timer

    def wait(self, timeout_s: float = 60.0) -> Any:
        finished = self._done.wait(timeout_s)
        self._node.destroy_timer(self._timer)  # fired once and cancelled itself
        assert finished, "no result in time"
        assert self.accepted, "the goal was not accepted"
        return self.response
