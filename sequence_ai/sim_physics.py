"""A physical simulated arm: a MuJoCo Franka Panda on a table with a red cube, whose joints lag
their commands, and whose cameras MuJoCo renders offscreen. The backend of
`SimulatedArm(physics="mujoco")` (sequence_ai/sim.py) and of sim_robot's `physics: mujoco`
(sequence_ai_ros/tools/sim_robot.py); needs the `[physics]` extra (mujoco, gymnasium-robotics).

The Panda is gymnasium-robotics' `kitchen_franka` model, shipped inside its wheel (meshes,
position actuators kp 870 on joints 1-4 and 120 on 5-7, joint damping 100 and 10), loaded without
the kitchen: the arm, a table, a cube, two exterior cameras and one on the wrist. Its bodies are
gravity-compensated, as a Franka's own controller does, so a held target is held without droop;
what remains is the lag of a position servo through the arm's inertia and damping, and its
force limits (docs/PHYSICS.md measures it). Joints use the Franka convention of
sequence_ai_ros/parameters.py (FRANKA_*): the model's joint 6 and 7 frames are turned by π/2 and
π/4 (JOINT_OFFSETS), and its joint ranges are set to the Franka limits.

Rendering goes through OSMesa unless MUJOCO_GL says otherwise (Debian libosmesa6; EGL also works
where a driver is installed). With no GPU a view costs milliseconds to tens of milliseconds:
render when a frame is needed, not at a camera's frame rate.
"""

from __future__ import annotations

import atexit
import importlib.util
import math
import os
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ._extras import install_hint

__all__ = ["JOINT_OFFSETS", "PandaPhysics", "unavailable"]

# Franka Research 3 limits, as sequence_ai/sim.py and sequence_ai_ros/parameters.py state them.
Q_MIN = (-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973)
Q_MAX = (2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973)
# model angle = Franka angle + offset (the kitchen model's link 6 and 7 frames are turned)
JOINT_OFFSETS = (0.0, 0.0, 0.0, 0.0, 0.0, -math.pi / 2, -math.pi / 4)
FINGER_OPEN_M = 0.04  # each finger's travel; the gripper's 0 (open) ... 1 (closed) maps onto it
TIMESTEP_S = 0.002
ASSETS = "envs/assets/kitchen_franka/franka_assets"

_SCENE = """<mujoco model="panda_on_a_table">
  <include file="{assets}/assets.xml"/>
  <compiler meshdir="{assets}/meshes"/>
  <include file="{assets}/actuator.xml"/>
  <option timestep="{timestep}"/>
  <visual><quality shadowsize="0" offsamples="0"/><headlight ambient=".45 .45 .45"/></visual>
  <asset><texture type="skybox" builtin="gradient" rgb1=".75 .8 .88" rgb2=".45 .5 .6" width="16" height="16"/></asset>
  <worldbody>
    <light pos="0.5 -0.5 2.5" dir="0 0.3 -1" directional="true"/>
    <geom name="floor" type="plane" size="3 3 0.1" rgba=".55 .57 .6 1"/>
    <geom name="table" type="box" pos="0.35 0 0.2" size="0.55 0.6 0.2" rgba=".47 .37 .27 1"/>
    <body name="cube" pos="0.5 0.05 0.425">
      <freejoint/><geom type="box" size="0.025 0.025 0.025" rgba=".82 .12 .12 1" mass="0.1"/>
    </body>
    <body name="look" pos="0.3 0 0.72"/>
    <camera name="exterior_1" pos="1.25 -1.5 1.3" mode="targetbody" target="look" fovy="50"/>
    <camera name="exterior_2" pos="1.25 1.5 1.3" mode="targetbody" target="look" fovy="50"/>
    <body name="base" pos="0 0 0.4"><include file="{assets}/chain.xml"/></body>
  </worldbody>
</mujoco>"""
_ARM = [f"robot:panda0_joint{i}" for i in range(1, 8)]
_FINGERS = ["robot:panda0_finger_joint1", "robot:panda0_finger_joint2"]


def _assets() -> Optional[Path]:
    spec = importlib.util.find_spec("gymnasium_robotics")  # located, not imported (that loads gymnasium)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / ASSETS
    return path if (path / "chain.xml").exists() else None


def unavailable(render: bool = False) -> Optional[str]:
    """Why the physical arm cannot run here (`render`: nor render its cameras), or None."""
    if importlib.util.find_spec("mujoco") is None:
        return f"mujoco is not installed: {install_hint('physics')}"
    if _assets() is None:
        return f"gymnasium-robotics (the Panda model) is not installed: {install_hint('physics')}"
    if render and os.environ.get("MUJOCO_GL", "osmesa") == "osmesa":
        import ctypes.util

        if ctypes.util.find_library("OSMesa") is None:
            return "no libOSMesa to render with (Debian: apt-get install libosmesa6; or MUJOCO_GL=egl)"
    return None


def _close_if_alive(arm: weakref.ref[PandaPhysics]) -> None:
    alive = arm()
    if alive is not None:
        alive.close()


