"""The policy node's companion nodes: its control clock, its inputs, and (with estop_topic) its
e-stop's subscription (estop/topic.py).

The control timer and the input subscriptions each live on a node of their own in the same process,
spun by an executor of its own (node.py `main`), so camera and joint-state callbacks never delay a
tick (docs/ROS.md "One clock"). They are named after the policy node (`<name>_clock`,
`<name>_inputs`) in its namespace.

`ros2 launch` names a node with a process-wide remap (`-r __node:=NAME`), which would give all
three nodes that one name: duplicate names in `ros2 node list`, and `ros2 param` answered by
whichever node replies first. So the companions take the process's ROS arguments (topic remaps,
namespace, log levels) without the name remaps, and start no parameter services of their own.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence, Tuple

import rclpy
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage, Image, JointState

from .inputs.images import FrameRule
from .inputs.samples import LatestSample, joint_check
from .parameters import NodeConfig
from .qos import LATEST

__all__ = ["companion_arguments", "companion_node", "subscribe_inputs"]

# ROS arguments that take a value (rcl's --ros-args syntax).
_WITH_VALUE = {"-r", "--remap", "-p", "--param", "--params-file", "-e", "--enclave", "--log-level",
               "--log-config-file", "--log-file-name"}
_NAME_RULES = {"__node", "__name"}


def _renames_node(rule: str) -> bool:
    """`__node:=x`, `__name:=x` or a node-targeted `other:__node:=x`."""
    key = rule.split(":=", 1)[0]
    return key.rsplit(":", 1)[-1] in _NAME_RULES


def companion_arguments(argv: Sequence[str]) -> List[str]:
    """The ROS arguments in `argv` (every --ros-args section) without node-name remaps."""
    kept: List[str] = []
    inside = False
    tokens = iter(argv)
    for token in tokens:
        if token == "--ros-args":
            inside = True
        elif not inside:
            continue
        elif token == "--":
            inside = False
        elif token in _WITH_VALUE:
            value = next(tokens, None)
            if value is None:
                break
            if not (token in ("-r", "--remap") and _renames_node(value)):
                kept += [token, value]
        else:
            kept.append(token)
    return ["--ros-args", *kept] if kept else []


def companion_node(parent: Node, role: str, argv: Sequence[str]) -> Node:
    """A node named `<parent>_<role>` beside `parent`, with its ROS arguments but not its name."""
    return rclpy.create_node(
        f"{parent.get_name()}_{role}", namespace=parent.get_namespace(), context=parent.context,
        cli_args=companion_arguments(argv), use_global_arguments=False, start_parameter_services=False,
        parameter_overrides=[parent.get_parameter("use_sim_time")],
    )


def subscribe_inputs(node: Node, config: NodeConfig, model: Any,
                     now_s: Callable[[], float]) -> Tuple[LatestSample, Dict[str, LatestSample]]:
    """The joint-state and camera caches, fed by subscriptions on `node` (the inputs companion).
    Joint states are checked as they arrive, frames against the sizes `model` takes (inputs/samples.py)."""
    joint_states = LatestSample(node.resolve_topic_name(config.joint_states_topic), config.max_joint_state_age_s,
                                now_s, check=joint_check(config.joint_names, config.gripper_joint))
    node.create_subscription(JointState, config.joint_states_topic, joint_states.store, LATEST)
    cameras: Dict[str, LatestSample] = {}
    for view, topic, compressed in zip(config.camera_views, config.camera_topics, config.camera_compressed):
        sample = cameras[view] = LatestSample(node.resolve_topic_name(topic), config.max_image_age_s, now_s,
                                              frame_rule=FrameRule(model))
        node.create_subscription(CompressedImage if compressed else Image, topic, sample.store, LATEST)
    return joint_states, cameras
