"""The node's parameters: one table, declared with descriptors, read once into a `NodeConfig`.

Each parameter is written once, in `PARAMETERS`: its default (which gives its type), its
description, its range or choices, and whether it holds one value per joint. That table drives the
declaration, the reading and the fields of `NodeConfig`; config/policy.yaml documents every entry
(test/ros/test_parameters.py holds the two together). They are read once, at startup, so every one
is declared read-only (rclpy's own use_sim_time too): `ros2 param set` is refused instead of
reporting a change (a safety limit, say) that would never take effect. Change them in the YAML and
restart. The API key is never a parameter: it comes from $SEQUENCES_API_KEY only.
"""

from __future__ import annotations

from dataclasses import dataclass, make_dataclass
from typing import Any, Dict, Optional, Tuple

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterType, SetParametersResult
from rclpy.exceptions import (
    InvalidParameterTypeException,
    InvalidParameterValueException,
    ParameterUninitializedException,
)
from rclpy.node import Node
from rclpy.parameter import Parameter as RosParameter

from sequence_ai import STITCH_MODES

__all__ = ["PARAMETERS", "ConfigError", "NodeConfig", "Parameter", "check_against_model", "declare",
           "declare_model_rate", "read"]

FRANKA_JOINTS = [f"fr3_joint{i}" for i in range(1, 8)]
FRANKA_Q_MIN = [-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973]
FRANKA_Q_MAX = [2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973]
FRANKA_DQ_MAX = [2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61]

COMMAND_TYPES = ("float64_multi_array", "joint_trajectory")
COMMAND_INTERFACES = ("position", "velocity")
BUSY_POLICIES = ("reject", "preempt")
MAX_REQUEST_BUDGET = 30.0  # requests per second: two for every action a 15 Hz model plays


class ConfigError(ValueError):
    """A parameter value the node cannot run with; the message names the parameter."""


@dataclass(frozen=True)
class Parameter:
    """One node parameter: its default (which gives its ROS and Python type), its description, and
    the values it takes. Every one is declared read-only: it is read once."""

    default: Any
    description: str
    floats: Optional[Tuple[float, float]] = None  # the descriptor's range, both ends included
    ints: Optional[Tuple[int, int]] = None
    choices: Tuple[str, ...] = ()  # a string parameter takes one of these only
    per_joint: bool = False  # one float per entry of joint_names

    def descriptor(self) -> ParameterDescriptor:
        descriptor = ParameterDescriptor(description=self.description, read_only=True)
        if self.floats is not None:
            low, high = self.floats
            descriptor.floating_point_range = [
                FloatingPointRange(from_value=low, to_value=high, step=0.0)]
        if self.ints is not None:
            low, high = self.ints
            descriptor.integer_range = [IntegerRange(from_value=low, to_value=high, step=1)]
        return descriptor

    @property
    def kind(self) -> type:
        """The Python type of a value: the default's, or its entries' for a list (then a tuple)."""
        return type(self.default[0]) if isinstance(self.default, list) else type(self.default)

    def config_value(self, name: str, value: Any) -> Any:
        """The value as NodeConfig holds it (a list as a tuple); ConfigError if not a choice."""
        if isinstance(self.default, list):
            return tuple(self.kind(v) for v in value)
        value = self.kind(value)
        if self.choices and value not in self.choices:
            raise ConfigError(f"parameter {name} is {value!r}; expected one of "
                              f"{', '.join(self.choices)}")
        return value