class PandaPhysics:
    """The arm in MuJoCo. `command()` sets the position actuators' targets, `advance()` runs the
    physics, `positions`/`gripper` read the measured joints; `render()` draws a view. Thread-safe:
    a ROS node steps it on one timer and renders on another."""

    def __init__(self, positions: Sequence[float], gripper: float = 0.0):
        reason = unavailable()
        if reason:
            raise RuntimeError(f"the physical arm cannot run: {reason}")
        os.environ.setdefault("MUJOCO_GL", "osmesa")
        import mujoco

        self._mj = mujoco
        self.model = self._compile(mujoco)
        self.data = mujoco.MjData(self.model)
        self._arm = [int(self.model.joint(n).qposadr[0]) for n in _ARM]
        self._arm_dof = [int(self.model.joint(n).dofadr[0]) for n in _ARM]
        self._fingers = [int(self.model.joint(n).qposadr[0]) for n in _FINGERS]
        self._lock = threading.Lock()
        self._render_lock = threading.Lock()
        self._renderers: Dict[Tuple[int, int], Any] = {}
        self._view_data = mujoco.MjData(self.model)
        self.physics_s, self.steps, self.render_s, self.renders = 0.0, 0, 0.0, 0
        self._owed_s = 0.0
        for adr, q, off in zip(self._arm, positions, JOINT_OFFSETS):
            self.data.qpos[adr] = float(q) + off
        for adr in self._fingers:
            self.data.qpos[adr] = FINGER_OPEN_M * (1.0 - gripper)
        self.command(positions, gripper)
        mujoco.mj_forward(self.model, self.data)
        # closed before the interpreter unloads what the GL context frees with; weakly, so an arm
        # dropped earlier is not kept alive until then
        atexit.register(_close_if_alive, weakref.ref(self))

    @staticmethod
    def _compile(mujoco: Any) -> Any:
        spec = mujoco.MjSpec.from_string(_SCENE.format(assets=_assets(), timestep=TIMESTEP_S))
        # looks along the hand (+z of link 7), beside the flange, as a wrist camera is mounted
        spec.body("panda0_link7").add_camera(name="wrist_left", pos=[0.06, 0.0, 0.09], quat=[0, 1, 0, 0], fovy=80)
        for body in spec.bodies:
            if body.name.startswith("panda0_"):
                body.gravcomp = 1.0
        for name, lo, hi, off in zip(_ARM, Q_MIN, Q_MAX, JOINT_OFFSETS):
            spec.joint(name).range = [lo + off, hi + off]
            spec.actuator(name.split(":")[1]).ctrlrange = [lo + off, hi + off]
        return spec.compile()

    # -- the arm -----------------------------------------------------------------------------
    def command(self, targets: Sequence[float], gripper: float) -> None:
        """Position targets (Franka convention, rad) for the 7 joints; gripper 0 open ... 1 closed."""
        finger = FINGER_OPEN_M * (1.0 - min(1.0, max(0.0, float(gripper))))
        with self._lock:
            for i, (q, lo, hi, off) in enumerate(zip(targets, Q_MIN, Q_MAX, JOINT_OFFSETS)):
                self.data.ctrl[i] = min(hi, max(lo, float(q))) + off
            self.data.ctrl[7] = self.data.ctrl[8] = finger

    def advance(self, seconds: float) -> None:
        """Run the physics `seconds` forward, in whole timesteps: the remainder is carried to the
        next call, so physics time keeps to the sum of what was asked."""
        with self._lock:
            self._owed_s += seconds
            steps = math.floor(self._owed_s / self.model.opt.timestep + 1e-9)
            self._owed_s -= steps * self.model.opt.timestep
            if steps <= 0:
                return
            started = time.perf_counter()
            self._mj.mj_step(self.model, self.data, nstep=steps)
            self.physics_s += time.perf_counter() - started
            self.steps += steps

    @property
    def time_s(self) -> float:
        return float(self.data.time)

    @property
    def positions(self) -> List[float]:
        with self._lock:
            return [float(self.data.qpos[a]) - off for a, off in zip(self._arm, JOINT_OFFSETS)]

    @property
    def velocities(self) -> List[float]:
        with self._lock:
            return [float(self.data.qvel[a]) for a in self._arm_dof]

    @property
    def gripper(self) -> float:
        """0 open ... 1 closed, from the fingers' measured travel."""
        with self._lock:
            opening = sum(float(self.data.qpos[a]) for a in self._fingers) / (2 * FINGER_OPEN_M)
        return min(1.0, max(0.0, 1.0 - opening))

    # -- cameras -----------------------------------------------------------------------------
    @staticmethod
    def camera_of(view: str) -> str:
        if view.startswith("wrist"):
            return "wrist_left"
        return "exterior_2" if view.endswith("2") else "exterior_1"

    def render(self, view: str, width: int, height: int) -> Any:
        """The view (`exterior_1`, `exterior_2`, `wrist_*`) as an RGB uint8 array (height, width, 3),
        of the arm as it is now."""
        mujoco = self._mj
        with self._lock:  # a copy of the state, so the physics steps on while this draws
            self._view_data.qpos[:] = self.data.qpos
        with self._render_lock:
            started = time.perf_counter()
            renderer = self._renderers.get((width, height))
            if renderer is None:
                self.model.vis.global_.offwidth = max(self.model.vis.global_.offwidth, width)
                self.model.vis.global_.offheight = max(self.model.vis.global_.offheight, height)
                renderer = self._renderers[(width, height)] = mujoco.Renderer(self.model, height, width)
            mujoco.mj_kinematics(self.model, self._view_data)
            mujoco.mj_camlight(self.model, self._view_data)
            renderer.update_scene(self._view_data, camera=self.camera_of(view))
            frame = renderer.render().copy()
            self.render_s += time.perf_counter() - started
            self.renders += 1
        return frame

    def close(self) -> None:
        with self._render_lock:
            renderers, self._renderers = list(self._renderers.values()), {}
        for renderer in renderers:
            renderer.close()
