"""The policy node's start: config/policy.yaml loaded as a params file, and recovery from a
warm-up that ran out of startup_timeout_s."""

from __future__ import annotations

import math

import pytest
import yaml
from eventually import wait_until
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters, ListParameters
from ros_harness import ArmDouble, Planner
from sequence_ai_ros.action import Act

from sequence_ai_ros.tools.processes import NodeProcess, config_path

pytestmark = [pytest.mark.ros, pytest.mark.slow]

# Parameters every rclpy node declares by itself.
ROS_OWN = {"use_sim_time", "start_type_description_service"}
MODEL_OWN = {"control_hz"}  # reported by the node, the model's; never in a params file


def _python_value(value):
    """An rcl_interfaces ParameterValue as the Python value yaml.safe_load gives for it."""
    kind = value.type
    if kind == ParameterType.PARAMETER_BOOL:
        return value.bool_value
    if kind == ParameterType.PARAMETER_INTEGER:
        return value.integer_value
    if kind == ParameterType.PARAMETER_DOUBLE:
        return value.double_value
    if kind == ParameterType.PARAMETER_STRING:
        return value.string_value
    if kind == ParameterType.PARAMETER_BOOL_ARRAY:
        return list(value.bool_array_value)
    if kind == ParameterType.PARAMETER_INTEGER_ARRAY:
        return list(value.integer_array_value)
    if kind == ParameterType.PARAMETER_DOUBLE_ARRAY:
        return list(value.double_array_value)
    if kind == ParameterType.PARAMETER_STRING_ARRAY:
        return list(value.string_array_value)
    return ("unset or unknown type", kind)


def _same(expected, actual) -> bool:
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and all(map(_same, expected, actual))
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, float):
        return isinstance(actual, float) and math.isclose(expected, actual, rel_tol=0, abs_tol=1e-12)
    return type(expected) is type(actual) and expected == actual


def test_policy_yaml_loads_into_the_node_with_every_value_and_type(ros, platform, tmp_path):
    path = config_path("policy.yaml")
    document = yaml.safe_load(path.read_text())
    (key,) = document  # one node entry: /**/sequence_ai_policy
    documented = document[key]["ros__parameters"]
    assert len(documented) >= 25
    # A second file under the same node key, with a value that is not the default: the node only
    # reports it if that key reaches the node (a key that matched nothing would leave defaults,
    # indistinguishable from policy.yaml's values, which mostly are the defaults).
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({key: {"ros__parameters": {"request_timeout_s": 29.5}}}))
    ns = "/yaml_arm"
    node = f"{ns}/sequence_ai_policy"
    with NodeProcess("policy_node", params_files=[path, overlay], namespace=ns, env=platform.env(),
                     log_path=tmp_path / "policy_node.log") as process:
        planner = Planner(ros.node, ns)
        lister = ros.node.create_client(ListParameters, f"{node}/list_parameters")
        getter = ros.node.create_client(GetParameters, f"{node}/get_parameters")
        assert wait_until(lambda: lister.service_is_ready() or not process.running, 30.0)
        assert process.running, "the node refused policy.yaml:\n" + process.output()[-2000:]
        declared = set(planner.call(lister, ListParameters.Request(depth=0), attempts=3).result.names)
        names = sorted(documented)
        values = planner.call(getter, GetParameters.Request(names=names), attempts=3).values
    assert set(documented) <= declared, f"in policy.yaml but not declared: {set(documented) - declared}"
    assert declared - ROS_OWN - MODEL_OWN == set(documented), \
        f"declared but not in policy.yaml: {declared - ROS_OWN - MODEL_OWN - set(documented)}"
    got = {name: _python_value(value) for name, value in zip(names, values)}
    expected = {**documented, "request_timeout_s": 29.5}
    wrong = {name: (expected[name], got[name]) for name in names if not _same(expected[name], got[name])}
    assert not wrong, f"(policy.yaml, node) differ: {wrong}"


