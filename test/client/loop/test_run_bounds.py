"""run(), act() and set_instruction() refuse what could only fail, as InvalidArgument, before
anything is sent or moved: a max_seconds that is not finite or above MAX_RUN_SECONDS (a day;
1e308 overflowed act()'s action bound, 1e300 a wait's timeout), an instruction longer than the
worker takes (INSTRUCTION_LIMIT_CHARS, 4096: its /act contract answered 422 mid-run)."""

from __future__ import annotations

import math

import pytest
from _loop_robot import Robot, policy_for, run_kwargs

import sequence_ai
from sequence_ai import InvalidArgument

LONG = "x" * (sequence_ai.INSTRUCTION_LIMIT_CHARS + 1)


def test_bounds_are_a_day_and_the_workers_4096_characters():
    assert sequence_ai.MAX_RUN_SECONDS == 86400.0
    assert sequence_ai.INSTRUCTION_LIMIT_CHARS == 4096


def test_run_act_and_set_instruction_refuse_what_could_only_fail_before_anything_is_sent(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        refusals = {
            "run max_seconds=1e308": lambda: policy.run(**run_kwargs(robot), max_actions=5, max_seconds=1e308),
            "run max_seconds=inf": lambda: policy.run(**run_kwargs(robot), max_actions=5, max_seconds=math.inf),
            "run max_seconds=nan": lambda: policy.run(**run_kwargs(robot), max_actions=5, max_seconds=math.nan),
            "run a day and a second": lambda: policy.run(**run_kwargs(robot), max_actions=5, max_seconds=86401.0),
            "run instruction=4097 chars": lambda: policy.run(**run_kwargs(robot), max_actions=5, instruction=LONG),
            "act max_seconds=1e308": lambda: policy.act("pick", robot.observe, robot.act, max_seconds=1e308),
            "act max_seconds=1e300": lambda: policy.act("pick", robot.observe, robot.act, max_seconds=1e300),
            "act instruction=4097 chars": lambda: policy.act(LONG, robot.observe, robot.act, max_seconds=1.0),
            "set_instruction 4097 chars": lambda: policy.set_instruction(LONG),
        }
        for case, refused in refusals.items():
            with pytest.raises(InvalidArgument) as raised:
                refused()
            assert "max_seconds must be a number > 0 and at most 86400" in str(raised.value) or \
                "instruction is 4097 characters; the worker takes at most 4096" in str(raised.value), case
        assert platform.requests() == [] and robot.actions == [] and robot.holds == 0
        assert policy.instruction is None  # the refused sentences were never put in force

        # Exactly at the bounds: the worker takes the sentence, the run goes.
        out = policy.run(**run_kwargs(robot), max_actions=3, max_seconds=86400.0,
                         instruction="x" * sequence_ai.INSTRUCTION_LIMIT_CHARS)
    assert out.reason == "completed" and out.actions == 3
