"""Node `sim_robot`: a kinematic 7-joint arm with a gripper, for the demo and the tests.

It obeys the same command topic types as a real controller (Float64MultiArray or
JointTrajectory; position or velocity), moves within Franka-like joint and speed limits,
publishes /joint_states, and renders one 16:9 camera image per model view showing the arm, so
what the policy sees reflects what the arm did.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from typing import List, Optional

import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from ..parameters import FRANKA_DQ_MAX, FRANKA_JOINTS, FRANKA_Q_MAX, FRANKA_Q_MIN
from ..spinning import Spinning

HOME = [0.0, -0.5, 0.0, -2.2, 0.0, 1.8, 0.8]
GRIPPER_OPEN, GRIPPER_CLOSED, GRIPPER_SPEED = 0.04, 0.0, 0.1
VELOCITY_COMMAND_TIMEOUT_S = 0.25


class SimRobot(Node):
    """The simulated arm's node: obeys commands within its limits, publishes joint states and images."""

    def __init__(self, **kwargs):
        super().__init__("sim_robot", **kwargs)
        p = self.declare_parameter
        self.command_topic = p("command_topic", "arm_controller/commands").value
        self.command_type = p("command_type", "float64_multi_array").value
        self.interface = p("command_interface", "position").value
        self.joint_names = list(p("joint_names", list(FRANKA_JOINTS)).value)
        self.gripper_joint = p("gripper_joint", "fr3_finger_joint1").value
        self.views = list(p("camera_views", ["exterior_1", "wrist_left"]).value)
        self.topics = list(p("camera_topics", ["cameras/exterior_1/image_raw", "cameras/wrist_left/image_raw"]).value)
        self.width = int(p("image_width", 640).value)
        self.height = int(p("image_height", 360).value)
        camera_hz = float(p("camera_hz", 15.0).value)
        joint_hz = float(p("joint_state_hz", 100.0).value)
        initial = list(p("initial_positions", list(HOME)).value)

        self._lock = threading.Lock()
        self.q = np.array(initial, dtype=float)
        self.target = self.q.copy()
        self.velocity = np.zeros(len(self.q))
        self.velocity_stamp = 0.0
        self.gripper = GRIPPER_OPEN
        self.gripper_target = GRIPPER_OPEN
        self.q_min, self.q_max = np.array(FRANKA_Q_MIN), np.array(FRANKA_Q_MAX)
        self.dq_max = np.array(FRANKA_DQ_MAX)
        self.commands = 0
        self._last_step = time.monotonic()

        command_type = JointTrajectory if self.command_type == "joint_trajectory" else Float64MultiArray
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.create_subscription(command_type, self.command_topic, self._on_command, reliable)
        self.joint_pub = self.create_publisher(JointState, "joint_states", qos_profile_sensor_data)
        self.image_pubs = [self.create_publisher(Image, t, qos_profile_sensor_data) for t in self.topics]
        self.create_timer(1.0 / joint_hz, self._step)
        self.create_timer(1.0 / camera_hz, self._publish_images)
        self.get_logger().info(
            f"sim arm: {self.interface} commands on {self.command_topic} ({self.command_type}), cameras {self.views}"
        )

    # -- commands -------------------------------------------------------------------------------
    def _on_command(self, msg) -> None:
        values: List[float]
        if isinstance(msg, JointTrajectory):
            if not msg.points:
                return
            point = msg.points[0]
            values = list(point.velocities if self.interface == "velocity" else point.positions)
        else:
            values = list(msg.data)
        n = len(self.joint_names)
        if len(values) < n or not all(math.isfinite(v) for v in values):
            self.get_logger().error(f"invalid command ignored: {values}")
            return
        with self._lock:
            self.commands += 1
            if self.interface == "velocity":
                self.velocity = np.clip(np.array(values[:n]), -self.dq_max, self.dq_max)
                self.velocity_stamp = time.monotonic()
            else:
                self.target = np.clip(np.array(values[:n]), self.q_min, self.q_max)
            if len(values) > n:
                self.gripper_target = min(GRIPPER_OPEN, max(GRIPPER_CLOSED, values[n]))

    # -- kinematics -----------------------------------------------------------------------------
    def _step(self) -> None:
        now = time.monotonic()
        dt = min(0.05, now - self._last_step)
        self._last_step = now
        with self._lock:
            if self.interface == "velocity":
                velocity = self.velocity if now - self.velocity_stamp < VELOCITY_COMMAND_TIMEOUT_S else 0.0
                self.q = np.clip(self.q + velocity * dt, self.q_min, self.q_max)
            else:
                step = np.clip(self.target - self.q, -self.dq_max * dt, self.dq_max * dt)
                self.q = self.q + step
            g_step = max(-GRIPPER_SPEED * dt, min(GRIPPER_SPEED * dt, self.gripper_target - self.gripper))
            self.gripper += g_step
            positions = [*self.q.tolist(), self.gripper]
        msg = JointState(name=[*self.joint_names, self.gripper_joint], position=positions)
        msg.header.stamp = self.get_clock().now().to_msg()
        self.joint_pub.publish(msg)

    # -- cameras --------------------------------------------------------------------------------
    def _publish_images(self) -> None:
        with self._lock:
            q, gripper = self.q.copy(), self.gripper
        stamp = self.get_clock().now().to_msg()
        for view, pub in zip(self.views, self.image_pubs):
            frame = render(view, q, gripper, self.width, self.height)
            msg = Image(height=self.height, width=self.width, encoding="rgb8", is_bigendian=0,
                        step=self.width * 3, data=frame.tobytes())
            msg.header.stamp = stamp
            msg.header.frame_id = view
            pub.publish(msg)


