"""The simulated arm seen from the test side: its stamped joint states, each view's latest frame,
and a publisher of commands to it (sim_robot, kinematic or physical)."""

from __future__ import annotations

import threading
import time

import numpy as np
from eventually import wait_until
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Float64MultiArray


class SimWatcher:
    """Joint states (with their stamps) and the latest frame of each view, from the test side."""

    def __init__(self, node, ns: str):
        self._lock = threading.Lock()
        self.states: list = []  # (stamp_s, names, positions)
        self.frames: dict = {}  # view -> (received monotonic, Image)
        node.create_subscription(JointState, f"{ns}/joint_states", self._on_state, qos_profile_sensor_data)
        for view in ("exterior_1", "wrist_left"):
            node.create_subscription(Image, f"{ns}/cameras/{view}/image_raw",
                                     lambda m, v=view: self._on_frame(v, m), qos_profile_sensor_data)
        self.commands = node.create_publisher(Float64MultiArray, f"{ns}/arm_controller/commands",
                                              QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))

    def _on_state(self, msg: JointState) -> None:
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        with self._lock:
            self.states.append((stamp, list(msg.name), np.array(msg.position)))

    def _on_frame(self, view: str, msg: Image) -> None:
        with self._lock:
            self.frames[view] = (time.monotonic(), msg)

    def latest(self):
        with self._lock:
            return self.states[-1] if self.states else None

    def states_since(self, index: int) -> list:
        with self._lock:
            return self.states[index:]

    def frame_after(self, view: str, t: float, timeout_s: float = 5.0) -> Image:
        assert wait_until(lambda: view in self.frames and self.frames[view][0] > t, timeout_s), f"no {view} frame"
        return self.frames[view][1]


def pixels(msg: Image) -> np.ndarray:
    return np.frombuffer(bytes(msg.data), dtype=np.uint8).reshape(msg.height, msg.width, 3).astype(int)
