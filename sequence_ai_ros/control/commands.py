"""From a policy row to a joint command, and onto the command topic.

`CommandMapping` picks the model's verified conversion for the controller's interface, or refuses
at startup naming why: rows are converted only the way the catalogue row declares, never by a
conversion invented here. `CommandPublisher` puts commands (and the hold) on the topic as
`std_msgs/Float64MultiArray` or `trajectory_msgs/JointTrajectory`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence, Tuple

from builtin_interfaces.msg import Duration
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import sequence_ai

from ..parameters import ConfigError, NodeConfig

__all__ = ["Command", "CommandMapping", "CommandPublisher"]


@dataclass(frozen=True)
class Command:
    """One command for the arm: joint values in `interface` units plus the gripper position."""

    joints: Tuple[float, ...]
    gripper: Optional[float]
    interface: str


class CommandMapping:
    """How rows of one model become commands for one controller interface."""

    def __init__(self, model: sequence_ai.Model, config: NodeConfig):
        self.model = model
        self.config = config
        semantics = model.action_semantics or {}
        rows = str(semantics.get("rows") or model.action_space or "")
        n = len(config.joint_names)
        if model.action_dim is not None and model.action_dim not in (n, n + 1):
            raise ConfigError(
                f"{model.short_id} returns rows of {model.action_dim} values; joint_names has {n} joints "
                f"(expected {n} or {n} + gripper)"
            )
        self.has_gripper = model.action_dim == n + 1
        self.interface = config.command_interface
        if self.interface == "position":
            if "absolute" in rows:
                self.kind = "targets"
            elif semantics.get("to_joint_positions") == "offset_q_ref":
                self.kind = "offset_q_ref"  # each row carries its own q_ref (the client's Action)
            else:
                raise ConfigError(
                    f"{model.short_id} rows are {rows or 'of an undeclared space'} and the model declares no verified "
                    "conversion to joint positions; a position controller cannot be driven by it"
                )
        else:
            if semantics.get("controller_interface") == "joint_velocity":
                self.kind = "velocities"
            else:
                raise ConfigError(
                    f"{model.short_id} rows are {rows or 'of an undeclared space'} (for a "
                    f"{semantics.get('controller_interface') or 'undeclared'} controller) and the model declares no "
                    "verified conversion to joint velocities; set command_interface: position"
                )

    def command(self, row: Sequence[float], q_ref: Optional[Sequence[float]]) -> Command:
        prepared = list(sequence_ai.prepare([list(row)], self.model, 0))
        n = len(self.config.joint_names)
        if self.kind == "offset_q_ref":
            if q_ref is None:
                raise ValueError("a joint_delta row came without the joint state its chunk was computed from (q_ref)")
            joints = list(sequence_ai.to_joint_positions([prepared], list(q_ref), self.model)[0])[:n]
        else:
            joints = prepared[:n]
        gripper = None
        if self.has_gripper:
            g = min(1.0, max(0.0, float(prepared[n])))
            c = self.config
            gripper = c.gripper_open_position + g * (c.gripper_closed_position - c.gripper_open_position)
        return Command(tuple(float(v) for v in joints), gripper, self.interface)


class CommandPublisher:
    """Publishes commands on the configured topic and type; in dry_run only logs them."""

    def __init__(self, node, config: NodeConfig, qos, log: Callable[[str], None]):
        self.config = config
        self._log = log
        self._dry = config.dry_run
        self.message_type = JointTrajectory if config.command_type == "joint_trajectory" else Float64MultiArray
        self._publisher = node.create_publisher(self.message_type, config.command_topic, qos)
        self.recorder: Any = None  # record_dir: the goal's Recorder, told of every command published

    def publish(self, command: Command, period_s: float) -> None:
        names, values = self._named_values(command)
        message = self._message(names, values, command.interface, period_s)
        if self._dry:
            self._log(f"dry_run: {command.interface} command {list(command.joints)} gripper {command.gripper}")
            return
        self._publisher.publish(message)
        recorder = self.recorder
        if recorder is not None:
            recorder.arm_command(names, values, velocity=command.interface == "velocity")

    def _named_values(self, command: Command) -> Tuple[List[str], List[float]]:
        values: List[float] = list(command.joints)
        names = list(self.config.joint_names)
        if self.config.command_includes_gripper and command.gripper is not None:
            values.append(float(command.gripper))
            names.append(self.config.gripper_joint)
        return names, values

    def _message(self, names: List[str], values: List[float], interface: str, period_s: float):
        if self.message_type is Float64MultiArray:
            return Float64MultiArray(data=values)
        point = JointTrajectoryPoint()
        if interface == "velocity":
            point.velocities = values
        else:
            point.positions = values
        seconds = max(period_s, 0.0)
        point.time_from_start = Duration(sec=int(seconds), nanosec=int((seconds % 1.0) * 1e9))
        return JointTrajectory(joint_names=names, points=[point])
