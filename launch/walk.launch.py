"""A legged robot walking on MuJoCo under the whole-body MPC, with the linearization node beside it:

  ros2 launch robot_linearization walk.launch.py robot:=solo12
  ros2 run teleop_twist_keyboard teleop_twist_keyboard    # or any node publishing /cmd_vel

mujoco_robot simulates the robot (/joint_states, /odom, /clock; efforts on /effort_controller/commands),
walking_controller follows /cmd_vel (publishing the efforts, its contact set on /contacts and its planned
path), and the linearization node linearizes each state with the contact set on /contacts; every node but
the simulator runs on its /clock.  robot:= bundled, solo12, anymal or talos (the last three need
example-robot-data), or urdf_path:=, feet:= and posture:= for a robot of one's own; lockstep:=true makes
the simulator wait for each command (a machine slower than real time); rqt:=true opens rqt with the
linearization view."""

import os
import sys

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (ros2 launch's Python: not the package's)
from robot_linearization_parameters import launch_value, parameters_file  # noqa: E402

SOLES = {"talos": [0.2, 0.1]}
"""The soles' centre-of-pressure rectangles (walking/robots.py's) for the linearization node's margins."""


def _nodes(context):
    robot = LaunchConfiguration("robot").perform(context)
    # (a robot of one's own: its URDF, feet and posture, in both the simulator and the controller)
    own = {name: LaunchConfiguration(name).perform(context) for name in ("urdf_path", "feet", "posture")}
    share = get_package_share_directory("robot_linearization")
    simulator, simulator_removal = parameters_file(
        {"robot": robot, **own, "lockstep": launch_value(LaunchConfiguration("lockstep").perform(context))})
    controller, controller_removal = parameters_file({"robot": robot, **own, "use_sim_time": True})
    # the URDF comes on /robot_description (the simulator's), the contact set on /contacts (the controller's)
    node, node_removal = parameters_file({"use_sim_time": True, "use_effort": True,
                                          **({"sole_size": SOLES[robot]} if robot in SOLES else {})})
    actions = [
        simulator_removal, controller_removal, node_removal,
        Node(package="robot_linearization", executable="mujoco_robot", name="mujoco_robot",
             parameters=[simulator], output="screen"),
        Node(package="robot_linearization", executable="walking_controller", name="walking_controller",
             parameters=[controller], output="screen"),
        Node(package="robot_linearization", executable="linearization_node", name="robot_linearization",
             parameters=[os.path.join(share, "config", "linearization.yaml"), node], output="screen"),
    ]
    if launch_value(LaunchConfiguration("rqt").perform(context)) is True:
        actions.append(ExecuteProcess(cmd=["rqt", "--standalone", "robot_linearization/Linearization"],
                                      output="screen"))
    return actions


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="bundled",
                              description="bundled, solo12, anymal or talos (example-robot-data's)"),
        DeclareLaunchArgument("urdf_path", default_value="",
                              description="a URDF of your own robot instead of robot:= (with feet:= and posture:=)"),
        DeclareLaunchArgument("feet", default_value="", description="its feet, comma-separated frames"),
        DeclareLaunchArgument("posture", default_value="", description="its posture, 'joint: value, ...'"),
        DeclareLaunchArgument("lockstep", default_value="false",
                              description="true: the simulator waits for the command answering each state"),
        DeclareLaunchArgument("rqt", default_value="false", description="true: rqt with the linearization view"),
        OpaqueFunction(function=_nodes),
    ])
