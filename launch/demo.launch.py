"""Demo: a simulated quadruped (driven by our own forward dynamics) and the
linearization node.  Then: ``ros2 run rqt_image_view rqt_image_view
/robot_linearization/A_heatmap`` or ``ros2 service call /robot_linearization/validate
std_srvs/srv/Trigger``."""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch_ros.actions import Node


def generate_launch_description():
    share = get_package_share_directory("robot_linearization")
    return LaunchDescription([
        Node(package="robot_linearization", executable="simulated_robot", name="simulated_robot", output="screen"),
        Node(package="robot_linearization", executable="linearization_node", name="robot_linearization",
             parameters=[os.path.join(share, "config", "linearization.yaml"), {"use_effort": True}],
             output="screen"),
    ])
