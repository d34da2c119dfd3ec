"""The node's parameter table (sequence_ai_ros/parameters.py): config/policy.yaml documents every
entry at its default, the declaration carries the table's descriptors, and `read()` refuses bad
values naming the parameter. A node of its own context, never spun: nothing here needs a graph."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import rclpy
import yaml
from rclpy.context import Context
from rclpy.parameter import Parameter as RosParameter

import sequence_ai
from sequence_ai_ros import parameters
from sequence_ai_ros.parameters import PARAMETERS, ConfigError, NodeConfig

pytestmark = pytest.mark.ros
ROOT = Path(__file__).resolve().parents[2]


def _node_parameters(name: str) -> dict:
    return yaml.safe_load((ROOT / "config" / name).read_text())["/**/sequence_ai_policy"]["ros__parameters"]


def _same(default, value) -> bool:
    if isinstance(default, list):
        return isinstance(value, list) and len(value) == len(default) and all(map(_same, default, value))
    if isinstance(default, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isclose(value, default)
    return type(value) is type(default) and value == default


def _takes(parameter, value) -> bool:
    """The value is of the parameter's type and inside its range or choices."""
    def typed(v) -> bool:
        return type(v) is parameter.kind or (parameter.kind is float and type(v) is int)

    if isinstance(parameter.default, list):
        return isinstance(value, list) and all(map(typed, value))
    if not typed(value) or (parameter.choices and value not in parameter.choices):
        return False
    bounds = parameter.floats or parameter.ints
    return bounds is None or bounds[0] <= value <= bounds[1]


def test_policy_yaml_documents_every_parameter_at_its_default():
    documented = _node_parameters("policy.yaml")
    assert list(documented) == list(PARAMETERS), "policy.yaml lists the table's parameters in its order"
    wrong = {name: (documented[name], p.default) for name, p in PARAMETERS.items() if not _same(p.default, documented[name])}
    assert not wrong, f"(policy.yaml, table default) differ: {wrong}"


def test_demo_yaml_sets_only_declared_parameters_to_values_they_take():
    demo = _node_parameters("demo.yaml")
    assert set(demo) <= set(PARAMETERS), f"demo.yaml sets undeclared parameters {set(demo) - set(PARAMETERS)}"
    refused = {name: value for name, value in demo.items() if not _takes(PARAMETERS[name], value)}
    assert not refused, refused


def test_the_table_gives_node_config_its_fields_and_the_client_its_stitch_modes():
    fields = {f.name: f.type for f in dataclasses.fields(NodeConfig)}
    assert list(fields) == list(PARAMETERS)
    assert PARAMETERS["stitch"].choices == sequence_ai.STITCH_MODES == ("continue", "align", "none")
    assert [n for n, p in PARAMETERS.items() if p.per_joint] == ["joint_position_min", "joint_position_max",
                                                                 "joint_velocity_max"]


@pytest.fixture
def node_with():
    """A node given these parameter values (None: given without a value, as `-p name:=`)."""
    context = Context()
    rclpy.init(context=context)
    nodes = []

    def make(**values):
        overrides = [RosParameter(k) if v is None else RosParameter(k, value=v) for k, v in values.items()]
        nodes.append(rclpy.create_node(f"parameters_{len(nodes)}", context=context, start_parameter_services=False,
                                       parameter_overrides=overrides))
        return nodes[-1]

    try:
        yield make
    finally:
        for node in nodes:
            node.destroy_node()
        rclpy.shutdown(context=context)


def _read(node):
    parameters.declare(node)
    return parameters.read(node)


def test_defaults_read_into_a_config_of_tuples_and_every_parameter_is_read_only(node_with):
    node = node_with()
    config = _read(node)
    for name, parameter in PARAMETERS.items():
        value = getattr(config, name)
        expected = tuple(parameter.default) if isinstance(parameter.default, list) else parameter.default
        assert value == expected and type(value) is type(expected), name
        descriptor = node.describe_parameter(name)
        assert descriptor.read_only and descriptor.description == parameter.description, name
        ranges = [(r.from_value, r.to_value) for r in [*descriptor.floating_point_range, *descriptor.integer_range]]
        assert ranges == [r for r in (parameter.floats, parameter.ints) if r is not None], name
    assert node.describe_parameter("use_sim_time").read_only
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.stitch = "none"


def test_align_chunks_is_the_older_spelling_of_stitch_align(node_with):
    config = _read(node_with(align_chunks=True, take_over=False))
    assert config.stitch == "align" and config.align_chunks and not config.take_over


@pytest.mark.parametrize("values, says", [
    ({"command_type": "twist"}, "parameter command_type is 'twist'; expected one of float64_multi_array, "
                                "joint_trajectory"),
    ({"stitch": "bogus"}, "parameter stitch is 'bogus'; expected one of continue, align, none"),
    ({"busy_policy": "queue"}, "parameter busy_policy is 'queue'; expected one of reject, preempt"),
    ({"record_dir": None}, "parameter record_dir is not set (a value of only blanks"),
    ({"max_step_rad": 5.0}, "parameter max_step_rad: Invalid parameter value (5.0)"),
    ({"lookahead": 1.5}, "parameter lookahead: Trying to set parameter 'lookahead' to '1.5' of type 'DOUBLE'"),
    ({"camera_topics": ["x"]}, "camera_views (2), camera_topics (1) and camera_compressed (2) must have one "
                               "entry per camera"),
    ({"joint_names": ["a", "b"]}, "parameter joint_position_min has 7 values; joint_names has 2"),
    ({"joint_velocity_max": [1.0]}, "parameter joint_velocity_max has 1 values; joint_names has 7"),
    ({"joint_position_min": [0.0] * 7, "joint_position_max": [0.0] * 7},
     "joint_position_min must be below joint_position_max for every joint"),
    ({"prefetch": False, "stitch": "none", "lookahead": 3},
     "parameter take_over is true, which needs lookahead 0, prefetch true and stitch continue, but lookahead "
     "is 3, prefetch is false, stitch is none; set take_over: false"),
    ({"take_over": False, "request_budget": 2.0}, "parameter request_budget is 2 but take_over is false"),
    ({"gripper_open_position": 0.5, "gripper_closed_position": 0.5},
     "gripper_open_position and gripper_closed_position must differ"),
], ids=lambda v: ",".join(v) if isinstance(v, dict) else None)
def test_a_value_the_node_cannot_run_with_is_refused_naming_it(node_with, values, says):
    with pytest.raises(ConfigError) as refused:
        _read(node_with(**values))
    assert str(refused.value).startswith(says), str(refused.value)