def test_a_goal_after_the_startup_timeout_warms_again_and_the_node_recovers(ros, policy_node, platform):
    platform.fault("warming", seconds=120.0, eta_s=120)
    process, ns = policy_node(platform, startup_timeout_s=1.0)
    arm = ArmDouble(ros.node, ns)
    planner = Planner(ros.node, ns)
    gave_up = lambda: any("startup_timeout_s" in w.message and not w.warming for w in planner.warming)  # noqa: E731
    assert wait_until(lambda: gave_up() or not process.running, 30.0), process.output()[-2000:]
    assert process.running and not planner.ready()

    # A goal now starts another warm-up; it is itself rejected, saying so.
    refused = planner.rejected("pick up the red cube", max_seconds=1.0)
    assert "startup_timeout_s" in refused and "warming it again" in refused, refused
    assert wait_until(lambda: planner.warming[-1].warming, 5.0), "no new warm-up reported"
    again = planner.rejected("pick up the red cube", max_seconds=1.0)
    assert "not ready yet (warming" in again, again
    assert arm.command_log() == [], "a rejected goal moves nothing"

    # The worker comes up: the same node process reports ready and runs the next goal.
    platform.clear_faults("warming")
    assert wait_until(lambda: (planner.ready() and planner.inputs_fresh) or not process.running, 15.0), \
        process.output()[-2000:]
    response = Planner.result(planner.send("pick up the red cube", max_seconds=1.0), timeout_s=30.0)
    assert response.status == 4, response.result.message  # GoalStatus.STATUS_SUCCEEDED
    assert response.result.status == Act.Result.STATUS_TIMEOUT and response.result.outcome.actions > 0
    assert process.running


def test_a_node_that_cannot_start_says_why_in_the_log_read_back_from_a_str_path(platform, tmp_path):
    # NodeProcess takes the log path as a str too (bench_ros_jitter.py passes one); output()
    # reads it back for the failure message.
    log = str(tmp_path / "policy_node.log")
    with NodeProcess("policy_node", namespace="/bad_arm", env=platform.env(), log_path=log,
                     parameters={"gripper_open_position": 0.5, "gripper_closed_position": 0.5}) as process:
        assert wait_until(lambda: not process.running, 60.0)
        text = process.output()
    assert process.process.returncode == 1
    assert "cannot start" in text and "gripper_open_position and gripper_closed_position must differ" in text


@pytest.mark.parametrize("given", ["-p ~nosuchuser/x", "-p blanks", "params file blanks"])
def test_a_record_dir_of_blanks_or_of_no_users_home_is_a_fatal_line_and_exit_1(platform, tmp_path, given):
    # `-p record_dir:=   ` reaches the node as no value at all (YAML null); a params file or a
    # launch argument gives a string of blanks. Both used to end in a traceback, as did ~nosuchuser.
    how, value = given.split(" ", 1)
    files, parameters = [], {}
    if how == "params":
        files.append(tmp_path / "blanks.yaml")
        files[0].write_text(yaml.safe_dump({"/**/sequence_ai_policy": {"ros__parameters": {"record_dir": "   "}}}))
    else:
        parameters["record_dir"] = "   " if value == "blanks" else value
    with NodeProcess("policy_node", namespace="/record_dir_arm", params_files=files, parameters=parameters,
                     env=platform.env(), log_path=tmp_path / "policy_node.log") as process:
        assert wait_until(lambda: not process.running, 60.0)
        text = process.output()
    assert process.process.returncode == 1, text[-2000:]
    assert "FATAL" in text and "cannot start" in text and "record_dir" in text, text[-2000:]
    assert "Traceback" not in text, text[-2000:]


@pytest.mark.parametrize("given, named", [
    ({"take_over": False, "request_budget": 2.0}, ("request_budget is 2", "take_over is false")),
    ({"lookahead": 1}, ("take_over is true", "lookahead is 1")),
    ({"align_chunks": True}, ("take_over is true", "align_chunks is true")),
    ({"request_budget": 50.0}, ("request_budget", "out of range", "30.0")),
], ids=["budget without take_over", "take_over with lookahead 1", "take_over with align_chunks", "budget above 30"])
def test_a_take_over_or_request_budget_the_node_cannot_run_with_is_a_fatal_line_and_exit_1(platform, tmp_path, given,
                                                                                           named):
    # take_over: true asks the client for the take-over wherever the mode allows it; a mode that
    # rules it out would turn it off without a word, so the node refuses to start instead.
    with NodeProcess("policy_node", namespace="/take_over_arm", parameters=given, env=platform.env(),
                     log_path=tmp_path / "policy_node.log") as process:
        assert wait_until(lambda: not process.running, 60.0)
        text = process.output()
    assert process.process.returncode == 1, text[-2000:]
    fatal = [line for line in text.splitlines() if "FATAL" in line and "cannot start" in line]
    assert fatal and all(part in fatal[0] for part in named), text[-2000:]
    assert "Traceback" not in text, text[-2000:]
