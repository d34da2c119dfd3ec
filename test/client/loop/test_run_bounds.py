"""run(), act() and set_instruction() refuse what could only fail, as InvalidArgument, before
anything is sent or moved: a max_seconds that is not finite or above MAX_RUN_SECONDS (a day;
1e308 overflowed act()'s action bound, 1e300 a wait's timeout), an instruction longer than the
worker takes (INSTRUCTION_LIMIT_CHARS, 4096: its /act contract answered 422 mid-run), and every
other number run() and act() take outside its stated range (_loop/_settings.py): request_budget
5e-324 overflowed 1/budget, control_hz 1e-300 a wait, 10**400 actions any float."""

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


# Every numeric argument of run(), each value outside its range: NaN, the infinities, the smallest
# float (1/x overflows), 10**400 (no float holds it), zero, negatives, a bool, a string.
HOSTILE = (math.nan, math.inf, -math.inf, 5e-324, 10**400, 0, -1, True, "1")
NUMBERS = {
    "max_actions": (*HOSTILE, 2**53 + 1, 1.5),
    "lookahead": (*HOSTILE, 101, 2.0),
    "open_loop_horizon": (*HOSTILE, 10_001, 2.0),
    "smooth_seam": (math.nan, 10**400, -1, True, "1", 10_001, 1.0),
    "max_seconds": tuple(v for v in HOSTILE if v != 5e-324),  # a run that times out at once: nothing divides by it
    "startup_timeout_s": (math.nan, math.inf, -math.inf, 10**400, -1e-9, True, "1", 86400.5),
    "control_hz": (*HOSTILE, 1e-300, 0.009, 10_001.0),
    "request_budget": (*HOSTILE, 1e-300, 1e-6, 1000.5),
}


def test_every_number_run_and_act_take_is_refused_outside_its_range_naming_it_before_anything_is_sent(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        for name, values in NUMBERS.items():
            for value in values:
                arguments = {"max_actions": 5, name: value}
                with pytest.raises(InvalidArgument, match=name) as raised:
                    policy.run(**run_kwargs(robot), **arguments)
                assert repr(value)[:20] in str(raised.value), (name, value, str(raised.value))
                # act(): max_seconds is its own, checked first (above); max_actions 0 means "bounded by
                # max_seconds only" there; the rest go on to run().
                if name != "max_seconds" and not (name == "max_actions" and value == 0 and value is not True):
                    with pytest.raises(InvalidArgument, match=name):
                        policy.act("pick", robot.observe, robot.act, max_seconds=1.0, validate=robot.validate,
                                   **{k: v for k, v in arguments.items() if k != "max_actions" or name == k})
        assert platform.requests() == [] and robot.actions == [] and robot.holds == 0

        # At the ends of each range the run goes (request_budget needs take_over: the default's).
        out = policy.run(**run_kwargs(robot), max_actions=3, lookahead=100, open_loop_horizon=10_000,
                         smooth_seam=10_000, stitch="align", startup_timeout_s=0, control_hz=10_000.0)
        assert out.reason == "completed" and out.actions == 3
        out = policy.run(**run_kwargs(robot), max_actions=3, request_budget=1000.0)
        assert out.reason == "completed" and out.actions == 3
