"""The last check before a command reaches the arm (sequence_ai_ros/control/safety.py)."""

from __future__ import annotations

import math

import pytest

from sequence_ai_ros.control.safety import CommandLimits, UnsafeCommand, check_command

pytestmark = pytest.mark.ros


LIMITS = CommandLimits(("j1", "j2"), (-1.0, -1.0), (1.0, 1.0), (2.0, 2.0), 0.2)


@pytest.mark.parametrize("joints,previous,interface,why", [
    ((0.0, math.nan), None, "position", "j2 command is nan"),
    ((0.0, 1.5), None, "position", "j2 target"),
    ((0.0, 0.1), (0.0, -0.1), "position", "j2 target jumps"),
    ((0.0, 2.5), None, "velocity", "j2 velocity"),
    ((0.0,), None, "position", "1 joint values"),
])
def test_unsafe_commands_are_refused_naming_the_joint(joints, previous, interface, why):
    with pytest.raises(UnsafeCommand, match=why):
        check_command(joints, interface, LIMITS, previous, period_s=1 / 15)


def test_safe_commands_pass():
    check_command((0.1, -0.1), "position", LIMITS, (0.05, -0.05), period_s=1 / 15)
    check_command((1.9, -1.9), "velocity", LIMITS, None, period_s=1 / 15)
