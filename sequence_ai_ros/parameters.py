"""The node's parameters: declared with descriptors, read once into a `NodeConfig`.

Every parameter is documented in config/policy.yaml. They are read once, at startup, so every
one is declared read-only (rclpy's own use_sim_time too): `ros2 param set` is refused instead of reporting a change (a safety
limit, say) that would never take effect. Change them in the YAML and restart. The API key is
never a parameter: it comes from $SEQUENCES_API_KEY only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterType
from rclpy.exceptions import (
    InvalidParameterTypeException,
    InvalidParameterValueException,
    ParameterUninitializedException,
)
from rclpy.node import Node
from rclpy.parameter import Parameter

FRANKA_JOINTS = [f"fr3_joint{i}" for i in range(1, 8)]
FRANKA_Q_MIN = [-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973]
FRANKA_Q_MAX = [2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973]
FRANKA_DQ_MAX = [2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61]

COMMAND_TYPES = ("float64_multi_array", "joint_trajectory")
COMMAND_INTERFACES = ("position", "velocity")
BUSY_POLICIES = ("reject", "preempt")
STITCH_MODES = ("continue", "align", "none")
MAX_REQUEST_BUDGET = 30.0  # requests per second: two for every action a 15 Hz model plays


class ConfigError(ValueError):
    """A parameter value the node cannot run with; the message names the parameter."""


@dataclass(frozen=True)
class NodeConfig:
    model: str
    camera_views: Tuple[str, ...]
    camera_topics: Tuple[str, ...]
    camera_compressed: Tuple[bool, ...]
    joint_states_topic: str
    joint_names: Tuple[str, ...]
    gripper_joint: str
    gripper_open_position: float
    gripper_closed_position: float
    command_topic: str
    command_type: str
    command_interface: str
    command_includes_gripper: bool
    joint_position_min: Tuple[float, ...]
    joint_position_max: Tuple[float, ...]
    joint_velocity_max: Tuple[float, ...]
    max_step_rad: float
    max_image_age_s: float
    max_joint_state_age_s: float
    prefetch: bool
    lookahead: int  # 0: as many requests in flight as the latency needs
    smooth_seam: int
    stitch: str
    take_over: bool  # the newest chunk replaces the rows not yet played (needs lookahead 0, prefetch, continue)
    request_budget: float  # requests per second with take_over; 0: the client's default
    startup_timeout_s: float
    request_timeout_s: float
    dry_run: bool
    busy_policy: str
    until_topic: str
    estop_topic: str
    estop_start_engaged: bool
    estop_heartbeat_s: float  # 0: no heartbeat
    feedback_period_s: float
    diagnostics_period_s: float
    realtime_priority: int
    record_dir: str  # "": no recording


def _descriptor(description: str, *, floats: Optional[Tuple[float, float]] = None,
                ints: Optional[Tuple[int, int]] = None) -> ParameterDescriptor:
    descriptor = ParameterDescriptor(description=description, read_only=True)  # all of them: read once
    if floats is not None:
        descriptor.floating_point_range = [FloatingPointRange(from_value=floats[0], to_value=floats[1], step=0.0)]
    if ints is not None:
        descriptor.integer_range = [IntegerRange(from_value=ints[0], to_value=ints[1], step=1)]
    return descriptor


# name -> (default, descriptor kwargs). Defaults describe a DROID Franka on ros2_control.
PARAMETERS = {
    "model": ("pi05-droid", dict(description="Catalogue id of the policy (sequence-ai models lists them)")),
    "camera_views": (["exterior_1", "wrist_left"], dict(description="Model view names, in the order of camera_topics; every view the model declares must be here")),
    "camera_topics": (["cameras/exterior_1/image_raw", "cameras/wrist_left/image_raw"], dict(description="One image topic per entry of camera_views")),
    "camera_compressed": ([False, False], dict(description="Per camera: true = sensor_msgs/CompressedImage, false = sensor_msgs/Image")),
    "joint_states_topic": ("joint_states", dict(description="sensor_msgs/JointState topic of the arm")),
    "joint_names": (list(FRANKA_JOINTS), dict(description="Arm joints in the model's order (7 for DROID)")),
    "gripper_joint": ("fr3_finger_joint1", dict(description="Joint whose position is the gripper opening")),
    "gripper_open_position": (0.04, dict(description="gripper_joint position when fully open (model gripper 0)")),
    "gripper_closed_position": (0.0, dict(description="gripper_joint position when fully closed (model gripper 1)")),
    "command_topic": ("arm_controller/commands", dict(description="Where joint commands are published (RELIABLE)")),
    "command_type": ("float64_multi_array", dict(description="float64_multi_array (forward/group controller) or joint_trajectory (JTC)")),
    "command_interface": ("position", dict(description="The controller's interface: position or velocity")),
    "command_includes_gripper": (True, dict(description="Append the gripper command (in gripper_joint units) to every command")),
    "joint_position_min": (list(FRANKA_Q_MIN), dict(description="Lower joint limits, rad; commands outside stop the run")),
    "joint_position_max": (list(FRANKA_Q_MAX), dict(description="Upper joint limits, rad")),
    "joint_velocity_max": (list(FRANKA_DQ_MAX), dict(description="Joint speed limits, rad/s (velocity commands and position steps)")),
    "max_step_rad": (0.2, dict(description="Largest change of a position target between two control periods, rad", floats=(0.0, 3.2))),
    "max_image_age_s": (0.5, dict(description="A camera frame older than this stops the run", floats=(0.01, 60.0))),
    "max_joint_state_age_s": (0.25, dict(description="Joint states older than this stop the run", floats=(0.005, 60.0))),
    "prefetch": (True, dict(description="Request the next chunk while the current one plays")),
    "lookahead": (0, dict(description="Requests in flight: 0 = as many as the refill latency needs (pipelined); N = at most N chunks buffered or in flight", ints=(0, 8))),
    "stitch": ("continue", dict(description="How an arriving chunk meets the motion in progress: continue | align | none (docs/CLIENT-LOOP.md)")),
    "align_chunks": (False, dict(description="Older spelling of stitch: align; true overrides stitch")),
    "take_over": (True, dict(description="The newest chunk takes over on arrival: its rows for the moment being played replace the rows buffered (needs lookahead 0, prefetch true, stitch continue); false = each chunk plays after the rows buffered (docs/CLIENT-LOOP.md)")),
    "request_budget": (0.0, dict(description="With take_over: requests per second of motion the node may make; 0 (default) = the client's default, one request per window played (1.875/s for pi05-droid)", floats=(0.0, MAX_REQUEST_BUDGET))),
    "smooth_seam": (0, dict(description="Ramp the first N targets of each new chunk out of the last one", ints=(0, 64))),
    "startup_timeout_s": (1800.0, dict(description="How long to wait for a cold worker before the first action, s", floats=(0.0, 7200.0))),
    "request_timeout_s": (30.0, dict(description="Timeout of one steady-state request, s", floats=(0.5, 600.0))),
    "dry_run": (False, dict(description="Compute and log every command but publish nothing")),
    "busy_policy": ("reject", dict(description="A goal arriving while one runs: reject (default) or preempt the running one")),
    "until_topic": ("", dict(description="Optional std_msgs/Bool topic; true ends the run early with reason until")),
    "estop_topic": ("", dict(description="Optional latched std_msgs/Bool e-stop, per publisher: true stops the running goal (hold, outcome estop) and refuses goals until that publisher sends false (docs/ROS.md)")),
    "estop_start_engaged": (True, dict(description="With estop_topic: start engaged, until ~/release_estop is called (a node that starts cannot know what it missed)")),
    "estop_heartbeat_s": (0.0, dict(description="With estop_topic: engaged when no e-stop message came for this long, s (a dead-man); 0 (default) = off", floats=(0.0, 60.0))),
    "feedback_period_s": (0.25, dict(description="Period of action feedback, s (<= 0.5 for >= 2 Hz)", floats=(0.05, 0.5))),
    "diagnostics_period_s": (1.0, dict(description="Period of /diagnostics, s", floats=(0.1, 10.0))),
    "record_dir": ("", dict(description="Folder for one MCAP recording per goal (<UTC time>-<goal id>.mcap; docs/RECORDING.md); empty (default) = no recording")),
    "realtime_priority": (0, dict(description="SCHED_FIFO priority of the control threads (timer and goal) when the OS allows it; 0 (default) = ordinary scheduling", ints=(0, 98))),
}


USE_SIM_TIME_DESCRIPTION = ("Follow the /clock topic (read once at startup, like every parameter: set it in the "
                            "params file or the launch argument and restart)")


def declare(node: Node) -> None:
    for name, (default, kwargs) in PARAMETERS.items():
        try:
            node.declare_parameter(name, default, _descriptor(**kwargs))
        except (InvalidParameterTypeException, InvalidParameterValueException) as exc:
            # a value outside the descriptor's range, or of another type (an int for a double)
            raise ConfigError(f"parameter {name}: {exc}") from None
    # rclpy declares use_sim_time itself, writable; the node reads it once (its clock, every goal's
    # time bound), so a change at runtime would silently break a run: refuse it like the others.
    descriptor = _descriptor(USE_SIM_TIME_DESCRIPTION)
    descriptor.type = ParameterType.PARAMETER_BOOL
    node.set_descriptor("use_sim_time", descriptor)


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
        raise ConfigError(f"{model.short_id} does not read camera view(s) {', '.join(unused)}; remove them")


def _value(node: Node, name: str) -> Any:
    try:
        parameter = node.get_parameter(name)
    except ParameterUninitializedException:  # given without a value: `-p name:=` or only blanks (YAML null)
        parameter = Parameter(name)
    if parameter.type_ == Parameter.Type.NOT_SET:
        raise ConfigError(f"parameter {name} is not set (a value of only blanks on the command line is no value; "
                          f"quote it, or leave the parameter out for its default)")
    return parameter.value


def _floats(node: Node, name: str, length: int) -> Tuple[float, ...]:
    values = [float(v) for v in _value(node, name)]
    if len(values) != length:
        raise ConfigError(f"parameter {name} has {len(values)} values; joint_names has {length}")
    return tuple(values)


def _choice(node: Node, name: str, choices: Tuple[str, ...]) -> str:
    value = str(_value(node, name))
    if value not in choices:
        raise ConfigError(f"parameter {name} is {value!r}; expected one of {', '.join(choices)}")
    return value


def read(node: Node) -> NodeConfig:
    """The parameters as a NodeConfig, or ConfigError naming the first bad one."""
    views: List[str] = list(_value(node, "camera_views"))
    topics: List[str] = list(_value(node, "camera_topics"))
    compressed: List[bool] = [bool(v) for v in _value(node, "camera_compressed")]
    if len(topics) != len(views) or len(compressed) != len(views):
        raise ConfigError(
            f"camera_views ({len(views)}), camera_topics ({len(topics)}) and camera_compressed "
            f"({len(compressed)}) must have one entry per camera"
        )
    joints = tuple(str(j) for j in _value(node, "joint_names"))
    if not joints:
        raise ConfigError("parameter joint_names is empty")
    q_min = _floats(node, "joint_position_min", len(joints))
    q_max = _floats(node, "joint_position_max", len(joints))
    if any(lo >= hi for lo, hi in zip(q_min, q_max)):
        raise ConfigError("joint_position_min must be below joint_position_max for every joint")
    align_chunks = bool(_value(node, "align_chunks"))
    stitch = "align" if align_chunks else _choice(node, "stitch", STITCH_MODES)
    take_over, request_budget = _take_over(node, stitch, align_chunks)
    open_pos = float(_value(node, "gripper_open_position"))
    closed_pos = float(_value(node, "gripper_closed_position"))
    if open_pos == closed_pos:
        raise ConfigError("gripper_open_position and gripper_closed_position must differ")
    return NodeConfig(
        model=str(_value(node, "model")),
        camera_views=tuple(views),
        camera_topics=tuple(topics),
        camera_compressed=tuple(compressed),
        joint_states_topic=str(_value(node, "joint_states_topic")),
        joint_names=joints,
        gripper_joint=str(_value(node, "gripper_joint")),
        gripper_open_position=open_pos,
        gripper_closed_position=closed_pos,
        command_topic=str(_value(node, "command_topic")),
        command_type=_choice(node, "command_type", COMMAND_TYPES),
        command_interface=_choice(node, "command_interface", COMMAND_INTERFACES),
        command_includes_gripper=bool(_value(node, "command_includes_gripper")),
        joint_position_min=q_min,
        joint_position_max=q_max,
        joint_velocity_max=_floats(node, "joint_velocity_max", len(joints)),
        max_step_rad=float(_value(node, "max_step_rad")),
        max_image_age_s=float(_value(node, "max_image_age_s")),
        max_joint_state_age_s=float(_value(node, "max_joint_state_age_s")),
        prefetch=bool(_value(node, "prefetch")),
        lookahead=int(_value(node, "lookahead")),
        smooth_seam=int(_value(node, "smooth_seam")),
        stitch=stitch,
        take_over=take_over,
        request_budget=request_budget,
        startup_timeout_s=float(_value(node, "startup_timeout_s")),
        request_timeout_s=float(_value(node, "request_timeout_s")),
        dry_run=bool(_value(node, "dry_run")),
        busy_policy=_choice(node, "busy_policy", BUSY_POLICIES),
        until_topic=str(_value(node, "until_topic")),
        estop_topic=str(_value(node, "estop_topic")),
        estop_start_engaged=bool(_value(node, "estop_start_engaged")),
        estop_heartbeat_s=float(_value(node, "estop_heartbeat_s")),
        feedback_period_s=float(_value(node, "feedback_period_s")),
        diagnostics_period_s=float(_value(node, "diagnostics_period_s")),
        realtime_priority=int(_value(node, "realtime_priority")),
        record_dir=str(_value(node, "record_dir")),
    )


def _take_over(node: Node, stitch: str, align_chunks: bool) -> Tuple[bool, float]:
    """(take_over, request_budget), or ConfigError naming the parameters that cannot go together.
    The node asks the client for the take-over wherever it can be (`take_over=None`), so a mode
    that rules it out would turn it off without a word: refused here instead, as the client's
    `take_over=True` refuses it."""
    take_over = bool(_value(node, "take_over"))
    request_budget = float(_value(node, "request_budget"))
    if take_over:
        lookahead, against = int(_value(node, "lookahead")), []
        if lookahead != 0:
            against.append(f"lookahead is {lookahead}")
        if not bool(_value(node, "prefetch")):
            against.append("prefetch is false")
        if stitch != "continue":
            against.append("align_chunks is true" if align_chunks else f"stitch is {stitch}")
        if against:
            raise ConfigError(f"parameter take_over is true, which needs lookahead 0, prefetch true and stitch "
                              f"continue, but {', '.join(against)}; set take_over: false for each chunk to play "
                              f"after the rows buffered")
    elif request_budget > 0:
        raise ConfigError(f"parameter request_budget is {request_budget:g} but take_over is false: a budget needs "
                          f"the newest chunk to take over (without it the node starts one request per window); "
                          f"set request_budget: 0.0 or take_over: true")
    return take_over, request_budget