# Defaults describe a DROID Franka on ros2_control; config/policy.yaml says the same in prose.
PARAMETERS: Dict[str, Parameter] = {
    "model": Parameter("pi05-droid", "Catalogue id of the policy (sequence-ai models lists them)"),
    "policy_url": Parameter(
        "", "Policy server: empty = $SEQUENCES_BASE_URL or the Sequences platform; ws://host:port (or "
            "wss://) = an openpi server, model then naming a model card (pi05_droid) or a card file; its "
            "key only from $OPENPI_API_KEY"),
    "camera_views": Parameter(
        ["exterior_1", "wrist_left"],
        "Model view names, in the order of camera_topics; every view the model declares must "
        "be here"),
    "camera_topics": Parameter(
        ["cameras/exterior_1/image_raw", "cameras/wrist_left/image_raw"],
        "One image topic per entry of camera_views"),
    "camera_compressed": Parameter(
        [False, False],
        "Per camera: true = sensor_msgs/CompressedImage, false = sensor_msgs/Image"),
    "joint_states_topic": Parameter("joint_states", "sensor_msgs/JointState topic of the arm"),
    "joint_names": Parameter(list(FRANKA_JOINTS), "Arm joints in the model's order (7 for DROID)"),
    "gripper_joint": Parameter("fr3_finger_joint1", "Joint whose position is the gripper opening"),
    "gripper_open_position": Parameter(
        0.04, "gripper_joint position when fully open (model gripper 0)"),
    "gripper_closed_position": Parameter(
        0.0, "gripper_joint position when fully closed (model gripper 1)"),
    "command_topic": Parameter(
        "arm_controller/commands", "Where joint commands are published (RELIABLE)"),
    "command_type": Parameter(
        "float64_multi_array",
        "float64_multi_array (forward/group controller) or joint_trajectory (JTC)",
        choices=COMMAND_TYPES),
    "command_interface": Parameter(
        "position", "The controller's interface: position or velocity", choices=COMMAND_INTERFACES),
    "command_includes_gripper": Parameter(
        True, "Append the gripper command (in gripper_joint units) to every command"),
    "joint_position_min": Parameter(
        list(FRANKA_Q_MIN), "Lower joint limits, rad; commands outside stop the run",
        per_joint=True),
    "joint_position_max": Parameter(list(FRANKA_Q_MAX), "Upper joint limits, rad", per_joint=True),
    "joint_velocity_max": Parameter(
        list(FRANKA_DQ_MAX), "Joint speed limits, rad/s (velocity commands and position steps)",
        per_joint=True),
    "max_step_rad": Parameter(
        0.2, "Largest change of a position target between two control periods, rad",
        floats=(0.0, 3.2)),
    "max_image_age_s": Parameter(
        0.5, "A camera frame older than this stops the run", floats=(0.01, 60.0)),
    "max_joint_state_age_s": Parameter(
        0.25, "Joint states older than this stop the run", floats=(0.005, 60.0)),
    "prefetch": Parameter(True, "Request the next chunk while the current one plays"),
    "lookahead": Parameter(
        0, "Requests in flight: 0 = as many as the refill latency needs (pipelined); N = at most N "
           "chunks buffered or in flight", ints=(0, 8)),
    "stitch": Parameter(
        "continue", "How an arriving chunk meets the motion in progress: "
                    f"{' | '.join(STITCH_MODES)} (docs/CLIENT-LOOP.md)", choices=STITCH_MODES),
    "align_chunks": Parameter(False, "Older spelling of stitch: align; true overrides stitch"),
    "take_over": Parameter(
        True, "The newest chunk takes over on arrival: its rows for the moment being played "
              "replace the rows buffered (needs lookahead 0, prefetch true, stitch continue); "
              "false = each chunk plays after the rows buffered (docs/CLIENT-LOOP.md)"),
    "request_budget": Parameter(
        0.0, "With take_over: requests per second of motion the node may make; 0 (default) = the "
             "client's default, one request per window played (1.875/s for pi05-droid)",
        floats=(0.0, MAX_REQUEST_BUDGET)),
    "smooth_seam": Parameter(
        0, "Ramp the first N targets of each new chunk out of the last one", ints=(0, 64)),
    "startup_timeout_s": Parameter(
        1800.0, "How long to wait for a cold worker before the first action, s",
        floats=(0.0, 7200.0)),
    "request_timeout_s": Parameter(
        30.0, "Timeout of one steady-state request, s", floats=(0.5, 600.0)),
    "dry_run": Parameter(False, "Compute and log every command but publish nothing"),
    "busy_policy": Parameter(
        "reject", "A goal arriving while one runs: reject (default) or preempt the running one",
        choices=BUSY_POLICIES),
    "until_topic": Parameter(
        "", "Optional std_msgs/Bool topic; true ends the run early with reason until"),
    "estop_topic": Parameter(
        "", "Optional latched std_msgs/Bool e-stop, per publisher: true stops the running goal "
            "(hold, outcome estop) and refuses goals until that publisher sends false "
            "(docs/ROS.md)"),
    "estop_start_engaged": Parameter(
        True, "With estop_topic: start engaged, until ~/release_estop is called (a node that "
              "starts cannot know what it missed)"),
    "estop_heartbeat_s": Parameter(
        0.0, "With estop_topic: engaged when no e-stop message came for this long, s (a dead-man); "
             "0 (default) = off", floats=(0.0, 60.0)),
    "feedback_period_s": Parameter(
        0.25, "Period of action feedback, s (<= 0.5 for >= 2 Hz)", floats=(0.05, 0.5)),
    "diagnostics_period_s": Parameter(1.0, "Period of /diagnostics, s", floats=(0.1, 10.0)),
    "realtime_priority": Parameter(
        0, "SCHED_FIFO priority of the control threads (timer and goal) when the OS allows it; "
           "0 (default) = ordinary scheduling", ints=(0, 98)),
    "record_dir": Parameter(
        "", "Folder for one MCAP recording per goal (<UTC time>-<goal id>.mcap; "
            "docs/RECORDING.md); empty (default) = no recording"),
}