def render(view: str, q: np.ndarray, gripper: float, width: int, height: int) -> np.ndarray:
    """A simple scene: a table, a red cube, and the arm drawn from planar forward kinematics."""
    import cv2

    frame = np.empty((height, width, 3), dtype=np.uint8)
    frame[:] = (200, 205, 215)
    frame[int(height * 0.62):] = (120, 95, 70)  # table
    if view.startswith("wrist"):
        # The wrist camera looks along the hand: the scene slides and turns with the last joints.
        shift = int(width * 0.25 * math.sin(float(q[0]) + float(q[6])))
        cx, cy = width // 2 + shift, int(height * (0.55 + 0.2 * math.sin(float(q[3]) + 2.0)))
        size = int(height * (0.25 + 0.15 * math.cos(float(q[1]))))
        cv2.rectangle(frame, (cx - size, cy - size // 2), (cx + size, cy + size // 2), (210, 30, 30), -1)
        opening = int(width * 0.2 * gripper / GRIPPER_OPEN)
        cv2.rectangle(frame, (width // 2 - opening - 20, height - 60), (width // 2 - opening, height), (60, 60, 60), -1)
        cv2.rectangle(frame, (width // 2 + opening, height - 60), (width // 2 + opening + 20, height), (60, 60, 60), -1)
        return frame
    cv2.rectangle(frame, (int(width * 0.62), int(height * 0.52)), (int(width * 0.70), int(height * 0.62)), (210, 30, 30), -1)
    base = np.array([width * 0.3, height * 0.62])
    lengths = np.array([0.0, 0.33, 0.0, 0.32, 0.0, 0.09, 0.1]) * height * 0.9
    angle = -math.pi / 2
    points = [base.copy()]
    point = base.copy()
    for i in (1, 3, 5, 6):
        angle += float(q[i]) * (1 if i != 3 else -0.6)
        point = point + lengths[i] * np.array([math.cos(angle), math.sin(angle)]) + np.array([float(q[0]) * 8, 0])
        points.append(point.copy())
    for a, b in zip(points, points[1:]):
        cv2.line(frame, tuple(int(v) for v in a), tuple(int(v) for v in b), (40, 40, 45), 14, cv2.LINE_AA)
    tip = points[-1]
    spread = 4 + int(18 * gripper / GRIPPER_OPEN)
    for side in (-1, 1):
        cv2.line(frame, (int(tip[0]) + side * spread, int(tip[1])), (int(tip[0]) + side * spread, int(tip[1]) + 25),
                 (90, 90, 90), 6)
    return frame


def main(argv: Optional[list] = None) -> int:
    spun = Spinning(argv if argv is not None else sys.argv, stop_on_signals=True)  # Ctrl-C: a clean exit
    try:
        spun.spin([SimRobot(context=spun.context)])
        spun.wait()
    finally:
        spun.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
