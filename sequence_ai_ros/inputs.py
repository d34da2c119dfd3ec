"""The latest sample of every input topic, with its age.

Observations are built from these caches only; a sample older than its threshold (or none at
all) raises `StaleInput`, which stops the run and holds instead of acting on old data. Ages are
measured on the node's clock, so `use_sim_time` works.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .images import ImageConversionError, to_rgb

__all__ = ["BadInput", "JointReading", "LatestSample", "StaleInput", "read_joints"]


class StaleInput(Exception):
    """An input is missing or older than allowed; the message names the topic and its age."""


class BadInput(Exception):
    """An input message that cannot be used (unknown encoding, missing joints, NaN ...)."""


class LatestSample:
    """Holds the newest message of one topic and when it arrived (node clock, seconds)."""

    def __init__(self, topic: str, max_age_s: float, now_s: Callable[[], float]):
        self.topic = topic
        self.max_age_s = max_age_s
        self._now_s = now_s
        self._lock = threading.Lock()
        self._message: Any = None
        self._stamp_s: Optional[float] = None
        self.received = 0

    def store(self, message: Any) -> None:
        with self._lock:
            self._message = message
            self._stamp_s = self._now_s()
            self.received += 1

    def latest(self) -> Any:
        """The newest message however old (None before the first)."""
        with self._lock:
            return self._message

    def age_s(self) -> Optional[float]:
        with self._lock:
            return None if self._stamp_s is None else max(0.0, self._now_s() - self._stamp_s)

    def fresh(self) -> Any:
        """The newest message, or StaleInput if there is none or it is too old."""
        with self._lock:
            message, stamp = self._message, self._stamp_s
        if stamp is None:
            raise StaleInput(f"no message received on {self.topic}")
        age = self._now_s() - stamp
        if age > self.max_age_s:
            raise StaleInput(f"{self.topic} is stale: last message {age:.3f}s ago (limit {self.max_age_s:.3f}s)")
        return message


@dataclass(frozen=True)
class JointReading:
    positions: Tuple[float, ...]
    gripper: Optional[float]


def read_joints(message: Any, joint_names: Sequence[str], gripper_joint: str) -> JointReading:
    """Joint positions in `joint_names` order (and the gripper joint), whatever order the
    message lists them in. Missing joints or non-finite positions raise BadInput."""
    names: List[str] = list(message.name)
    positions = list(message.position)
    if len(positions) != len(names):
        raise BadInput(f"joint_states has {len(names)} names but {len(positions)} positions")
    index: Dict[str, int] = {name: i for i, name in enumerate(names)}
    missing = [name for name in joint_names if name not in index]
    if missing:
        raise BadInput(f"joint_states lacks {', '.join(missing)}")
    values = tuple(float(positions[index[name]]) for name in joint_names)
    for name, value in zip(joint_names, values):
        if not math.isfinite(value):
            raise BadInput(f"joint_states reports {name} = {value}")
    gripper = None
    if gripper_joint:
        if gripper_joint not in index:
            raise BadInput(f"joint_states lacks the gripper joint {gripper_joint}")
        gripper = float(positions[index[gripper_joint]])
        if not math.isfinite(gripper):
            raise BadInput(f"joint_states reports {gripper_joint} = {gripper}")
    return JointReading(values, gripper)


def image_of(sample: LatestSample, message: Any = None):
    """The sample's image (or `message` from it) as RGB, or StaleInput / BadInput naming the topic."""
    message = sample.fresh() if message is None else message
    try:
        return to_rgb(message)
    except ImageConversionError as exc:
        raise BadInput(f"{sample.topic}: {exc}") from None


def input_problem(joint_states: LatestSample, cameras: Sequence[LatestSample], joint_names: Sequence[str],
                  gripper_joint: str) -> Optional[str]:
    """What is wrong with the newest joint state or camera frame — malformed, not merely old —
    read the way a run reads them; None when they are usable (or none arrived yet)."""
    try:
        message = joint_states.latest()
        if message is not None:
            read_joints(message, joint_names, gripper_joint)
        for sample in cameras:
            message = sample.latest()
            if message is not None:
                image_of(sample, message)
    except BadInput as exc:
        return str(exc)
    return None
