"""The simulated arm and the policy node together (the local platform runs separately:
`sequence-ai serve`, then export the SEQUENCES_BASE_URL and SEQUENCES_API_KEY it prints).

    ros2 launch sequence_ai_ros demo.launch.py
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription


def generate_launch_description():
    default_params = os.path.join(get_package_share_directory("sequence_ai_ros"), "config", "demo.yaml")
    params = LaunchConfiguration("params_file")
    return LaunchDescription([
        DeclareLaunchArgument("params_file", default_value=default_params),
        Node(package="sequence_ai_ros", executable="sim_robot", name="sim_robot", parameters=[params], output="screen"),
        Node(package="sequence_ai_ros", executable="policy_node", name="sequence_ai_policy",
             parameters=[params], output="screen", emulate_tty=True),
    ])
