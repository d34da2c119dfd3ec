"""On the robot: one sequence_ai_policy node per arm.

    ros2 launch sequence_ai_ros policy.launch.py params_file:=/path/policy.yaml namespace:=left_arm
    ros2 launch sequence_ai_ros policy.launch.py record_dir:=$HOME/runs    # one MCAP file per goal
    ros2 launch sequence_ai_ros policy.launch.py request_budget:=4.0        # requests/s (take_over)

The API key comes from the environment (SEQUENCES_API_KEY), never from a parameter. A node that
cannot start (no key, a parameter it cannot run with) logs why at FATAL and exits with status 1.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription


def generate_launch_description():
    default_params = os.path.join(get_package_share_directory("sequence_ai_ros"), "config", "policy.yaml")
    return LaunchDescription([
        DeclareLaunchArgument("params_file", default_value=default_params,
                              description="Parameter YAML of the node; config/policy.yaml documents every parameter"),
        DeclareLaunchArgument("namespace", default_value="",
                              description="Namespace of this arm: the node's topics, services and action are "
                                          "relative to it (one node per arm)"),
        DeclareLaunchArgument("use_sim_time", default_value="false", choices=["true", "false"],
                              description="Follow /clock: pacing, input ages and each goal's max_seconds in "
                                          "simulated time (read once at startup)"),
        DeclareLaunchArgument("log_level", default_value="info", choices=["debug", "info", "warn", "error", "fatal"],
                              description="Log level of the node"),
        DeclareLaunchArgument("record_dir", default_value="",
                              description="Record each goal to one MCAP file in this folder (overrides the "
                                          "params file's record_dir; empty: the params file decides)"),
        DeclareLaunchArgument("take_over", default_value="", choices=["", "true", "false"],
                              description="The newest chunk takes over on arrival (true) or plays after the rows "
                                          "buffered (false); overrides the params file's take_over; empty: the "
                                          "params file decides"),
        DeclareLaunchArgument("request_budget", default_value="",
                              description="Requests per second of motion with take_over, 0-30 (0: the client's "
                                          "default); overrides the params file's request_budget; empty: the "
                                          "params file decides"),
        DeclareLaunchArgument("policy_url", default_value="",
                              description="Policy server: ws://host:port for an openpi server (model: a card "
                                          "such as pi05_droid); empty: the params file decides"),
        OpaqueFunction(function=_policy_node),
    ])


def _policy_node(context):
    overrides = {"use_sim_time": LaunchConfiguration("use_sim_time")}
    record_dir = LaunchConfiguration("record_dir").perform(context)
    if record_dir:  # only when given: an empty default must not clear the params file's
        overrides["record_dir"] = os.path.expanduser(record_dir)
    policy_url = LaunchConfiguration("policy_url").perform(context)
    if policy_url:
        overrides["policy_url"] = policy_url
    take_over = LaunchConfiguration("take_over").perform(context)
    if take_over:
        overrides["take_over"] = take_over == "true"
    request_budget = LaunchConfiguration("request_budget").perform(context)
    if request_budget:  # a double for the node even when written 2 (the node refuses an integer)
        try:
            overrides["request_budget"] = float(request_budget)
        except ValueError:
            raise ValueError(f"request_budget:={request_budget} is not a number of requests per second") from None
    return [
        Node(
            package="sequence_ai_ros",
            executable="policy_node",
            name="sequence_ai_policy",
            namespace=LaunchConfiguration("namespace"),
            parameters=[LaunchConfiguration("params_file"), overrides],
            ros_arguments=["--log-level", LaunchConfiguration("log_level")],
            output="screen",
            # No emulate_tty: a redirected log stays free of colour codes. Python output unbuffered.
            additional_env={"PYTHONUNBUFFERED": "1"},
        ),
    ]
