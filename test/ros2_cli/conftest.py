"""The system the CLI suite drives, launched once for the whole module with the real tools:

    left arm   ros2 launch sequence_ai_ros policy.launch.py namespace:=/left_arm params_file:=... record_dir:=...
               ros2 run sequence_ai_ros sim_robot --ros-args -r __ns:=/left_arm --params-file ...
    right arm  ros2 launch sequence_ai_ros demo.launch.py namespace:=/right_arm params_file:=... request_budget:=3

Both against the session's local platform. The suite skips, in one line, where no `ros2` command
is installed (make setup installs it from ../shared/ros2-cli-wheels).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator

import pytest
import yaml
from ros2_commands import Background, Ros2, status_ok

from sequence_ai_ros.tools.processes import config_path, ros2_cli, ros_environment

POLICY = "/**/sequence_ai_policy"
SIM = "/**/sim_robot"
READY_S = 90.0
RIGHT_REQUEST_BUDGET = 3  # requests/s, the right arm's launch argument


@dataclass
class Arms:
    ros2: Ros2
    left: Background  # ros2 launch policy.launch.py
    left_sim: Background  # ros2 run sim_robot
    right: Background  # ros2 launch demo.launch.py
    diagnostics: Background  # ros2 topic echo /diagnostics
    no_key: Background  # ros2 launch demo.launch.py, without SEQUENCES_API_KEY
    show_args: Dict[str, Background]  # launch file -> ros2 launch ... --show-args
    params: dict  # the policy node's parameters, as in the params file
    left_recordings: Path  # the left arm's record_dir (its launch argument)
    right_request_budget: int  # the right arm's request_budget (its demo launch's argument)


def _params_file(path) -> dict:
    """config/demo.yaml with an e-stop topic, and input ages a loaded test machine can keep."""
    document = yaml.safe_load(config_path("demo.yaml").read_text())
    document[POLICY]["ros__parameters"].update(estop_topic="estop", estop_start_engaged=False, max_image_age_s=2.0,
                                               max_joint_state_age_s=2.0)
    path.write_text(yaml.safe_dump(document))
    return document[POLICY]["ros__parameters"]


@pytest.fixture(scope="module")
def arms(local_platform, tmp_path_factory) -> Iterator[Arms]:
    executable = ros2_cli()
    if executable is None:
        pytest.skip("ros2 CLI missing: no ../shared/ros2-cli-wheels installed by make setup and no system ros2 on PATH")
    tmp = tmp_path_factory.mktemp("ros2_cli")
    params_path = tmp / "arms.yaml"
    params = _params_file(params_path)
    env = ros_environment(local_platform.env())
    ros2 = Ros2(executable, env)
    try:
        show_args = {name: ros2.start("launch", "sequence_ai_ros", name, "--show-args")
                     for name in ("policy.launch.py", "demo.launch.py")}
        diagnostics = ros2.start("topic", "echo", "/diagnostics", "diagnostic_msgs/msg/DiagnosticArray")
        left = ros2.start("launch", "sequence_ai_ros", "policy.launch.py", "namespace:=/left_arm",
                          f"params_file:={params_path}", f"record_dir:={tmp / 'left-recordings'}")
        left_sim = ros2.start("run", "sequence_ai_ros", "sim_robot", "--ros-args", "-r", "__ns:=/left_arm",
                              "--params-file", str(params_path))
        # request_budget through the demo launch, written as an integer: it reaches the node as a double
        right = ros2.start("launch", "sequence_ai_ros", "demo.launch.py", "namespace:=/right_arm",
                           f"params_file:={params_path}", f"request_budget:={RIGHT_REQUEST_BUDGET}")
        without_key = {k: v for k, v in env.items() if k != "SEQUENCES_API_KEY"}
        no_key = Background([executable, "launch", "sequence_ai_ros", "demo.launch.py", "namespace:=/no_key_arm"],
                            without_key)
        ros2.started.append(no_key)
        for ns in ("/left_arm", "/right_arm"):
            assert diagnostics.wait_for(lambda text, ns=ns: status_ok(text, ns), READY_S), \
                f"{ns} never reported ready with fresh inputs:\n{left.text[-2000:]}\n{right.text[-2000:]}"
        yield Arms(ros2, left, left_sim, right, diagnostics, no_key, show_args, params, tmp / "left-recordings",
                   RIGHT_REQUEST_BUDGET)
    finally:
        ros2.stop_all()
        ros2.run("daemon", "stop", timeout_s=30.0)  # started by the first command of this module
