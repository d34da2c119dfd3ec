"""The arm as the control loop sees it: observe, validate, act, hold.

`ArmLoop` supplies the four callables of `Policy.run()` for the node. Observations come from the
latest-sample caches (stale or bad input raises, which stops the run and holds); each row is
converted to a command and safety-checked in `validate` before `act` may publish it; `hold` puts
one hold command on the topic (position: where the arm is; velocity: zero). The arm also owns what
is commanded each control period (`tick`, as a controller's update()) and where its commands are
recorded (`record_to`).

How a chunk meets the motion in progress is the client's business (`stitch`, `smooth_seam`): a
displacement row arrives with the `q_ref` that makes `q_ref + row` its stitched target, so the node
converts each row on its own, whichever request it came from and however many are in flight.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import sequence_ai

from ..inputs.samples import BadInput, LatestSample, StaleInput, image_of, read_joints
from ..parameters import NodeConfig
from .commands import Command, CommandMapping, CommandPublisher
from .safety import CommandLimits, UnsafeCommand, check_command

__all__ = ["ArmLoop"]


class ArmLoop:
    """One arm driven by one run at a time: its commands checked, published, held and recorded."""

    def __init__(
        self,
        config: NodeConfig,
        model: sequence_ai.Model,
        mapping: CommandMapping,
        publisher: CommandPublisher,
        joint_states: LatestSample,
        cameras: Dict[str, LatestSample],
        period_s: Callable[[], float],
        log_warning: Callable[[str], None],
    ):
        self.config = config
        self.model = model
        self.mapping = mapping
        self.publisher = publisher
        self.joint_states = joint_states
        self.cameras = cameras
        self.period_s = period_s
        self._warn = log_warning
        self.limits = CommandLimits(
            config.joint_names, config.joint_position_min, config.joint_position_max,
            config.joint_velocity_max, config.max_step_rad,
        )
        self._lock = threading.Lock()
        # The row validate() passed and the command it checked for it: act() publishes that command
        # for that row only (the client calls validate(row), then act(row) with the same row).
        self._validated: Optional[Tuple[Sequence[float], Command]] = None
        self.last_command: Optional[Command] = None
        self._last_chunk: Optional[int] = None  # the chunk number of the last validated row
        self.unsafe_reason = ""
        self._published_this_tick = 0

    # -- per run -------------------------------------------------------------------------------
    def begin_run(self) -> None:
        with self._lock:
            self._validated = None
            self.last_command = None
            self._last_chunk = None
            self.unsafe_reason = ""

    def record_to(self, recorder: Any) -> None:
        """Tell `recorder` (a goal's sequence_ai.recording.Recorder) of every command and hold as
        published from now on; None: record nothing."""
        self.publisher.recorder = recorder

    # -- each control period ---------------------------------------------------------------------
    def tick(self, running: bool, command_waiting: bool) -> None:
        """The control period ends. Never coast: a velocity controller keeps the last command, so a
        period with nothing published while a run is active (the buffer is dry) gets an explicit
        zero, unless a command is ready and waits for this very tick (control/ticks.py) and follows
        at once."""
        stalled = self._published_this_tick == 0 and self.last_command is not None and not command_waiting
        if running and self.config.command_interface == "velocity" and stalled:
            command = self._hold_command()
            if command is not None:
                self.publisher.publish(command, self.period_s())
        self._published_this_tick = 0

    # -- the four callables ---------------------------------------------------------------------
    def observe(self) -> sequence_ai.Observation:
        reading = read_joints(self.joint_states.fresh(), self.config.joint_names, self.config.gripper_joint)
        images = {view: image_of(self.cameras[view]) for view in self.config.camera_views}
        gripper = None
        if reading.gripper is not None and self.model.state_layout and self.model.state_layout.get("gripper"):
            gripper = [self._normalised_gripper(reading.gripper)]
        # No instruction of the node's: the client puts the one in force on every request (the
        # goal's, from run(instruction=...), or a later ~/set_instruction).
        return sequence_ai.observation(self.model, images=images, joints=list(reading.positions), gripper=gripper,
                                       instruction="")

    def validate(self, row: Sequence[float]) -> bool:
        """Convert and check one row; False (the run stops, nothing published) if unsafe."""
        reading = read_joints(self.joint_states.fresh(), self.config.joint_names, self.config.gripper_joint)
        for sample in self.cameras.values():
            sample.fresh()  # a camera that stopped stops the run, even mid-chunk
        chunk = getattr(row, "chunk", None)
        try:
            command = self.mapping.command(row, getattr(row, "q_ref", None))
            previous = None
            if command.interface == "position":
                # Steps are measured from the target the arm is tracking: the last published one,
                # or where it is (first command, or a dry run that publishes nothing).
                # In a dry run the arm stays put, so a new chunk starts from where it really is.
                dry_seam = self.config.dry_run and chunk != self._last_chunk
                previous = self.last_command.joints if (self.last_command and not dry_seam) else reading.positions
            check_command(command.joints, command.interface, self.limits, previous, self.period_s())
        except (UnsafeCommand, ValueError) as exc:
            self.unsafe_reason = str(exc)
            self._warn(f"unsafe action refused, not published: {exc}")
            self._validated = None
            return False
        self._validated = (row, command)
        self._last_chunk = chunk
        return True

    def act(self, row: Sequence[float]) -> None:
        """Publish the command validate() checked for this very row."""
        validated, self._validated = self._validated, None
        if validated is None or validated[0] is not row:  # never publish a row that was not checked
            raise RuntimeError("act() called with a row validate() did not pass")
        command = validated[1]
        self.publisher.publish(command, self.period_s())
        self.last_command = command  # in a dry run: the last computed one
        self._published_this_tick += 1

    def hold(self) -> None:
        """Publish one hold command: position -> where the arm is, velocity -> zero."""
        command = self._hold_command()
        if command is None:
            self._warn("no joint state has ever been received: nothing to hold")
            return
        self.publisher.publish(command, self.period_s())

    def _hold_command(self) -> Optional[Command]:
        n = len(self.config.joint_names)
        if self.config.command_interface == "velocity":
            gripper = self.last_command.gripper if self.last_command else self._measured_gripper()
            return Command(tuple(0.0 for _ in range(n)), gripper, "velocity")
        try:  # never the newest sample if it is the bad one: the last trusted position
            reading = read_joints(self.joint_states.trusted(), self.config.joint_names, self.config.gripper_joint)
            joints = reading.positions
            gripper = reading.gripper if self.mapping.has_gripper else None
        except (StaleInput, BadInput):
            if self.last_command is None:
                return None
            joints, gripper = self.last_command.joints, self.last_command.gripper
        return Command(tuple(joints), gripper, "position")

    # -- helpers -------------------------------------------------------------------------------
    def _measured_gripper(self) -> Optional[float]:
        try:
            return read_joints(self.joint_states.trusted(), self.config.joint_names, self.config.gripper_joint).gripper
        except (StaleInput, BadInput):
            return None

    def _normalised_gripper(self, position: float) -> float:
        c = self.config
        value = (position - c.gripper_open_position) / (c.gripper_closed_position - c.gripper_open_position)
        return min(1.0, max(0.0, value))
