"""The walking controller and the MuJoCo robot as the ROS graph connects them, without rclpy: the messages
are the real ROS 2 definitions (rosbags), the loop is the one walk.launch.py makes (the robot publishes its
state, the controller answers with efforts, lockstep); the robot on MuJoCo, the controller's MPC."""

import math

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="the MuJoCo robot needs mujoco (pip install 'robot_linearization[mujoco]')")

from robot_linearization.contacts import as_contacts  # noqa: E402
from robot_linearization.ros.messages import RosbagsFactory, stamp_to_ns  # noqa: E402
from robot_linearization.ros.mujoco_robot import MuJoCoRobot, MuJoCoRobotSettings  # noqa: E402
from robot_linearization.ros.walking_control import InputSettings, WalkingControl  # noqa: E402
from robot_linearization.spatial import quaternion_pose  # noqa: E402
from robot_linearization.walking.controller import ControllerSettings  # noqa: E402
from robot_linearization.walking.robots import walker  # noqa: E402

FACTORY = RosbagsFactory()


@pytest.fixture(scope="module")
def bundled():
    return walker("bundled")


def twist(forward=0.0, lateral=0.0, yaw_rate=0.0):
    vector = lambda x, y, z: FACTORY.make("geometry_msgs/msg/Vector3", x=x, y=y, z=z)  # noqa: E731
    return FACTORY.make("geometry_msgs/msg/Twist", linear=vector(forward, lateral, 0.0),
                        angular=vector(0.0, 0.0, yaw_rate))


def base_position(odometry) -> np.ndarray:
    p = odometry.pose.pose.position
    return np.array([p.x, p.y, p.z])


def run(robot, control, seconds, command=None, until=math.inf):
    """The graph's loop for ``seconds`` of simulated time: what the robot published and the controller
    answered, per period.  ``command`` (a Twist) is published every 0.1 s up to ``until`` [s]."""
    published = []
    for _ in range(round(seconds / robot.period)):
        messages = robot.messages(FACTORY)
        now = stamp_to_ns(messages["clock"].clock)
        if command is not None and robot.time < until - 1e-9 and robot.ticks % round(0.1 / robot.period) == 0:
            control.on_velocity_command(command, now)
        control.on_odometry(messages["odom"])
        answer = control.on_joint_state(messages["joint_states"], now, FACTORY)
        if "efforts" in answer:
            assert robot.command(answer["efforts"].data) is None
        published.append((messages, answer, control.controller.followed.copy()))
        robot.advance()
    return published


@pytest.mark.parametrize("lag", [0, 1])
def test_a_command_that_answers_a_state_one_period_late_walks_at_the_default_rate(bundled, lag):
    """In real time a command answering a state is applied from the next period on: at the simulator's
    default rate (500 Hz) the bundled robot still trots forward at 0.3 m/s for 2 s with its commands one
    period late (lag 1), as with none; at 100 Hz one period late it falls (docs/ros.md)."""
    robot, control = MuJoCoRobot(bundled), WalkingControl(bundled)
    assert robot.period == pytest.approx(0.002)
    pending, heights, start = [], [], None
    command = twist(0.3)
    for _ in range(round(2.0 / robot.period)):
        messages = robot.messages(FACTORY)
        now = stamp_to_ns(messages["clock"].clock)
        if robot.ticks % 50 == 0:
            control.on_velocity_command(command, now)
        control.on_odometry(messages["odom"])
        pending.append(control.on_joint_state(messages["joint_states"], now, FACTORY).get("efforts"))
        if len(pending) > lag and pending[0] is not None:
            assert robot.command(pending[0].data) is None
        if len(pending) > lag:
            pending.pop(0)
        position = base_position(messages["odom"])
        start = position if start is None else start
        heights.append(position[2])
        robot.advance()
    assert min(heights) > 0.8 * control.controller.standing_height, min(heights)
    assert position[0] - start[0] > 0.3, position - start


