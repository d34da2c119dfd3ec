"""SimulatedArm(physics="mujoco"): a MuJoCo Panda under the kinematic arm's interface. Its joints
lag their commands, it holds where it is measured, and its cameras are MuJoCo's renders of it.
Skips, saying why, where the [physics] extra (or, for the cameras, libOSMesa) is missing."""

from __future__ import annotations

import pytest

from sequence_ai import InvalidArgument
from sequence_ai.sim import HOME, SimulatedArm
from sequence_ai.sim_physics import unavailable

NO_PHYSICS = unavailable()
NO_RENDER = unavailable(render=True)
needs_physics = pytest.mark.skipif(bool(NO_PHYSICS), reason=f"no physical arm here: {NO_PHYSICS}")


def test_an_unknown_physics_is_refused_by_name(platform):
    with pytest.raises(InvalidArgument, match="physics='bullet'"):
        SimulatedArm("pi05-droid", base_url=platform.base_url, physics="bullet")


@needs_physics
def test_the_measured_joints_lag_the_command_and_then_reach_it(platform):
    arm = SimulatedArm("pi05-droid", base_url=platform.base_url, physics="mujoco")
    arm.apply_action([0.6, 0, 0, 0, 0, 0, 0, 0.0])  # one period at 0.6 rad/s on joint 1
    commanded = HOME[0] + 0.6 * arm.period_s
    assert arm.commanded[0] == pytest.approx(commanded)
    # behind the command, yet moving toward it: a servo through inertia and damping
    assert HOME[0] < arm.positions[0] < commanded - 0.1 * (commanded - HOME[0])
    for _ in range(15):  # a second of holding still: the servo catches up
        arm.apply_action([0.0] * 8)
    assert arm.positions[0] == pytest.approx(commanded, abs=1e-3)
    assert arm.positions[1:] == pytest.approx(list(HOME[1:]), abs=1e-3)  # gravity-compensated: no droop


@needs_physics
def test_target_rows_are_commanded_at_the_speed_limit_and_followed_behind(platform):
    arm = SimulatedArm("cosmos3-edge-policy-droid", base_url=platform.base_url, physics="mujoco")
    target = list(HOME)
    target[3] = HOME[3] + 0.5
    measured = []
    for _ in range(20):
        arm.apply_action([*target, 0.0])
        measured.append(arm.positions[3])
    assert arm.commanded[3] == pytest.approx(target[3])
    steps = [b - a for a, b in zip([HOME[3], *measured], measured)]
    assert all(step >= -1e-4 for step in steps), steps  # toward the target, never back
    assert measured[-1] == pytest.approx(target[3], abs=0.02)


@needs_physics
def test_hold_stops_the_servos_where_the_arm_is_measured(platform):
    arm = SimulatedArm("pi05-droid", base_url=platform.base_url, physics="mujoco")
    for _ in range(3):
        arm.apply_action([1.0, 0, 0, 0, 0, 0, 0, 0.0])
    arm.hold()
    where = list(arm.positions)
    assert arm.commanded == where
    for _ in range(10):
        arm._step(arm.period_s)
    # still moving when held, it coasts a little against its servo, then stays
    assert arm.positions[0] == pytest.approx(where[0], abs=0.03)
    assert arm.positions[0] >= where[0] - 1e-4


@pytest.mark.skipif(bool(NO_RENDER), reason=f"no rendered cameras here: {NO_RENDER}")
def test_the_cameras_are_renders_of_the_arm_that_follow_it(platform):
    import numpy as np

    arm = SimulatedArm("pi05-droid", base_url=platform.base_url, physics="mujoco")
    before = np.asarray(arm._render("exterior_1"))
    assert before.shape == (180, 320, 3) and before.dtype == np.uint8
    assert before.std() > 10  # a scene, not a blank
    for _ in range(10):
        arm.apply_action([0.0, 0.8, 0, 0, 0, 0, 0, 0.0])
    after = np.asarray(arm._render("exterior_1"))
    assert np.abs(after.astype(int) - before).mean() > 1  # the arm moved in the picture
    observation = arm.read_observation()
    assert {frame.view for frame in observation.images} == set(arm.model.camera_views)
    assert observation.proprioception.joint_positions == pytest.approx(arm.positions)


@pytest.mark.skipif(bool(NO_RENDER), reason=f"no rendered cameras here: {NO_RENDER}")
def test_run_at_real_latency_moves_the_measured_joints_toward_the_goal_without_a_step_back(platform):
    import sequence_ai
    from sequence_ai.platform.policies import instruction_goal

    instruction = "pick up the red cube"
    arm = SimulatedArm("cosmos3-edge-policy-droid", base_url=platform.base_url, instruction=instruction,
                       physics="mujoco")
    measured = [list(arm.positions)]

    def act(row):
        arm.apply_action(row)
        measured.append(list(arm.positions))

    platform.fault("latency", ms=700, jitter=0.2)  # chunks land late, computed from a lagging arm
    with sequence_ai.connect("cosmos3-edge-policy-droid", api_key=platform.api_key,
                             base_url=platform.base_url) as policy:
        out = policy.run(observe=arm.read_observation, act=act, max_actions=45, validate=arm.is_safe,
                         hold=arm.hold, on_underrun=arm.hold_position, progress=False)
    assert out.actions == 45 and out.chunks >= 3, out  # seams crossed: chunks joined to a moving arm
    goal, start = instruction_goal(instruction), measured[0]
    heading = [(1.0 if g > s else -1.0) if abs(g - s) > 0.1 else 0.0 for g, s in zip(goal, start)]
    back = [(i, j, round(b[j] - a[j], 4)) for i, (a, b) in enumerate(zip(measured, measured[1:]))
            for j in range(7) if heading[j] * (b[j] - a[j]) < -0.010]
    assert back == [], f"the measured joints stepped back against their way to the goal: {back}"
    far = [j for j in range(7) if heading[j]]
    assert all(abs(goal[j] - measured[-1][j]) < abs(goal[j] - start[j]) - 0.05 for j in far), (start, measured[-1], goal)
