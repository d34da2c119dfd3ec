"""From a policy row to a joint command (sequence_ai_ros/control/commands.py): only the conversion
the catalogue row declares, refused at startup naming why otherwise."""

from __future__ import annotations

import dataclasses

import pytest

from sequence_ai._catalogue._models import lookup
from sequence_ai_ros.control.commands import CommandMapping
from sequence_ai_ros.parameters import PARAMETERS, ConfigError, NodeConfig

pytestmark = pytest.mark.ros

DEFAULTS = NodeConfig(**{name: p.config_value(name, p.default) for name, p in PARAMETERS.items()})
HOME = [0.0, -0.5, 0.0, -2.2, 0.0, 1.8, 0.8]


@pytest.fixture
def model(platform):
    return lambda model_id: lookup(model_id, base_url=platform.base_url, api_key=platform.api_key)


def test_a_displacement_row_becomes_its_q_ref_plus_the_row_and_needs_that_q_ref(model):
    mapping = CommandMapping(model("pi05-droid"), DEFAULTS)
    command = mapping.command([0.1, -0.2, 0.0, 0.05, 0.0, 0.0, 0.3, 1.0], HOME)
    assert command.interface == "position"
    assert list(command.joints) == pytest.approx([h + d for h, d in zip(HOME, [0.1, -0.2, 0.0, 0.05, 0.0, 0.0, 0.3])])
    assert command.gripper == pytest.approx(DEFAULTS.gripper_closed_position), "gripper 1 is closed"
    with pytest.raises(ValueError, match="without the joint state its chunk was computed from"):
        mapping.command([0.1] * 7 + [0.0], None)


def test_an_absolute_row_is_the_target_itself_and_the_same_rows_drive_a_velocity_controller(model):
    cosmos = model("cosmos3-edge-policy-droid")
    target = [0.2, -0.4, 0.1, -2.0, 0.0, 1.7, 0.9, 0.0]
    assert list(CommandMapping(cosmos, DEFAULTS).command(target, None).joints) == pytest.approx(target[:7])
    velocity = CommandMapping(model("pi05-droid"), dataclasses.replace(DEFAULTS, command_interface="velocity"))
    command = velocity.command([0.1] * 7 + [0.0], None)
    assert command.interface == "velocity" and list(command.joints) == pytest.approx([0.1] * 7)


@pytest.mark.parametrize("model_id, changes, says", [
    ("cosmos3-edge-policy-droid", {"command_interface": "velocity"},
     "declares no verified conversion to joint velocities; set command_interface: position"),
    ("pi05-droid", {"joint_names": ("a", "b")}, "returns rows of 8 values; joint_names has 2 joints"),
])
def test_a_mapping_the_model_does_not_declare_is_refused_at_startup_naming_why(model, model_id, changes, says):
    with pytest.raises(ConfigError, match=says):
        CommandMapping(model(model_id), dataclasses.replace(DEFAULTS, **changes))