def test_walks_forward_on_cmd_vel_and_stops_when_the_command_goes_stale(bundled):
    """0.3 m/s for 3 s, then no command: the base moves forward ≥ 0.7 m, never below half its height, every
    state answered with efforts; the followed command ramps at most at its acceleration, and once the command
    is older than command_timeout it ramps to zero and the robot stops."""
    settings = ControllerSettings()
    robot, control = MuJoCoRobot(bundled, MuJoCoRobotSettings(period=0.01)), WalkingControl(bundled, settings)
    published = run(robot, control, 5.0, twist(0.3), until=3.0)
    assert all("efforts" in answer for _, answer, _ in published)
    start, end = base_position(published[0][0]["odom"]), base_position(published[-1][0]["odom"])
    assert end[0] - start[0] >= 0.7, end - start
    assert abs(end[1] - start[1]) < 0.1
    heights = [base_position(m["odom"])[2] for m, _, _ in published]
    assert min(heights) > 0.5 * control.controller.standing_height
    followed = np.array([f for _, _, f in published])
    times = np.array([stamp_to_ns(m["clock"].clock) * 1e-9 for m, _, _ in published])
    assert (np.abs(np.diff(followed, axis=0)) <= np.outer(np.diff(times), settings.acceleration) + 1e-12).all()
    assert followed[times.searchsorted(2.0), 0] == pytest.approx(0.3)
    stale = times.searchsorted(3.0 - 0.1 + settings.command_timeout + 0.3 / settings.acceleration[0] + 0.02)
    assert (followed[stale:] == 0.0).all() and followed[stale - 3, 0] > 0.0
    velocity = published[-1][0]["odom"].twist.twist.linear
    assert abs(velocity.x) < 0.1
    assert control.diagnostics(round(times[-1] * 1e9))[0][2].startswith("walking in place")


def test_the_contact_set_is_published_when_it_changes_and_reads_back(bundled):
    robot, control = MuJoCoRobot(bundled), WalkingControl(bundled)
    published = run(robot, control, 0.6, twist(0.0))
    sets = [(m["clock"].clock, a["contacts"].data) for m, a, _ in published if "contacts" in a]
    assert len(sets) >= 3  # standing, a diagonal pair, all four at a touchdown, ...
    assert all(a != b for (_, a), (_, b) in zip(sets, sets[1:]))
    for (_, text) in sets:
        feet = {c.frame for c in as_contacts(text)}
        assert feet <= set(bundled.feet) and feet
    assert {c.frame for c in as_contacts(sets[0][1])} == set(bundled.feet)


def test_efforts_in_the_order_of_the_joints_parameter(bundled):
    """A controller and a robot given the joints in another order: each effort reaches its joint's motor in
    MuJoCo (read there by the actuator's name)."""
    import mujoco

    joints = tuple(reversed(bundled.model.joint_names))
    robot = MuJoCoRobot(bundled, MuJoCoRobotSettings(joints=joints))
    control = WalkingControl(bundled, inputs=InputSettings(joints=joints))
    messages = robot.messages(FACTORY)
    control.on_odometry(messages["odom"])
    answer = control.on_joint_state(messages["joint_states"], stamp_to_ns(messages["clock"].clock), FACTORY)
    efforts = np.asarray(answer["efforts"].data)
    by_name = dict(zip(bundled.model.joint_names, control.last.torques))
    assert efforts == pytest.approx([by_name[j] for j in joints], abs=0.0)
    robot.command(efforts)
    robot.advance()
    plant = robot.plant
    for joint, effort in zip(joints, efforts):
        actuator = mujoco.mj_name2id(plant.mj_model, mujoco.mjtObj.mjOBJ_ACTUATOR, joint)
        assert plant.data.ctrl[actuator] == effort
    assert not np.allclose(efforts, efforts[::-1])  # (the order matters for this robot's torques)


def test_the_robot_waits_still_then_holds_with_damping_once_commands_stop(bundled):
    """Before the first command the robot stands still, its clock running; a command is applied until it is
    command_timeout old; then each period gets τ = −d q̇ (clipped to the limits) of the state it starts from,
    which /joint_states' effort shows."""
    settings = MuJoCoRobotSettings(period=0.01, command_timeout=0.1, hold_damping=3.0)
    robot = MuJoCoRobot(bundled, settings)
    first = robot.messages(FACTORY)
    for _ in range(5):
        robot.advance()
    assert robot.time == pytest.approx(0.05)
    waiting = robot.messages(FACTORY)
    assert np.asarray(waiting["joint_states"].position) == pytest.approx(first["joint_states"].position, abs=0)
    assert robot.diagnostics()[0][2].startswith("waiting for the first effort command")
    control = WalkingControl(bundled)
    run(robot, control, 0.3)  # walking in place, commanded
    assert robot.mode == "commanded"
    limits = np.asarray(bundled.effort_limits)
    holding = []
    for k in range(20):
        before = robot.messages(FACTORY)["joint_states"]
        robot.advance()
        applied = np.asarray(robot.messages(FACTORY)["joint_states"].effort)
        holding.append(robot.mode == "holding")
        if robot.mode == "holding":
            expected = np.clip(-3.0 * np.asarray(before.velocity), -limits, limits)
            assert applied == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert holding.index(True) == 10  # the command is 0.1 s old after 10 periods of 0.01 s
    assert all(holding[10:]) and not any(holding[:10])
    assert robot.diagnostics()[0][2].startswith("no effort command for")


