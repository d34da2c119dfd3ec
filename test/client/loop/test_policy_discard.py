"""discard_buffer(): a new task does not play rows computed for the previous one."""

from __future__ import annotations

import pytest
from _loop_robot import Robot, observation, policy_for, run_kwargs

from sequence_ai import ChunkExhausted


def test_discard_buffer_drops_leftover_rows(platform):
    with policy_for(platform) as policy:
        policy.predict(observation())
        assert policy.buffered > 0
        policy.discard_buffer()
        assert policy.buffered == 0
        with pytest.raises(ChunkExhausted):
            policy.next_action()


def test_after_discard_a_run_starts_from_a_fresh_observation(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        policy.predict(observation())
        policy.discard_buffer()
        out = policy.run(**run_kwargs(robot), max_actions=3, prefetch=False)
    assert out.reason == "completed"
    assert len(robot.observations) == 1, "the first action came from a request of this run"