NodeConfig = make_dataclass(
    "NodeConfig",
    [(name, Tuple[p.kind, ...] if isinstance(p.default, list) else p.kind)
     for name, p in PARAMETERS.items()],
    frozen=True,
    namespace={"__module__": __name__,
               "__doc__": "Every parameter as read at startup, one field each (PARAMETERS); "
                          "`stitch` is the mode in force (align when align_chunks is true)."},
)

USE_SIM_TIME_DESCRIPTION = ("Follow the /clock topic (read once at startup, like every parameter: "
                            "set it in the params file or the launch argument and restart)")


def declare(node: Node) -> None:
    for name, parameter in PARAMETERS.items():
        try:
            node.declare_parameter(name, parameter.default, parameter.descriptor())
        except (InvalidParameterTypeException, InvalidParameterValueException) as exc:
            # a value outside the descriptor's range, or of another type (an int for a double)
            raise ConfigError(f"parameter {name}: {exc}") from None
    # rclpy declares use_sim_time itself, writable; the node reads it once (its clock, every goal's
    # time bound), so a change at runtime would silently break a run: refuse it like the others.
    descriptor = Parameter(False, USE_SIM_TIME_DESCRIPTION).descriptor()
    descriptor.type = ParameterType.PARAMETER_BOOL
    node.set_descriptor("use_sim_time", descriptor)


def declare_model_rate(node: Node, model_id: str, hz: float) -> None:
    """`control_hz`: the rate the node publishes at, the model's own. `ros2 param get` answers it; a
    set is refused saying where the rate comes from (not rclpy's "undeclared parameter"); a value
    for it in a params file (a `ros2 param dump` loaded back) is ignored."""
    why = (f"control_hz is {model_id}'s control rate, {hz:g} Hz, from its catalogue row: the node publishes "
           f"at the model's rate, so it is not a setting (another rate needs another model)")
    node.declare_parameter("control_hz", float(hz), ParameterDescriptor(description=why), ignore_override=True)

    def refuse(changes) -> SetParametersResult:
        if any(change.name == "control_hz" for change in changes):
            return SetParametersResult(successful=False, reason=why)
        return SetParametersResult(successful=True)

    node.add_on_set_parameters_callback(refuse)


