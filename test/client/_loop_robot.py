"""A pretend robot for the control-loop tests: two 224×224 JPEG views, 7 joints + gripper."""

from __future__ import annotations

import base64
import io
import threading
import time
from functools import cache
from typing import Any, List

from sequence_ai import ImageFrame, Observation, Proprioception, connect
from sequence_ai._policy import Policy

MODEL = "pi05-droid"
HZ = 15.0
PERIOD = 1.0 / HZ


@cache
def jpeg_224(shade: int = 90) -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (224, 224), (shade, 120, 200 - shade)).save(buffer, format="JPEG", quality=95)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def observation(instruction: str = "pick up the cup", views=("exterior_1", "wrist_left")) -> Observation:
    return Observation(
        images=[ImageFrame(view=v, data=jpeg_224()) for v in views],
        proprioception=Proprioception(joint_positions=[0.0] * 7, gripper=[0.0]),
        instruction=instruction,
    )


class Robot:
    """Records what the loop did to it; thread-safe counters."""

    def __init__(self, instruction: str = "pick up the cup", views=("exterior_1", "wrist_left")):
        self.instruction = instruction
        self.views = views
        self.actions: List[List[float]] = []
        self.act_times: List[float] = []
        self.observations: List[Observation] = []
        self.holds = 0
        self.hold_times: List[float] = []
        self.underruns: List[float] = []
        self.lock = threading.Lock()

    def observe(self) -> Observation:
        obs = observation(self.instruction, self.views)
        self.observations.append(obs)
        return obs

    def act(self, action: List[float]) -> None:
        with self.lock:
            self.actions.append(list(action))
            self.act_times.append(time.monotonic())

    def hold(self) -> None:
        with self.lock:
            self.holds += 1
            self.hold_times.append(time.monotonic())

    def validate(self, action: List[float]) -> bool:
        return True

    def on_underrun(self, wait_s: float) -> None:
        self.underruns.append(wait_s)


def policy_for(platform: Any, model: str = MODEL, **kwargs: Any) -> Policy:
    kwargs.setdefault("startup_timeout_s", 30.0)
    return connect(model, api_key=platform.api_key, base_url=platform.base_url, **kwargs)


def run_kwargs(robot: Robot, **overrides: Any) -> dict:
    kwargs = dict(observe=robot.observe, act=robot.act, validate=robot.validate, hold=robot.hold,
                  on_underrun=robot.on_underrun, progress=False)
    kwargs.update(overrides)
    return kwargs


def interrupt_after(policy: Policy, delay_s: float) -> threading.Timer:
    timer = threading.Timer(delay_s, policy.interrupt)
    timer.start()
    return timer
