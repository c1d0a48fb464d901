"""Parameter checks of both nodes (rclpy-free): values as ROS delivers them."""

import array

import pytest

from robot_linearization.ros.parameters import (PARAMETERS, SIMULATION_PARAMETERS, node_settings,
                                                simulation_settings)
from robot_linearization.ros.pipeline import PipelineConfig


def test_defaults_give_the_documented_configuration():
    settings = node_settings({})
    assert settings.pipeline.gravity == (0.0, 0.0, -9.81)
    assert settings.pipeline.floating_base and not settings.pipeline.use_effort
    assert settings.rate_hz == 0.0 and settings.publish_heatmaps and settings.description == ""
    assert settings.publish_health
    assert node_settings({name: default for name, (default, _) in PARAMETERS.items()}) == settings


def test_discretization_parameters():
    settings = node_settings({"discretization_dt": 1, "discretization": "zoh"})  # `-p discretization_dt:=1`: an int
    assert settings.pipeline.discretization_dt == 1.0 and settings.pipeline.discretization == "zoh"
    assert node_settings({}).pipeline.discretization_dt == 0.0  # off by default


def test_node_defaults_equal_the_offline_pipeline_defaults():
    """PARAMETERS (node, yaml) and PipelineConfig (replay, demo) state the same defaults."""
    assert node_settings({}).pipeline == PipelineConfig()


def test_ros_typed_values_are_converted():
    # `-p rate_hz:=100` arrives as an int, `-p gravity:=[0,0,-10]` as an integer array
    settings = node_settings({"rate_hz": 100, "gravity": array.array("q", [0, 0, -10]), "pairing_tolerance": 1,
                              "urdf_path": "/robot.urdf"})
    assert settings.rate_hz == 100.0 and isinstance(settings.rate_hz, float)
    assert settings.pipeline.gravity == (0.0, 0.0, -10.0)
    assert settings.pipeline.pairing_tolerance == 1.0
    assert settings.description == "/robot.urdf"
    assert node_settings({"robot_description": "<robot/>", "urdf_path": "/x.urdf"}).description == "<robot/>"
    assert node_settings({"gravity": array.array("d", [0.0, 9.81, 0.0])}).pipeline.gravity == (0.0, 9.81, 0.0)


@pytest.mark.parametrize("values, named", [
    ({"rate_hz": -1.0}, "rate_hz"),
    ({"rate_hz": float("nan")}, "rate_hz"),
    ({"pairing_tolerance": 0.0}, "pairing_tolerance"),
    ({"max_input_age": -0.5}, "max_input_age"),
    ({"validation_tolerance": float("inf")}, "validation_tolerance"),
    ({"diagnostics_period": 0}, "diagnostics_period"),
    ({"gravity": [0.0, -9.81]}, "gravity"),
    ({"gravity": "down"}, "gravity"),
    ({"gravity": [0.0, 0.0, float("nan")]}, "gravity"),
    ({"floating_base": "yes"}, "floating_base"),
    ({"use_effort": 1}, "use_effort"),
    ({"publish_heatmaps": 0.0}, "publish_heatmaps"),
    ({"publish_health": "on"}, "publish_health"),
    ({"pairing_tolerance": True}, "pairing_tolerance"),
    ({"mimic_joints": "ignore"}, "mimic_joints"),
    ({"base_frame": 3}, "base_frame"),
    ({"urdf_path": 0}, "urdf_path"),
    ({"rate_hertz": 10.0}, "rate_hertz"),
    ({"discretization_dt": -1e-3}, "discretization_dt"),
    ({"discretization_dt": float("nan")}, "discretization_dt"),
    ({"discretization": "rk4"}, "discretization"),
])
def test_bad_values_are_refused_naming_the_parameter(values, named):
    with pytest.raises(ValueError, match=named):
        node_settings(values)


def test_simulation_parameters():
    settings = simulation_settings({"dt": 0.001, "publish_rate": 50})
    assert settings.dt == 0.001 and settings.publish_rate == 50.0 and settings.world_frame == "odom"
    assert simulation_settings({name: default for name, (default, _) in SIMULATION_PARAMETERS.items()}) \
        == simulation_settings({})
    for values, named in [({"dt": 0.0}, "dt"), ({"publish_rate": -5.0}, "publish_rate"),
                          ({"reset_after": "soon"}, "reset_after"), ({"floating_base": 1}, "floating_base"),
                          ({"rate_hz": 1.0}, "rate_hz")]:
        with pytest.raises(ValueError, match=named):
            simulation_settings(values)


