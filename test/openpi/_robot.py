"""A kinematic DROID arm for the openpi tests: it reads back what it was told, with frames built for the card's row."""

from __future__ import annotations

import threading
from typing import List

import numpy as np

import sequence_ai
from sequence_ai.types import ImageFrame, Observation, Proprioception

START = [0.0, -0.5, 0.0, -2.0, 0.0, 1.5, 0.5]


class Arm:
    def __init__(self, policy: sequence_ai.Policy, instruction: str = "open the drawer"):
        row = policy.spec()
        frame = np.random.default_rng(0).integers(0, 255, (180, 320, 3), dtype=np.uint8)
        self.frames = [ImageFrame(view, sequence_ai.encode(frame, row)) for view in row.camera_views]
        self.joints = list(START)
        self.gripper = 0.0
        self.instruction = instruction
        self.commands: List[List[float]] = []
        self.lock = threading.Lock()

    def observe(self) -> Observation:
        with self.lock:
            return Observation(images=list(self.frames), instruction=self.instruction,
                               proprioception=Proprioception(joint_positions=list(self.joints), gripper=[self.gripper]))

    def act(self, action: List[float]) -> None:
        with self.lock:
            self.commands.append(list(action))
            self.gripper = float(action[7])
