"""~/set_instruction and ~/interrupt: both act on the goal being driven; with none they refuse
and change nothing (a goal carries its own instruction, and a stop with no run has nothing to stop).

A change goes straight to the client's `set_instruction`, whose latch holds the instruction in
force. One asked for before the run's first observation waits on the run (`change_before_start`)
until that observation: until then the client has yet to put the goal's own instruction in force
(run(instruction=)), which would replace it.
"""

from __future__ import annotations

from typing import Any, Callable

import sequence_ai

from .slot import GoalRun, GoalSlot

__all__ = ["NO_RUN", "GoalServices"]

NO_RUN = "no run in progress: nothing changed (a goal carries its own instruction)"


class GoalServices:
    """The ~/set_instruction and ~/interrupt callbacks, acting on the goal in the slot."""

    def __init__(self, goals: GoalSlot, policy: Any, publish_instruction: Callable[[str], None],
                 log: Callable[[str], None]):
        self.goals, self.policy = goals, policy
        self._publish_instruction = publish_instruction  # the latched ~/instruction
        self._log = log  # the node's logger (INFO): when a stop was asked, by the node's clock

    def set_instruction(self, request: Any, response: Any) -> Any:
        text = request.instruction
        response.accepted = False
        self._log("instruction change requested (~/set_instruction)")
        with self.goals.locked() as run:  # not while the run's first observation takes its instruction
            if run is None:
                response.previous, response.message = self.policy.instruction or "", NO_RUN
                return response
            response.previous = (self.policy.instruction if run.started
                                 else run.change_before_start or run.goal_instruction) or ""
            if not text.strip():
                response.message = "instruction is empty; the instruction in force is unchanged"
                return response
            if len(text) > sequence_ai.INSTRUCTION_LIMIT_CHARS:  # the client refuses it too
                response.message = (f"instruction is {len(text)} characters; the model's worker takes at most "
                                    f"{sequence_ai.INSTRUCTION_LIMIT_CHARS}; the instruction in force is unchanged")
                return response
            response.accepted = True
            if text == response.previous:
                response.message = "same instruction, ignored"
                return response
            if run.started:
                self.policy.set_instruction(text)
            else:
                run.change_before_start = text
        self._publish_instruction(text)
        return response

    def first_observation(self, run: GoalRun) -> None:
        """The run takes its first observation: run() has put the goal's instruction in force, so a
        change asked for before goes to the client now, and with the first request."""
        with self.goals.locked():  # not while a ~/set_instruction decides where its change goes
            run.started = True
            change, run.change_before_start = run.change_before_start, None
            if change is not None:
                self.policy.set_instruction(change)

    def interrupt(self, request: Any, response: Any) -> Any:
        run = self.goals.driving
        if run is None:
            response.success, response.message = False, "no run in progress: nothing to interrupt"
            return response
        self._log("stop requested: interrupted (~/interrupt)")
        run.stop("interrupted")
        response.success, response.message = True, "interrupted; the arm stops within one control period and holds"
        return response
