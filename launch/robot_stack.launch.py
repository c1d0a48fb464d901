"""The stock ROS 2 robot stack with the linearization node beside it:
robot_state_publisher (the URDF on /robot_description, TF), joint_state_publisher
(joint positions on /joint_states, velocity and effort empty, as it does by
default) and the node, linearizing a fixed-base robot at those positions and zero
joint velocity.

  ros2 launch robot_linearization robot_stack.launch.py urdf_file:=/path/ur5.urdf

The URDF goes to robot_state_publisher through a parameters file the launch writes and removes
at its end (never through ``-p robot_description:=...``, which rcl parses as YAML and which fails
on many real URDFs).  For a floating base, set floating_base:=true and
give the node a nav_msgs/Odometry of the base on odom_topic.
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


def _nodes(context):
    urdf_file = LaunchConfiguration("urdf_file").perform(context)
    if not os.path.isfile(urdf_file):
        raise RuntimeError(f"urdf_file:={urdf_file!r} is not a file (give the robot's URDF)")
    with open(urdf_file) as f:
        description = f.read()
    share = get_package_share_directory("robot_linearization")
    # (files of the launch's own, removed at its end: launch_ros leaves the ones it writes for dicts)
    description_file, description_removal = parameters_file({"robot_description": description})
    rate_file, rate_removal = parameters_file(
        {"rate": launch_value(LaunchConfiguration("joint_state_rate").perform(context))})
    node_file, node_removal = parameters_file({
        "urdf_path": urdf_file,
        "floating_base": launch_value(LaunchConfiguration("floating_base").perform(context))})
    return [
        description_removal, rate_removal, node_removal,
        Node(package="robot_state_publisher", executable="robot_state_publisher", name="robot_state_publisher",
             parameters=[description_file], output="screen"),
        Node(package="joint_state_publisher", executable="joint_state_publisher", name="joint_state_publisher",
             parameters=[rate_file], output="screen"),
        Node(package="robot_linearization", executable="linearization_node", name="robot_linearization",
             parameters=[os.path.join(share, "config", "linearization.yaml"), node_file],
             remappings=[("odom", LaunchConfiguration("odom_topic"))], output="screen"),
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("urdf_file", description="the robot's URDF file (required)"),
        DeclareLaunchArgument("floating_base", default_value="false",
                              description="true: the root link floats and odom_topic must carry its odometry"),
        DeclareLaunchArgument("odom_topic", default_value="odom", description="nav_msgs/Odometry of the base"),
        DeclareLaunchArgument("joint_state_rate", default_value="10",
                              description="joint_state_publisher's rate [Hz] (its default, 10)"),
        OpaqueFunction(function=_nodes),
    ])
