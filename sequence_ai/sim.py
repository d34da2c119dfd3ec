"""A simulated 7-joint arm with a gripper and two or three cameras, for trying the client from
plain Python without a robot (no ROS): the kinematics of the ROS `sim_robot`, minus ROS.

    from sequence_ai.sim import SimulatedArm

    robot = SimulatedArm("pi05-droid", instruction="pick up the cup")
    with sequence_ai.connect(model="pi05-droid") as policy:
        out = policy.run(observe=robot.read_observation, act=robot.apply_action, max_actions=60,
                         validate=robot.is_safe, hold=robot.hold, on_underrun=robot.hold_position)

It reads the model's catalogue row (on first use, so `SEQUENCES_BASE_URL=mock` works) and
drives the rows the way that model's controller would: `joint_delta` rows are joint velocities
(rad/s, the DROID velocity interface), `joint_absolute` rows are joint targets; the last value is
the gripper (0 open … 1 closed, binarised as the catalogue says). Franka joint and speed limits;
time advances one control period per applied action, so a run is reproducible. Each view is a
drawing of the arm over a table and a red cube, 16:9, so what the model sees follows what the arm
did. Frames need the `[image]` extra (Pillow, numpy).

`SimulatedArm(..., physics="mujoco")` puts a physical arm under the same interface (the
`[physics]` extra; sequence_ai/sim_physics.py): each row sets the target the kinematic arm above
would reach, a MuJoCo Panda's position servos chase it through one control period of physics,
`positions` are the joints it measured (`commanded` the targets), and the cameras are MuJoCo's
renders of it. The default, `physics=None`, is the kinematic arm.
"""

from __future__ import annotations

import math
from typing import Any, List, Optional, Sequence, Union

from ._errors import InvalidArgument
from ._wire import Model, Observation

__all__ = ["SimulatedArm"]

HOME = (0.0, -0.5, 0.0, -2.2, 0.0, 1.8, 0.8)
# Franka Research 3 joint limits (rad) and speed limits (rad/s), from the datasheet.
Q_MIN = (-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973)
Q_MAX = (2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973)
DQ_MAX = (2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61)
GRIPPER_SPEED = 2.5  # full stroke per second, 0 open ... 1 closed
FRAME_SIZE = (320, 180)  # the DROID cameras' 16:9
VELOCITY_ROWS, TARGET_ROWS = ("joint_delta", "joint_velocity"), ("joint_absolute", "joint_position")
PHYSICS = (None, "kinematic", "mujoco")


def _clip(value: float, low: float, high: float) -> float:
    return min(high, max(low, value))


