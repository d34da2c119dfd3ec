"""`sim_robot` in its own process, configured by config/demo.yaml, under a namespace: what it
publishes, how it follows position commands, and that its cameras show what the arm did."""

from __future__ import annotations

import time

import numpy as np
import pytest
from eventually import wait_until
from ros_harness import HOME, JOINTS
from sim_watcher import SimWatcher, pixels
from std_msgs.msg import Float64MultiArray

from sequence_ai_ros.parameters import FRANKA_DQ_MAX
from sequence_ai_ros.tools.processes import NodeProcess, config_path

pytestmark = [pytest.mark.ros, pytest.mark.slow]

VIEWS = ("exterior_1", "wrist_left")
GRIPPER = "fr3_finger_joint1"
# Speed limits hold to within this factor: the simulator integrates on its monotonic clock and
# stamps with the ROS clock a moment later, so two stamps may be a little closer than the steps.
SPEED_SLACK = 1.25


def test_sim_robot_publishes_joint_states_and_16_9_cameras_follows_commands_and_renders_the_arm(ros, tmp_path):
    ns = "/sim_robot_test"
    with NodeProcess("sim_robot", params_files=[config_path("demo.yaml")], namespace=ns,
                     log_path=tmp_path / "sim_robot.log") as sim:
        watch = SimWatcher(ros.node, ns)
        started = time.monotonic()
        assert wait_until(lambda: (watch.latest() is not None and len(watch.frames) == len(VIEWS)) or not sim.running,
                        20.0), "sim_robot published no joint states or frames:\n" + sim.output()[-2000:]
        assert sim.running, sim.output()[-2000:]

        # Joint states: the 7 arm joints, then the gripper, at home with the gripper open.
        _, names, q = watch.latest()
        assert names == [*JOINTS, GRIPPER]
        assert q.shape == (8,) and np.allclose(q[:7], HOME) and q[7] == pytest.approx(0.04)

        # Cameras: every view, raw rgb8 at the 16:9 size demo.yaml asks for.
        before = {}
        for view in VIEWS:
            frame = watch.frame_after(view, started)
            assert (frame.width, frame.height) == (448, 252) and frame.width * 9 == frame.height * 16
            assert frame.encoding == "rgb8" and frame.step == frame.width * 3
            assert len(frame.data) == frame.step * frame.height
            assert frame.header.frame_id == view
            before[view] = pixels(frame)

        # A position target (and a closed gripper): the joints move toward it within the limits.
        target = np.array(HOME) + np.array([0.6, 0.4, 0.0, 0.5, 0.0, -0.3, 0.0])
        first = len(watch.states_since(0))
        sent = time.monotonic()

        def reached() -> bool:
            watch.commands.publish(Float64MultiArray(data=[*target.tolist(), 0.0]))  # again until it lands
            latest = watch.latest()
            return latest is not None and np.allclose(latest[2][:7], target, atol=1e-3) and latest[2][7] < 1e-3

        assert wait_until(reached, 5.0, poll_s=0.05), f"arm did not reach the target: {watch.latest()[2]}"
        took = time.monotonic() - sent
        # No faster than the Franka's speed limits: 0.6 rad at 2.175 rad/s takes 0.28 s (gripper 0.4 s).
        assert took >= 0.6 / FRANKA_DQ_MAX[0] * 0.9, f"reached the target in {took:.3f}s"
        # Between any two joint states this process received (best effort: some may be lost while
        # this busy process stalls), no joint moved faster than its limit, judged on the stamps.
        states = watch.states_since(first)
        assert len(states) >= 2
        dq_max = np.array(FRANKA_DQ_MAX)
        for (t0, _, q0), (t1, _, q1) in zip(states, states[1:]):
            allowed = dq_max * max(t1 - t0, 0.0) * SPEED_SLACK + dq_max * 0.05  # + one step of stamp skew
            assert np.all(np.abs(q1[:7] - q0[:7]) <= allowed), (t1 - t0, q1 - q0)

        # The scene shows the arm where it is now: every view differs from before the move.
        moved_at = time.monotonic()
        for view in VIEWS:
            after = pixels(watch.frame_after(view, moved_at))
            changed = np.any(after != before[view], axis=2).mean()
            assert changed > 0.01, f"{view}: only {changed:.2%} of the pixels changed after the arm moved"
        assert sim.running


def _mapped(pid: int, library: str) -> bool:
    """Whether the process has loaded a shared object whose path contains `library`."""
    try:
        with open(f"/proc/{pid}/maps") as maps:
            return library in maps.read()
    except OSError:
        return False


# The moments of start-up, each told by what the process has done (not by a delay, which lands
# elsewhere on a loaded machine): importing (numpy's compiled core is loaded: the executable's
# handler is in, the node's modules are being imported), building the node (rclpy's middleware
# library is loaded: rclpy.init and the node's entities), spinning (the node logged its start).
MOMENTS = {
    "importing": lambda process: _mapped(process.process.pid, "_multiarray_umath"),
    "building the node": lambda process: _mapped(process.process.pid, "librmw_fastrtps_cpp"),
    "spinning": lambda process: "sim arm:" in process.output(),
}


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_ctrl_c_at_any_moment_of_start_up_exits_cleanly(tmp_path, moment):
    """A demo launch whose policy node cannot start ends the simulated arm while it is still starting
    up: that must be a clean exit (status 0, no traceback), as launch's 'finished cleanly' expects.
    (Before the interpreter has run the executable's first line no handler of ours can be in, so
    the earliest moment is once the node's own imports have begun.)"""
    import signal

    process = NodeProcess("sim_robot", log_path=tmp_path / "sim_robot.log")
    assert wait_until(lambda: MOMENTS[moment](process) or not process.running, 60.0, poll_s=0.002), \
        f"the process never got to {moment}"
    assert process.running, process.output()[-2000:]
    process.process.send_signal(signal.SIGINT)
    assert process.process.wait(20.0) == 0, process.output()[-2000:]
    process.stop()
    assert "Traceback" not in process.output(), process.output()[-2000:]
