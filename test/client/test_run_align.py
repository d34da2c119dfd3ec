"""align_chunks: a prefetched chunk starts at the present, not at the moment it was requested."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from _loop_robot import Robot, observation, policy_for, run_kwargs

from sequence_ai import Proprioception


class TrackingArm(Robot):
    """A stiff position-controlled arm driven by joint_delta rows: each row is added to the joint
    state of the observation its chunk was computed from (the chunk's q_ref)."""

    def __init__(self):
        super().__init__()
        self.q = [0.0] * 7
        self.q_ref = [0.0] * 7
        self.targets = []
        self.chunk_refs = []

    def observe(self):
        obs = observation(self.instruction)
        obs.proprioception = Proprioception(joint_positions=list(self.q), gripper=[0.0])
        return obs

    def on_chunk(self, chunk):
        self.q_ref = list(chunk.observation.proprioception.joint_positions)
        self.chunk_refs.append(self.q_ref)

    def act(self, action):
        super().act(action)
        self.q = [r + a for r, a in zip(self.q_ref, action[:7])]
        self.targets.append(self.q)


def largest_step(targets):
    return max(max(abs(a - b) for a, b in zip(p, q)) for p, q in zip(targets, targets[1:]))


def drive(platform, align: bool) -> TrackingArm:
    platform.fault("latency", ms=250)
    arm = TrackingArm()
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(arm, on_chunk=arm.on_chunk), max_actions=60, align_chunks=align)
    assert out.reason == "completed" and out.chunks >= 4, out
    return arm


def test_on_chunk_hands_over_the_observation_the_chunk_was_computed_from(platform):
    arm = drive(platform, align=False)
    assert arm.chunk_refs[0] == [0.0] * 7
    assert any(ref != [0.0] * 7 for ref in arm.chunk_refs[1:]), "later chunks come from later observations"


def test_aligned_chunks_continue_the_motion_where_unaligned_ones_jump_back(platform):
    per_step = 0.4 / 15  # the stand-in's speed limit, rad per control period
    unaligned = largest_step(drive(platform, align=False).targets)
    aligned = largest_step(drive(platform, align=True).targets)
    assert unaligned > 3 * per_step, f"expected the unaligned seam to jump back several steps ({unaligned:.3f})"
    assert aligned <= 2.5 * per_step, f"aligned seams should be about one step ({aligned:.3f})"