@pytest.mark.parametrize("values, expected", [
    (np.zeros(5), "effort command of 5 values, expected 12"),
    (np.r_[np.zeros(11), np.nan], "is not finite (joint"),
])
def test_a_bad_effort_command_is_refused_in_one_line_and_the_previous_kept(bundled, values, expected):
    robot = MuJoCoRobot(bundled)
    assert robot.command(np.full(12, 0.5)) is None
    problem = robot.command(values)
    assert expected in problem and "\n" not in problem
    assert (robot.efforts() == 0.5).all()
    assert expected in robot.diagnostics()[0][2]


def test_a_bad_joints_parameter_is_named(bundled):
    with pytest.raises(ValueError, match="parameter 'joints'.*missing"):
        MuJoCoRobot(bundled, MuJoCoRobotSettings(joints=bundled.model.joint_names[:-1]))
    with pytest.raises(ValueError, match="parameter 'joints'"):
        WalkingControl(bundled, inputs=InputSettings(joints=("nope",) + bundled.model.joint_names[1:]))


def test_inputs_that_cannot_be_used_get_no_efforts_and_a_named_reason(bundled):
    """Stale, out of order, unpaired, another robot's odometry, NaN; a NaN velocity command."""
    robot, control = MuJoCoRobot(bundled), WalkingControl(bundled, inputs=InputSettings(max_input_age=0.5))
    messages = robot.messages(FACTORY)
    now = stamp_to_ns(messages["clock"].clock)
    control.on_odometry(messages["odom"])
    assert control.on_joint_state(messages["joint_states"], now + 600_000_000, FACTORY) == {}
    assert "stale" in control.last_problem
    assert "efforts" in control.on_joint_state(messages["joint_states"], now, FACTORY)
    assert control.on_joint_state(messages["joint_states"], now, FACTORY) == {}
    assert "not newer" in control.last_problem
    robot.advance()
    later = robot.messages(FACTORY)
    later_now = stamp_to_ns(later["clock"].clock) + 30_000_000
    later["joint_states"].header.stamp = FACTORY.make("builtin_interfaces/msg/Time", sec=0, nanosec=40_000_000)
    assert control.on_joint_state(later["joint_states"], later_now, FACTORY) == {}
    assert "no odometry within 0.02 s" in control.last_problem
    later["odom"].child_frame_id = "another_robot"
    control.on_odometry(later["odom"])
    assert "another_robot" in control.last_problem
    later["joint_states"].position[3] = math.nan
    later["joint_states"].header.stamp = FACTORY.make("builtin_interfaces/msg/Time", sec=0, nanosec=50_000_000)
    assert control.on_joint_state(later["joint_states"], later_now, FACTORY) == {}
    assert "\n" not in control.last_problem and "position" in control.last_problem
    control.on_velocity_command(twist(math.nan), later_now)
    assert "not finite" in control.last_problem
    assert set(control.rejected) == {"stale", "out_of_order", "unpaired", "odometry", "joint_states", "cmd_vel"}
    assert control.diagnostics(later_now)[0][0] == 1  # WARN


def test_the_planned_path_follows_the_plan(bundled):
    robot, control = MuJoCoRobot(bundled), WalkingControl(bundled)
    messages = robot.messages(FACTORY)
    control.on_odometry(messages["odom"])
    answer = control.on_joint_state(messages["joint_states"], stamp_to_ns(messages["clock"].clock), FACTORY)
    path = answer["path"]
    states = control.last.result.states
    assert len(path.poses) == len(states) == control.controller.mpc.settings.knots + 1
    knot = control.controller.mpc.settings.knot_dt
    for k, (pose, state) in enumerate(zip(path.poses, states)):
        assert stamp_to_ns(pose.header.stamp) == round(k * knot * 1e9)
        q, p = pose.pose.orientation, pose.pose.position
        H = quaternion_pose(q.w, q.x, q.y, q.z, (p.x, p.y, p.z))
        assert H == pytest.approx(state.base_pose, abs=1e-12)


