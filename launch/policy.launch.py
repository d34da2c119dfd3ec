"""On the robot: one sequence_ai_policy node per arm.

    ros2 launch sequence_ai_ros policy.launch.py params_file:=/path/policy.yaml namespace:=left_arm

The API key comes from the environment (SEQUENCES_API_KEY), never from a parameter.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription


def generate_launch_description():
    default_params = os.path.join(get_package_share_directory("sequence_ai_ros"), "config", "policy.yaml")
    return LaunchDescription([
        DeclareLaunchArgument("params_file", default_value=default_params,
                              description="Parameter YAML for sequence_ai_policy"),
        DeclareLaunchArgument("namespace", default_value="",
                              description="Namespace of this arm (one node per arm)"),
        DeclareLaunchArgument("use_sim_time", default_value="false"),
        Node(
            package="sequence_ai_ros",
            executable="policy_node",
            name="sequence_ai_policy",
            namespace=LaunchConfiguration("namespace"),
            parameters=[LaunchConfiguration("params_file"), {"use_sim_time": LaunchConfiguration("use_sim_time")}],
            output="screen",
            emulate_tty=True,
        ),
    ])
