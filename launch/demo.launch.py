"""Demo: the bundled quadruped trotting in place (simulated by our own constrained
forward dynamics, each touchdown a rigid impact) and the linearization node, which
follows its contact schedule on /contacts (gait:=none: standing on its four feet;
contacts:=none for a floating robot).  Then:
``ros2 run rqt_image_view rqt_image_view /robot_linearization/A_heatmap``,
``ros2 topic echo /robot_linearization/contact_forces`` or
``ros2 service call /robot_linearization/validate robot_linearization/srv/Validate "{}"``."""

import os
import sys

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (ros2 launch's Python: not the package's)
from robot_linearization_parameters import parameters_file  # noqa: E402

FEET = "front_left_foot, front_right_foot, hind_left_foot, hind_right_foot"


def _nodes(context):
    contacts = LaunchConfiguration("contacts").perform(context)
    contacts = "" if contacts.strip().lower() == "none" else contacts
    # the gait is the bundled quadruped's on its feet: it sets the contacts, which both nodes start with
    gait = LaunchConfiguration("gait").perform(context) if contacts == FEET else "none"
    share = get_package_share_directory("robot_linearization")
    # (files of the launch's own, removed at its end: launch_ros leaves the ones it writes for dicts)
    robot, robot_removal = parameters_file({"contacts": contacts, "gait": gait})
    node, node_removal = parameters_file({"use_effort": True, "contacts": contacts})
    return [
        robot_removal, node_removal,
        Node(package="robot_linearization", executable="simulated_robot", name="simulated_robot",
             parameters=[robot], output="screen"),  # /contacts: the schedule
        Node(package="robot_linearization", executable="linearization_node", name="robot_linearization",
             parameters=[os.path.join(share, "config", "linearization.yaml"), node], output="screen"),
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("contacts", default_value=FEET,
                              description="frames held by the ground, in both nodes; 'none': floating"),
        DeclareLaunchArgument("gait", default_value="trot",
                              description="'trot': the quadruped trots in place and publishes its schedule on "
                                          "/contacts, which the node follows (only with the default contacts); "
                                          "'none': it stands"),
        OpaqueFunction(function=_nodes),
    ])