def test_a_simulation_that_diverges_stands_the_robot_up_again_and_says_so(bundled):
    """Efforts that throw the robot about (each joint's limit, alternating) until MuJoCo finds the simulation
    unstable (it resets its state to the model's default, the base inside the floor): the robot stands again
    where it started, and the diagnostics say when, as an ERROR."""
    robot = MuJoCoRobot(bundled, MuJoCoRobotSettings(period=0.01))
    limits = np.asarray(bundled.effort_limits)
    for k in range(2000):
        robot.command(limits * (1 if (k // 3) % 2 else -1))
        robot.advance()
        if robot.restarts:
            break
    assert robot.restarts, "MuJoCo never found this simulation unstable"
    state = robot.plant.state
    assert state.base_pose == pytest.approx(robot.standing.base_pose, abs=1e-12)
    level, _, message, values = robot.diagnostics()[0]
    assert level == 2 and message.startswith("the simulation diverged at") and values["restarts"] == 1


def test_a_robot_of_ones_own_from_its_urdf_feet_and_posture(bundled):
    """The parameters urdf_path, feet and posture make the walker both nodes run: the bundled robot's URDF
    given so walks as the bundled walker does (the same torques at the first state); a joint or foot the
    URDF lacks is named."""
    from robot_linearization.ros.parameters import controller_settings, mujoco_robot_settings

    posture = ", ".join(f"{joint}: {value!r}" for joint, value in bundled.posture.items())
    values = {"urdf_path": bundled.urdf, "feet": ", ".join(bundled.feet), "posture": posture}
    own = controller_settings(values).robot.walker()
    assert own.feet == bundled.feet and own.posture == bundled.posture and own.gait.name == "trot"
    assert (own.effort_limits == bundled.effort_limits).all() and own.sole_size is None
    robot = MuJoCoRobot(mujoco_robot_settings(values).robot.walker())
    torques = []
    for walker_ in (own, bundled):
        control = WalkingControl(walker_)
        messages = robot.messages(FACTORY)
        control.on_odometry(messages["odom"])
        control.on_joint_state(messages["joint_states"], stamp_to_ns(messages["clock"].clock), FACTORY)
        torques.append(control.last.torques)
    assert torques[0] == pytest.approx(torques[1], rel=1e-9, abs=1e-9)
    with pytest.raises(ValueError, match="knee_joint"):
        controller_settings({**values, "posture": "knee_joint: 1.0"}).robot.walker()
    with pytest.raises(ValueError, match="'toe'"):
        controller_settings({**values, "feet": "toe, front_left_foot"}).robot.walker()
    with pytest.raises(ValueError, match="parameter 'posture'"):
        controller_settings({**values, "posture": "front_left_knee = 1"})
    with pytest.raises(ValueError, match="parameter 'feet'"):
        controller_settings({**values, "feet": ""})


def test_warming_up_leaves_no_plan_behind(bundled):
    """After a warm-up (a gait period on the own ground) the controller's first control at a state equals a
    fresh controller's: the warm-up's plan is forgotten (remembered, the first cycle fails: tried by hand).  To 1e-9,
    not bit for bit: the BLAS products of a cycle can round differently from one run to the next (2 runs of 5
    differed by 1e-11 N·m, with the generic kernels throughout)."""
    robot = MuJoCoRobot(bundled)
    messages = robot.messages(FACTORY)
    now = stamp_to_ns(messages["clock"].clock)
    torques = []
    for warm in (True, False):
        control = WalkingControl(bundled)
        if warm:
            assert control.controller.warm_up() > 0.0 and control.controller.status.plans == 0
        control.on_odometry(messages["odom"])
        control.on_joint_state(messages["joint_states"], now, FACTORY)
        torques.append(control.last.torques)
    assert torques[0] == pytest.approx(torques[1], rel=1e-9, abs=1e-9)


def test_the_odometry_is_published_before_the_joint_state_it_pairs_with(bundled):
    """A controller that answers each joint state at once pairs it with the odometry of the same stamp."""
    messages = MuJoCoRobot(bundled).messages(FACTORY)
    assert list(messages) == ["clock", "odom", "joint_states"]
    assert messages["odom"].header.stamp == messages["joint_states"].header.stamp
