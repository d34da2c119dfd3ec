"""How a prefetched chunk meets the motion in progress (stitch=): continued, aligned, or as it
comes (the reference, which steps the arm back)."""

from __future__ import annotations

import pytest
from _loop_robot import Robot, observation, policy_for, run_kwargs

from sequence_ai import Proprioception


class TrackingArm(Robot):
    """A stiff position-controlled arm driven by joint_delta rows: each row is added to the q_ref
    it carries (its chunk's observed joints, shifted by the stitch so the motion continues)."""

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
        self.q = [r + a for r, a in zip(action.q_ref, action[:7])]
        self.targets.append(self.q)


def largest_step(targets):
    return max(max(abs(a - b) for a, b in zip(p, q)) for p, q in zip(targets, targets[1:]))


def drive(platform, ms: int = 250, jitter: float = 0.0, **kwargs) -> TrackingArm:
    platform.fault("latency", ms=ms, jitter=jitter)
    arm = TrackingArm()
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(arm, on_chunk=arm.on_chunk), max_actions=40, **kwargs)
    assert out.reason == "completed" and out.chunks >= 4, out
    return arm


PER_STEP = 0.4 / 15  # the stand-in's speed limit, rad per control period


def test_on_chunk_hands_over_the_observation_the_chunk_was_computed_from(platform):
    arm = drive(platform, stitch="none")
    assert arm.chunk_refs[0] == [0.0] * 7
    assert any(ref != [0.0] * 7 for ref in arm.chunk_refs[1:]), "later chunks come from later observations"


def test_chunks_as_they_come_step_the_arm_back_at_every_seam(platform):
    unstitched = largest_step(drive(platform, stitch="none").targets)
    assert unstitched > 3 * PER_STEP, f"expected the raw seam to jump back several steps ({unstitched:.3f})"


def test_aligned_chunks_continue_the_motion_below_the_window(platform):
    aligned = largest_step(drive(platform, align_chunks=True).targets)
    assert aligned <= 2.5 * PER_STEP, f"aligned seams should be about one step ({aligned:.3f})"


@pytest.mark.parametrize("ms", [250, 700])
def test_stitched_chunks_never_jump_below_or_above_the_window(platform, ms):
    # 0.7 s ±20 % is pi05-droid's warm latency, longer than its 0.533 s window: no row of an
    # arriving chunk is for the present, and the default stitch still joins it without a jump.
    arm = drive(platform, ms=ms, jitter=0.2)
    assert largest_step(arm.targets) <= 1.6 * PER_STEP, f"largest step {largest_step(arm.targets):.3f}"
