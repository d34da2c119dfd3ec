"""~/set_instruction and ~/interrupt: both act on the goal being driven; with none they refuse
and change nothing (a goal carries its own instruction, and a stop with no run has nothing to stop)."""

from __future__ import annotations

from typing import Any, Callable

import sequence_ai

from .goal_run import GoalSlot

__all__ = ["NO_RUN", "GoalServices"]

NO_RUN = "no run in progress: nothing changed (a goal carries its own instruction)"


class GoalServices:
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
            response.previous = (self.policy.instruction if run.started else run.requested or run.instruction) or ""
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
                run.requested = text
        self._publish_instruction(text)
        return response

    def interrupt(self, request: Any, response: Any) -> Any:
        run = self.goals.driving
        if run is None:
            response.success, response.message = False, "no run in progress: nothing to interrupt"
            return response
        self._log("stop requested: interrupted (~/interrupt)")
        run.stop("interrupted")
        response.success, response.message = True, "interrupted; the arm stops within one control period and holds"
        return response
