"""Demo: the bundled quadruped standing on its four feet (simulated by our own
constrained forward dynamics) and the linearization node, which linearizes it with
the same four point contacts (contacts:=none for a floating robot).  Then:
``ros2 run rqt_image_view rqt_image_view /robot_linearization/A_heatmap``,
``ros2 topic echo /robot_linearization/contact_forces`` or
``ros2 service call /robot_linearization/validate std_srvs/srv/Trigger``."""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

FEET = "front_left_foot, front_right_foot, hind_left_foot, hind_right_foot"


def _nodes(context):
    contacts = LaunchConfiguration("contacts").perform(context)
    contacts = "" if contacts.strip().lower() == "none" else contacts
    share = get_package_share_directory("robot_linearization")
    return [
        Node(package="robot_linearization", executable="simulated_robot", name="simulated_robot",
             parameters=[{"contacts": contacts}], output="screen"),
        Node(package="robot_linearization", executable="linearization_node", name="robot_linearization",
             parameters=[os.path.join(share, "config", "linearization.yaml"),
                         {"use_effort": True, "contacts": contacts}], output="screen"),
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("contacts", default_value=FEET,
                              description="frames held by the ground, in both nodes; 'none': floating"),
        OpaqueFunction(function=_nodes),
    ])