class SimulatedArm:
    """observe → `read_observation()`, act → `apply_action(row)`, plus `is_safe`, `hold`,
    `hold_position`. `positions`, `gripper`, `actions`, `holds` say what happened to it."""

    def __init__(self, model: Union[Model, str] = "pi05-droid", *, instruction: str = "pick up the cup",
                 base_url: Optional[str] = None, positions: Sequence[float] = HOME, physics: Optional[str] = None):
        if len(positions) != len(HOME):
            raise InvalidArgument(f"the simulated arm has {len(HOME)} joints (got {len(positions)} positions)")
        if physics not in PHYSICS:
            raise InvalidArgument(f"physics={physics!r}: the simulated arm is kinematic (None) or 'mujoco'")
        self.instruction = instruction
        self.positions: List[float] = [_clip(float(q), lo, hi) for q, lo, hi in zip(positions, Q_MIN, Q_MAX)]
        self.gripper = 0.0
        self.actions = 0
        self.holds = 0
        self.unsafe_reason = ""
        self._model, self._base_url = model, base_url
        self._row: Optional[Model] = None
        self._velocity = [0.0] * len(HOME)
        self._target = list(self.positions)
        self._gripper_target = 0.0
        self.commanded: List[float] = list(self.positions)  # what the joints are told (= positions without physics)
        self.physics: Any = None
        if physics == "mujoco":
            from .sim_physics import PandaPhysics, unavailable

            reason = unavailable()
            if reason:
                raise InvalidArgument(f"physics='mujoco': {reason}")
            self.physics = PandaPhysics(self.positions)

    # -- the model this arm is driven by ---------------------------------------------------
    @property
    def model(self) -> Model:
        if self._row is None:
            from ._catalogue._models import resolve_model

            row = resolve_model(self._model, endpoint="act", base_url=self._base_url)
            layout = row.state_layout or {}
            if (layout.get("joint_positions"), layout.get("gripper")) != (len(HOME), 1):
                raise InvalidArgument(f"the simulated arm has {len(HOME)} joints and one gripper; "
                                      f"{row.short_id} reads {layout or 'an undeclared state'}")
            if self._rows_of(row) not in VELOCITY_ROWS + TARGET_ROWS:
                raise InvalidArgument(f"the simulated arm takes joint_delta or joint_absolute rows; "
                                      f"{row.short_id} returns {self._rows_of(row)!r}")
            self._row = row
        return self._row

    @staticmethod
    def _rows_of(row: Model) -> str:
        return str((row.action_semantics or {}).get("rows") or row.action_space or "")

    @property
    def period_s(self) -> float:
        return 1.0 / float(self.model.control_hz or 15.0)

    # -- observe ---------------------------------------------------------------------------
    def read_observation(self) -> Observation:
        """Every camera the model declares, the joints and the gripper, sized and encoded for it."""
        from ._vision._observation import observation

        row = self.model
        frames = {view: self._render(view) for view in row.camera_views}
        return observation(row, images=frames, joints=list(self.positions), gripper=[self.gripper],
                           instruction=self.instruction)

    # -- act -------------------------------------------------------------------------------
    def is_safe(self, row: Sequence[float]) -> bool:
        """A row of the model's width, finite, and inside the joint (targets) or speed
        (velocities) limits. `unsafe_reason` says why not."""
        self.unsafe_reason = self._problem(row) or ""
        return not self.unsafe_reason

    def _problem(self, row: Sequence[float]) -> Optional[str]:
        width = len(HOME) + 1
        if len(row) != width:
            return f"row has {len(row)} values, the arm takes {width}"
        if not all(math.isfinite(v) for v in row):
            return "row has a non-finite value"
        joints = row[: len(HOME)]
        if self._rows_of(self.model) in TARGET_ROWS:
            outside = [i for i, q in enumerate(joints) if not Q_MIN[i] <= q <= Q_MAX[i]]
            return f"target outside the limits of joint(s) {outside}" if outside else None
        too_fast = [i for i, v in enumerate(joints) if abs(v) > DQ_MAX[i]]
        return f"velocity above the limit of joint(s) {too_fast}" if too_fast else None

    def apply_action(self, row: Sequence[float]) -> None:
        """One control period under `row`: the joints move within their limits, the gripper
        toward its (binarised) target."""
        semantics = self.model.action_semantics or {}
        joints, gripper = [float(v) for v in row[: len(HOME)]], float(row[len(HOME)])
        clip = semantics.get("clip")
        if clip:
            joints = [_clip(v, float(clip[0]), float(clip[1])) for v in joints]
        threshold = semantics.get("gripper_binarize_threshold")
        self._gripper_target = (1.0 if gripper > float(threshold) else 0.0) if threshold is not None else _clip(gripper, 0, 1)
        if self._rows_of(self.model) in TARGET_ROWS:
            self._target, self._velocity = joints, [0.0] * len(HOME)
        else:
            self._velocity = joints
        self._step(self.period_s)
        self.actions += 1

    def hold(self) -> None:
        """Stop where the arm is (the end of a run, or anything that stopped it early)."""
        self._gripper_target = self.gripper
        self._hold_here()
        self.holds += 1

    def hold_position(self, stall_s: Optional[float] = None) -> None:
        """The buffer ran dry: hold, never coast on the last velocity."""
        self._hold_here()

    def _hold_here(self) -> None:
        self._target, self._velocity = list(self.positions), [0.0] * len(HOME)
        if self.physics is not None:  # the servos hold the measured joints, not a target still ahead
            self.commanded = list(self.positions)
            self.physics.command(self.commanded, self._gripper_target)

    # -- kinematics (as sim_robot) ---------------------------------------------------------
    def _step(self, dt: float) -> None:
        if self.physics is not None:
            self._step_physics(dt)
            return
        self.positions = self._moved(self.positions, dt)
        self.commanded = list(self.positions)
        step = GRIPPER_SPEED * dt
        self.gripper += _clip(self._gripper_target - self.gripper, -step, step)

    def _step_physics(self, dt: float) -> None:
        """The kinematic rule moves the command; the servos chase it for `dt` of physics."""
        self.commanded = self._moved(self.commanded, dt)
        self.physics.command(self.commanded, self._gripper_target)
        self.physics.advance(dt)
        self.positions, self.gripper = self.physics.positions, self.physics.gripper

    def _moved(self, positions: Sequence[float], dt: float) -> List[float]:
        moved = []
        for i, q in enumerate(positions):
            if self._rows_of(self.model) in TARGET_ROWS:
                q += _clip(self._target[i] - q, -DQ_MAX[i] * dt, DQ_MAX[i] * dt)
            else:
                q += _clip(self._velocity[i], -DQ_MAX[i], DQ_MAX[i]) * dt
            moved.append(_clip(q, Q_MIN[i], Q_MAX[i]))
        return moved

    # -- cameras ---------------------------------------------------------------------------
    def _render(self, view: str) -> Any:
        if self.physics is not None:
            return self.physics.render(view, *FRAME_SIZE)
        from ._vision._encode import _pillow

        image_module = _pillow()
        from PIL import ImageDraw

        width, height = FRAME_SIZE
        image = image_module.new("RGB", FRAME_SIZE, (200, 205, 215))
        draw = ImageDraw.Draw(image)
        draw.rectangle((0, int(height * 0.62), width, height), fill=(120, 95, 70))  # table
        q, opening = self.positions, 1.0 - self.gripper
        if view.startswith("wrist"):  # looks along the hand: the cube slides and turns with the last joints
            cx = width // 2 + int(width * 0.25 * math.sin(q[0] + q[6]))
            cy = int(height * (0.55 + 0.2 * math.sin(q[3] + 2.0)))
            size = int(height * (0.25 + 0.15 * math.cos(q[1])))
            draw.rectangle((cx - size, cy - size // 2, cx + size, cy + size // 2), fill=(210, 30, 30))
            gap = int(width * 0.2 * opening)
            for left in (width // 2 - gap - 10, width // 2 + gap):
                draw.rectangle((left, height - 30, left + 10, height), fill=(60, 60, 60))
            return image
        shift = 0.1 * width if view.endswith("2") else 0.0  # a second exterior camera sits further right
        draw.rectangle((int(width * 0.62 - shift), int(height * 0.52), int(width * 0.70 - shift), int(height * 0.62)),
                       fill=(210, 30, 30))
        x, y, angle = width * 0.3 - shift, height * 0.62, -math.pi / 2
        points = [(x, y)]
        for joint, length in ((1, 0.33), (3, 0.32), (5, 0.09), (6, 0.1)):
            angle += q[joint] * (1 if joint != 3 else -0.6)
            x += length * height * 0.9 * math.cos(angle) + q[0] * 4
            y += length * height * 0.9 * math.sin(angle)
            points.append((x, y))
        draw.line(points, fill=(40, 40, 45), width=7)
        spread = 2 + int(9 * opening)
        for side in (-1, 1):
            draw.line([(x + side * spread, y), (x + side * spread, y + 12)], fill=(90, 90, 90), width=3)
        return image
