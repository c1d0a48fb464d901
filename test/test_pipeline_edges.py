"""The pipeline's behaviour at its edges, each pinned against the mistake that would
break it: the heatmap rate after a pause in the input, the odometry pairing tie, and a
robot description that lacks the configured contact frames."""

import numpy as np
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

import robot_linearization as rl
from robot_linearization.robots import BUNDLED_FEET, bundled_urdf_path
from robot_linearization.ros.bag import replay
from robot_linearization.ros.messages import RosbagsFactory, joint_state_message, odometry_message, string_message
from robot_linearization.ros.pipeline import OK, WARN, LinearizationPipeline, PipelineConfig
from robot_linearization.spatial import se3_exp

from conftest import example_robot_path, write_bag

TYPESTORE = get_typestore(Stores.ROS2_HUMBLE)
FACTORY = RosbagsFactory(TYPESTORE)
SEC, MS = 1_000_000_000, 1_000_000
URDF = open(bundled_urdf_path()).read()
MODEL = rl.load_urdf(URDF)
N = MODEL.n_joints


def log_times(path, topic):
    with AnyReader([path], default_typestore=TYPESTORE) as reader:
        return [t for c, t, _ in reader.messages(connections=[c for c in reader.connections if c.topic == topic])]


def joint_states(model, start_ns, count, period_ns=MS):
    n, stamps = model.n_joints, [start_ns + k * period_ns for k in range(count)]
    return [(t, "/joint_states", joint_state_message(FACTORY, t, model.joint_names, np.full(n, 0.1), np.zeros(n), ()))
            for t in stamps]


def test_heatmaps_after_a_pause_keep_their_rate_and_do_not_catch_up(tmp_path):
    """1 kHz joint states, a 10 s gap, 1 kHz again: at most 2 images a second after the
    gap too (a limiter that schedules from its last deadline would send 20 in 20 ms)."""
    before, after = joint_states(MODEL, SEC, 100), joint_states(MODEL, 11 * SEC, 100)
    write_bag(tmp_path / "in", [(SEC - 1, "/robot_description", string_message(FACTORY, URDF))] + before + after)
    summary = replay(tmp_path / "in", tmp_path / "out", config=PipelineConfig(floating_base=False), progress=False,
                     heatmap_rate_hz=2.0)
    assert summary.outputs == 200
    images = log_times(tmp_path / "out", "/robot_linearization/A_heatmap")
    assert [t for t in images if t >= 11 * SEC] == [11 * SEC]
    assert min(np.diff(images)) >= SEC // 2


def test_a_joint_state_midway_between_two_odometry_messages_is_paired_with_the_older_one(rng):
    """README, pairing: the nearest odometry; on a tie, the older one."""
    p = LinearizationPipeline(PipelineConfig())
    assert p.set_description(URDF) is None
    at = lambda x: se3_exp(np.array([x, 0.0, 0.0, 0.0, 0.0, 0.0]))  # noqa: E731
    v, s, r = rng.normal(size=6), rng.normal(size=N), rng.normal(size=N)
    for k, x in enumerate([0.0, 1.0, 2.0]):  # 10 ms apart
        assert p.on_odometry(odometry_message(FACTORY, 10 * SEC + k * 10 * MS, "odom", "base_link", at(x), v))
    assert p.on_joint_state(joint_state_message(FACTORY, 10 * SEC + 15 * MS, MODEL.joint_names, s, r, ()))
    (out,) = p.step(10 * SEC + 20 * MS)  # the odometry stream has passed the joint state: ready
    assert out.state.base_pose[0, 3] == 1.0  # 5 ms from both x = 1 (older) and x = 2 (newer)


def _one_cycle(p, t, model=MODEL):
    n = model.n_joints
    assert p.on_odometry(odometry_message(FACTORY, t, "odom", model.body_names[0], np.eye(4), np.zeros(6)))
    assert p.on_joint_state(joint_state_message(FACTORY, t, model.joint_names, np.full(n, 0.1), np.zeros(n), ()))
    return p.step(t)


def test_a_new_robot_without_the_contact_frames_is_linearized_free_floating_with_a_lasting_warning():
    """The quadruped stands on its four feet; solo12 replaces it (its feet are FL_FOOT …):
    every joint state is still linearized, free-floating, and /diagnostics names the
    missing frames for as long as it lasts; the quadruped back, its feet are back."""
    p = LinearizationPipeline(PipelineConfig(contacts=rl.contacts.as_contacts(", ".join(BUNDLED_FEET))))
    assert p.set_description(URDF) is None
    (out,) = _one_cycle(p, SEC)
    assert out.linearization.contact_forces.shape == (12,)

    assert p.set_description(example_robot_path("solo12")) is None
    solo = p.model
    for k in range(3):
        (out,) = _one_cycle(p, (2 + k) * SEC, solo)
        assert out.model is solo and out.linearization.contacts == ()
        level, _, message, values = p.diagnostics((2 + k) * SEC)[0]
        assert level == WARN and values["contacts"] == "none (free-floating)", message
        assert "contact frames 'front_left_foot' (did you mean 'FR_FOOT' or 'FL_FOOT'?)" in message
        assert "are not links of model 'solo'" in message
        assert all(f"'{foot}'" in message for foot in BUNDLED_FEET) and "linearizing free-floating" in message

    assert p.set_description(URDF) is None
    (out,) = _one_cycle(p, 5 * SEC)
    assert [c.frame for c in out.linearization.contacts] == list(BUNDLED_FEET)
    assert p.diagnostics(5 * SEC)[0][0] == OK

    assert p.set_description(example_robot_path("solo12")) is None
    assert p.set_contacts("FL_FOOT, HR_FOOT") is None  # a set for the new robot: no warning, and it is the one kept
    (out,) = _one_cycle(p, 6 * SEC, p.model)
    assert len(out.linearization.contact_labels) == 6 and p.diagnostics(6 * SEC)[0][0] == OK


def test_a_replayed_bag_whose_robot_changes_to_one_without_the_contact_frames_goes_on(tmp_path):
    """--contacts that the bag's first robot lacks is an error before anything is written;
    a later robot without them is linearized free-floating, as the node does, and counted."""
    solo_urdf = open(example_robot_path("solo12")).read()
    solo = rl.load_urdf(solo_urdf, floating_base=False)
    fixed = rl.load_urdf(URDF, floating_base=False)
    write_bag(tmp_path / "in", [(SEC - 1, "/robot_description", string_message(FACTORY, URDF))]
              + joint_states(fixed, SEC, 3)
              + [(2 * SEC - 1, "/robot_description", string_message(FACTORY, solo_urdf))]
              + joint_states(solo, 2 * SEC, 3))
    config = PipelineConfig(floating_base=False, contacts=rl.contacts.as_contacts("front_left_foot"))
    summary = replay(tmp_path / "in", tmp_path / "out", config=config, progress=False)
    assert summary.outputs == 6 and summary.last_output.linearization.contacts == ()
    assert any(problem.startswith("contact frame 'front_left_foot'") and "is not a link of model 'solo'" in problem
               for problem in summary.problems)
