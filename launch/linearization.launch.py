"""Launch the linearization node.

  ros2 launch robot_linearization linearization.launch.py urdf_file:=/path/robot.urdf
  ros2 launch robot_linearization linearization.launch.py namespace:=robot1 \
      joint_states_topic:=/my/joint_states odom_topic:=/my/odom

Topic arguments default to relative names, resolved in the namespace
(/robot1/joint_states …); give absolute names to reach topics outside it.
"""

import os
import sys

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (ros2 launch's Python: not the package's)
from robot_linearization_parameters import launch_value, parameters_file  # noqa: E402


def _node(context):
    # (a file of the launch's own, removed at its end: launch_ros leaves the one it writes for a dict)
    path, removal = parameters_file({
        "urdf_path": LaunchConfiguration("urdf_file").perform(context),
        "floating_base": launch_value(LaunchConfiguration("floating_base").perform(context))})
    return [removal, Node(
        package="robot_linearization",
        executable="linearization_node",
        name="robot_linearization",
        namespace=LaunchConfiguration("namespace"),
        parameters=[LaunchConfiguration("params_file"), path],
        remappings=[("robot_description", LaunchConfiguration("description_topic")),
                    ("joint_states", LaunchConfiguration("joint_states_topic")),
                    ("odom", LaunchConfiguration("odom_topic"))],
        output="screen",
    )]


def generate_launch_description():
    share = get_package_share_directory("robot_linearization")
    arguments = [
        DeclareLaunchArgument("urdf_file", default_value="",
                              description="URDF file; empty: subscribe to the description topic"),
        DeclareLaunchArgument("description_topic", default_value="robot_description",
                              description="std_msgs/String URDF topic (transient local)"),
        DeclareLaunchArgument("joint_states_topic", default_value="joint_states"),
        DeclareLaunchArgument("odom_topic", default_value="odom",
                              description="nav_msgs/Odometry of the base (floating base only)"),
        DeclareLaunchArgument("namespace", default_value=""),
        DeclareLaunchArgument("params_file", default_value=os.path.join(share, "config", "linearization.yaml")),
        DeclareLaunchArgument("floating_base", default_value="true"),
    ]
    return LaunchDescription(arguments + [OpaqueFunction(function=_node)])
