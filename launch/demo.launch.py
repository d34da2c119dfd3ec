"""The simulated arm and the policy node together (the local platform runs separately:
`sequence-ai serve`, then export the SEQUENCES_BASE_URL and SEQUENCES_API_KEY it prints).

    ros2 launch sequence_ai_ros demo.launch.py [namespace:=arm1] [record_dir:=out/recordings]

The policy node comes from policy.launch.py. When either process ends (the policy node cannot
start without SEQUENCES_API_KEY, say), the whole demo ends with it.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, EmitEvent, IncludeLaunchDescription, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription


def generate_launch_description():
    share = get_package_share_directory("sequence_ai_ros")
    passed = ("params_file", "namespace", "log_level", "record_dir", "take_over", "request_budget")
    arguments = {name: LaunchConfiguration(name) for name in passed}
    return LaunchDescription([
        DeclareLaunchArgument("params_file", default_value=os.path.join(share, "config", "demo.yaml"),
                              description="Parameter YAML of both nodes (sequence_ai_policy and sim_robot)"),
        DeclareLaunchArgument("namespace", default_value="",
                              description="Namespace of the arm and its policy node (one pair per namespace)"),
        DeclareLaunchArgument("log_level", default_value="info", choices=["debug", "info", "warn", "error", "fatal"],
                              description="Log level of both nodes"),
        DeclareLaunchArgument("record_dir", default_value="",
                              description="Record each goal to one MCAP file in this folder (overrides the "
                                          "params file's record_dir; empty: the params file decides)"),
        DeclareLaunchArgument("take_over", default_value="", choices=["", "true", "false"],
                              description="The policy node's take_over (overrides the params file's; empty: the "
                                          "params file decides)"),
        DeclareLaunchArgument("request_budget", default_value="",
                              description="The policy node's request_budget, requests/s (overrides the params "
                                          "file's; empty: the params file decides)"),
        Node(package="sequence_ai_ros", executable="sim_robot", name="sim_robot",
             namespace=arguments["namespace"], parameters=[arguments["params_file"]],
             ros_arguments=["--log-level", arguments["log_level"]], output="screen",
             additional_env={"PYTHONUNBUFFERED": "1"}),
        IncludeLaunchDescription(PythonLaunchDescriptionSource(os.path.join(share, "launch", "policy.launch.py")),
                                 launch_arguments=arguments.items()),
        RegisterEventHandler(OnProcessExit(on_exit=[EmitEvent(event=Shutdown(reason="a demo process ended"))])),
    ])