def read(node: Node) -> NodeConfig:
    """The parameters as a NodeConfig, or ConfigError naming the first bad one."""
    values = {name: parameter.config_value(name, _value(node, name))
              for name, parameter in PARAMETERS.items()}
    if values["align_chunks"]:
        values["stitch"] = "align"
    _check_together(values)
    return NodeConfig(**values)


def check_against_model(config: NodeConfig, model: Any) -> None:
    """ConfigError if the cameras do not match the views the model reads."""
    missing = [v for v in model.camera_views if v not in config.camera_views]
    if missing:
        raise ConfigError(
            f"{model.short_id} needs camera view(s) {', '.join(missing)}; camera_views has "
            f"{', '.join(config.camera_views) or 'none'}"
        )
    unused = [v for v in config.camera_views if model.camera_views and v not in model.camera_views]
    if unused:
        raise ConfigError(f"{model.short_id} does not read camera view(s) {', '.join(unused)}; "
                          "remove them")


def _value(node: Node, name: str) -> Any:
    try:
        parameter = node.get_parameter(name)
    except ParameterUninitializedException:  # `-p name:=` or only blanks (YAML null): no value
        parameter = RosParameter(name)
    if parameter.type_ == RosParameter.Type.NOT_SET:
        raise ConfigError(f"parameter {name} is not set (a value of only blanks on the command "
                          f"line is no value; quote it, or leave the parameter out for its "
                          f"default)")
    return parameter.value


def _check_together(v: Dict[str, Any]) -> None:
    """ConfigError naming the parameters whose values cannot go together."""
    views, topics, compressed = v["camera_views"], v["camera_topics"], v["camera_compressed"]
    if len(topics) != len(views) or len(compressed) != len(views):
        raise ConfigError(
            f"camera_views ({len(views)}), camera_topics ({len(topics)}) and camera_compressed "
            f"({len(compressed)}) must have one entry per camera"
        )
    joints = len(v["joint_names"])
    if not joints:
        raise ConfigError("parameter joint_names is empty")
    for name in (name for name, parameter in PARAMETERS.items() if parameter.per_joint):
        if len(v[name]) != joints:
            raise ConfigError(f"parameter {name} has {len(v[name])} values; "
                              f"joint_names has {joints}")
    if any(lo >= hi for lo, hi in zip(v["joint_position_min"], v["joint_position_max"])):
        raise ConfigError("joint_position_min must be below joint_position_max for every joint")
    _check_take_over(v)
    if v["gripper_open_position"] == v["gripper_closed_position"]:
        raise ConfigError("gripper_open_position and gripper_closed_position must differ")


def _check_take_over(v: Dict[str, Any]) -> None:
    """ConfigError naming the parameters a take_over or request_budget cannot go with. The node
    asks the client for the take-over wherever it can be (`take_over=None`), so a mode that rules it
    out would turn it off without a word: refused here instead, as the client's `take_over=True`
    refuses it."""
    if v["take_over"]:
        against = []
        if v["lookahead"] != 0:
            against.append(f"lookahead is {v['lookahead']}")
        if not v["prefetch"]:
            against.append("prefetch is false")
        if v["stitch"] != "continue":
            against.append("align_chunks is true" if v["align_chunks"]
                           else f"stitch is {v['stitch']}")
        if against:
            raise ConfigError(f"parameter take_over is true, which needs lookahead 0, prefetch "
                              f"true and stitch continue, but {', '.join(against)}; set take_over: "
                              f"false for each chunk to play after the rows buffered")
    elif v["request_budget"] > 0:
        raise ConfigError(f"parameter request_budget is {v['request_budget']:g} but take_over "
                          f"is false: a budget needs the newest chunk to take over (without it the "
                          f"node starts one request per window); set request_budget: 0.0 or "
                          f"take_over: true")