def test_contacts_parameter_is_parsed_and_a_bad_entry_named():
    from robot_linearization.ros.parameters import node_settings

    settings = node_settings({"contacts": "FL_FOOT, left_sole_link:6d:local"})
    assert [(c.frame, c.kind, c.reference) for c in settings.pipeline.contacts] == [
        ("FL_FOOT", "point", "world_aligned"), ("left_sole_link", "6d", "local")]
    assert node_settings({"contacts": ["FL_FOOT", "FR_FOOT"]}).pipeline.contacts[1].frame == "FR_FOOT"
    assert node_settings({}).pipeline.contacts == ()
    with pytest.raises(ValueError, match="parameter 'contacts'.*kind must be one of"):
        node_settings({"contacts": "FL_FOOT:3d"})
    with pytest.raises(ValueError, match="parameter 'contacts' must be a string"):
        node_settings({"contacts": 3})


def test_simulated_robot_contacts_parameter():
    assert [c.frame for c in simulation_settings({"contacts": "front_left_foot, hind_right_foot"}).contacts] == [
        "front_left_foot", "hind_right_foot"]
    assert simulation_settings({}).contacts == ()
    with pytest.raises(ValueError, match="parameter 'contacts'"):
        simulation_settings({"contacts": "front_left_foot:plane"})


def test_walking_controller_parameters():
    from robot_linearization.ros.parameters import CONTROLLER_PARAMETERS, controller_settings

    defaults = controller_settings({name: default for name, (default, _) in CONTROLLER_PARAMETERS.items()})
    assert defaults == controller_settings({})
    assert defaults.robot.name == "bundled" and not defaults.robot.urdf_path and defaults.gait == "default"
    settings = controller_settings({"robot": "solo12", "period": 0.02, "joints": "b, a c", "acceleration": [1, 2, 3]})
    assert settings.controller.period == 0.02 and settings.inputs.joints == ("b", "a", "c")
    assert settings.controller.acceleration == (1.0, 2.0, 3.0)
    for values, named in [({"robot": "atlas"}, "'robot'"), ({"gait": "gallop"}, "'gait'"),
                          ({"period": 0}, "'period'"), ({"acceleration": [1, 0, 1]}, "'acceleration'"),
                          ({"max_command": [1, 2]}, "'max_command'"), ({"command_timeout": float("nan")},
                                                                        "'command_timeout'"),
                          ({"joints": ["a"]}, "'joints'"), ({"perid": 0.01}, "unknown parameters: perid")]:
        with pytest.raises(ValueError, match=named) as error:
            controller_settings(values)
        assert "\n" not in str(error.value)


def test_mpc_settings_from_parameters():
    from robot_linearization.ros.parameters import mpc_settings
    from robot_linearization.walking.mpc import MPCSettings

    base = MPCSettings()
    changed = mpc_settings(base, {"knots": 30, "knot_dt": 0.01, "weights.torque": 10, "sole_size": [0.2, 0.1]})
    assert (changed.knots, changed.knot_dt, changed.sole_size) == (30, 0.01, (0.2, 0.1))
    assert changed.weights["torque"] == 10.0 and base.weights["torque"] == 30.0  # (the base is left alone)
    assert {k: v for k, v in changed.weights.items() if k != "torque"} == \
        {k: v for k, v in base.weights.items() if k != "torque"}
    for overrides, named in [({"knot": 30}, "'mpc.knot'.*nearest|'mpc.knot'.*did you mean 'knots'"),
                             ({"weights.torq": 1.0}, "'mpc.weights.torq'.*'torque'"),
                             ({"knots": 2.5}, "'mpc.knots' must be an integer"),
                             ({"friction": "high"}, "'mpc.friction'"), ({"scale": 1.0}, "'mpc.scale'")]:
        with pytest.raises(ValueError, match=named):
            mpc_settings(base, overrides)


def test_mujoco_robot_parameters():
    from robot_linearization.ros.mujoco_robot import MuJoCoRobotSettings
    from robot_linearization.ros.parameters import MUJOCO_ROBOT_PARAMETERS, mujoco_robot_settings

    defaults = mujoco_robot_settings({name: default for name, (default, _) in MUJOCO_ROBOT_PARAMETERS.items()})
    assert defaults == mujoco_robot_settings({})
    assert defaults.simulation.period == pytest.approx(0.002) == MuJoCoRobotSettings().period and not defaults.lockstep
    settings = mujoco_robot_settings({"publish_rate": 200, "timestep": 0.0005, "cone": "pyramidal", "lockstep": True})
    assert settings.simulation.period == 0.005 and settings.simulation.options.timestep == 0.0005
    assert settings.simulation.options.cone == "pyramidal" and settings.lockstep
    for values, named in [({"cone": "round"}, "'cone'"), ({"hold_damping": -1}, "'hold_damping'"),
                          ({"publish_rate": 0}, "'publish_rate'"), ({"lockstep": "yes"}, "'lockstep'"),
                          ({"friction": 0}, "'friction'")]:
        with pytest.raises(ValueError, match=named):
            mujoco_robot_settings(values)
