"""The latest sample of every input topic, with its age.

Observations are built from these caches only; a sample older than its threshold (or none at
all) raises `StaleInput`, which stops the run and holds instead of acting on old data. Ages are
measured on the node's clock, so `use_sim_time` works:

* a message whose `header.stamp` is set is as old as its stamp says (frozen data re-published
  with its old stamps goes stale); a stamp further ahead of the node's clock than the topic's
  max age is bad input (`BadInput`), not fresh;
* a zero stamp means the driver does not stamp its messages: such a message is as old as its
  arrival (the node cannot tell re-published old data from new then).

A sample may carry a `check` run on each message as it arrives (a joint state's names and values):
a message that fails it, or is stamped in the future, is bad input when read. `trusted()` is the
newest message that passed and was fresh when it arrived — what a hold may use when the newest
is the bad one. Camera samples may carry a `frame_rule` (images.FrameRule) that `image_of` asks
about every frame it converts.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .images import ImageConversionError, to_rgb

__all__ = ["BadInput", "JointReading", "LatestSample", "StaleInput", "joint_check", "read_joints"]


class StaleInput(Exception):
    """An input is missing or older than allowed; the message names the topic and its age."""


class BadInput(Exception):
    """An input message that cannot be used (unknown encoding, missing joints, NaN ...)."""


def header_stamp_s(message: Any) -> Optional[float]:
    """`header.stamp` in seconds, or None when the message has none or it is zero (unstamped)."""
    stamp = getattr(getattr(message, "header", None), "stamp", None)
    if stamp is None or (stamp.sec == 0 and stamp.nanosec == 0):
        return None
    return stamp.sec + stamp.nanosec * 1e-9


class LatestSample:
    """Holds the newest message of one topic and the time its age counts from (node clock, s)."""

    def __init__(self, topic: str, max_age_s: float, now_s: Callable[[], float],
                 check: Optional[Callable[[Any], Any]] = None, frame_rule: Any = None):
        self.topic = topic
        self.max_age_s = max_age_s
        self.check = check
        self.frame_rule = frame_rule
        self._now_s = now_s
        self._lock = threading.Lock()
        self._message: Any = None
        self._stamp_s: Optional[float] = None  # the header stamp, or the arrival when there is none
        self._stamped = False
        self._problem: Optional[str] = None  # why the newest message cannot be used
        self._trusted: Any = None
        self._trusted_stamp_s: Optional[float] = None
        self.received = 0

    def store(self, message: Any) -> None:
        now = self._now_s()
        stamp = header_stamp_s(message)
        since = now if stamp is None else stamp
        problem = None
        if stamp is not None and stamp - now > self.max_age_s:
            hint = " (the node clock reads 0: use_sim_time and no /clock yet?)" if now == 0 else ""
            problem = (f"{self.topic} is stamped {stamp - now:.3f}s ahead of this node's clock (at most "
                       f"{self.max_age_s:.3f}s ahead is taken): a driver on another clock?{hint}")
        elif self.check is not None:
            try:
                self.check(message)
            except BadInput as exc:
                problem = str(exc)
            except Exception as exc:  # on the inputs thread: a check that breaks leaves the message untrusted
                problem = f"{self.topic}: the message could not be checked ({type(exc).__name__}: {exc})"
        with self._lock:
            self._message, self._stamp_s, self._stamped, self._problem = message, since, stamp is not None, problem
            self.received += 1
            if problem is None and now - since <= self.max_age_s:
                self._trusted, self._trusted_stamp_s = message, since

    def latest(self) -> Any:
        """The newest message however old (None before the first)."""
        with self._lock:
            return self._message

    def problem(self) -> Optional[str]:
        """Why the newest message cannot be used (its check, a future stamp), or None."""
        with self._lock:
            return self._problem

    def age_s(self) -> Optional[float]:
        """How old the newest message is by its stamp (or arrival); negative if stamped ahead."""
        with self._lock:
            return None if self._stamp_s is None else self._now_s() - self._stamp_s

    def fresh(self) -> Any:
        """The newest message, or StaleInput if there is none or it is too old, or BadInput if it
        failed its check or is stamped in the future."""
        with self._lock:
            message, since, stamped, problem = self._message, self._stamp_s, self._stamped, self._problem
        if since is None:
            raise StaleInput(f"no message received on {self.topic}")
        if problem is not None:
            raise BadInput(problem)
        age = self._now_s() - since
        if age > self.max_age_s:
            what = "stamped" if stamped else "last message"
            raise StaleInput(f"{self.topic} is stale: {what} {age:.3f}s ago (limit {self.max_age_s:.3f}s)")
        return message

    def trusted(self) -> Any:
        """The newest message that passed its check and was fresh when it arrived, if it is still
        fresh; never one that failed. StaleInput when there is none."""
        with self._lock:
            message, since, problem = self._trusted, self._trusted_stamp_s, self._problem
        if since is None or self._now_s() - since > self.max_age_s:
            why = f" (the newest: {problem})" if problem else ""
            raise StaleInput(f"no trustworthy message on {self.topic} within {self.max_age_s:.3f}s{why}")
        return message


@dataclass(frozen=True)
class JointReading:
    """One joint state read in joint_names order, and the gripper joint's position if listed."""

    positions: Tuple[float, ...]
    gripper: Optional[float]


def read_joints(message: Any, joint_names: Sequence[str], gripper_joint: str) -> JointReading:
    """Joint positions in `joint_names` order (and the gripper joint), whatever order the
    message lists them in. Missing joints, non-finite positions and ambiguous names (a joint
    listed twice, or two names that differ only in case or surrounding spaces) raise BadInput."""
    names: List[str] = list(message.name)
    positions = list(message.position)
    if len(positions) != len(names):
        raise BadInput(f"joint_states has {len(names)} names but {len(positions)} positions")
    seen: Dict[str, int] = {}
    for i, name in enumerate(names):
        first = seen.setdefault(name.strip().casefold(), i)
        if first != i:
            other = names[first]
            twice = f"{name!r} twice" if other == name else f"both {other!r} and {name!r}"
            raise BadInput(f"joint_states lists {twice}: which position is the joint's is ambiguous")
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


def joint_check(joint_names: Sequence[str], gripper_joint: str) -> Callable[[Any], JointReading]:
    """A LatestSample check: the joint state must read (read_joints) with these names."""
    return lambda message: read_joints(message, joint_names, gripper_joint)


def image_of(sample: LatestSample, message: Any = None):
    """The sample's image (or `message` from it) as RGB, or StaleInput / BadInput naming the
    topic: a frame that does not convert, or one the sample's frame_rule refuses."""
    message = sample.fresh() if message is None else message
    try:
        rgb = to_rgb(message)
        problem = sample.frame_rule.problem(rgb) if sample.frame_rule is not None else None
    except ImageConversionError as exc:
        raise BadInput(f"{sample.topic}: {exc}") from None
    if problem is not None:
        raise BadInput(f"{sample.topic}: {problem}")
    return rgb


def input_problem(joint_states: LatestSample, cameras: Sequence[LatestSample], joint_names: Sequence[str],
                  gripper_joint: str) -> Optional[str]:
    """What is wrong with the newest joint state or camera frame — malformed, not merely old —
    read the way a run reads them; None when they are usable (or none arrived yet)."""
    for sample in (joint_states, *cameras):
        problem = sample.problem()
        if problem is not None:
            return problem
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
