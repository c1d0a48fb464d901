"""URDF loading: structure, fixed-joint merging, and every rejection's message."""

import logging

import numpy as np
import pytest

import robot_linearization as rl
from robot_linearization.robots import bundled_urdf_path
from robot_linearization.spatial import spatial_inertia

from conftest import PinocchioOracle, example_robot_path, load_example

INERTIAL = ('<inertial><mass value="{m}"/><origin xyz="{c}"/>'
            '<inertia ixx="{i}" iyy="{i}" izz="{i}" ixy="0" ixz="0" iyz="0"/></inertial>')


def urdf(links: dict, joints: list[str], name="t") -> str:
    body = "".join(f'<link name="{n}">{INERTIAL.format(**p) if p else ""}</link>' for n, p in links.items())
    return f'<robot name="{name}">{body}{"".join(joints)}</robot>'


def joint(name, jtype, parent, child, xyz="0 0 0", axis="0 0 1", extra=""):
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}"/><axis xyz="{axis}"/>{extra}</joint>')


BODY = dict(m=1.0, c="0 0 0", i=0.01)
LIMIT = '<limit lower="-3" upper="3" effort="1" velocity="1"/>'  # urdfdom (Pinocchio) needs it on revolute joints


def test_joint_names_follow_depth_first_order_and_frames_include_merged_links():
    model = rl.load_urdf(bundled_urdf_path())
    assert model.floating_base and model.n_joints == 12 and model.n_velocities == 18
    assert model.joint_names[:3] == ("front_left_hip_abduction", "front_left_hip_flexion", "front_left_knee")
    body, H = model.frames["front_left_foot"]
    assert model.body_names[body] == "front_left_shank"
    np.testing.assert_allclose(H[:3, 3], [0, 0, -0.2])
    assert model.frames["imu_link"][0] == 0
    assert model.joint_index("front_left_knee") == 2
    with pytest.raises(KeyError, match="no joint 'elbow'"):
        model.joint_index("elbow")
    # every subtree is a contiguous range
    for i in range(1, model.n_bodies):
        assert all(model.parent[k] >= i for k in range(i + 1, model.subtree_end[i] + 1))


def test_fixed_joint_lumps_inertia_like_a_single_rigid_body():
    """Two links welded by a fixed joint load the same as one link carrying both
    masses, built here from the parallel-axis theorem."""
    welded = urdf({"a": BODY, "b": dict(m=2.0, c="0.1 0 0", i=0.02), "c": BODY},
                  [joint("weld", "fixed", "a", "b", xyz="0 0.3 0"), joint("j", "revolute", "a", "c", xyz="0 0 0.5")])
    model = rl.load_urdf(welded)
    expected = (spatial_inertia(1.0, np.zeros(3), 0.01 * np.eye(3))
                + spatial_inertia(2.0, [0.1, 0.3, 0], 0.02 * np.eye(3)))
    np.testing.assert_allclose(model.inertias[0], expected, atol=1e-12)
    assert model.frames["b"][0] == 0 and model.joint_names == ("j",)


def test_fixed_base_ur5_matches_pinocchio_mass_matrix_with_merged_links(rng):
    model = load_example("ur5")
    assert not model.floating_base and model.n_velocities == 6
    oracle = PinocchioOracle(example_robot_path("ur5"), model)
    s = rng.uniform(-3, 3, 6)
    M_pin = oracle.pin.crba(oracle.pmodel, oracle.data, s[np.argsort(oracle.perm)])
    M_pin = (np.triu(M_pin) + np.triu(M_pin, 1).T)[np.ix_(oracle.perm, oracle.perm)]
    np.testing.assert_allclose(rl.mass_matrix(model, s), M_pin, atol=1e-12)


def test_prismatic_joint_about_an_arbitrary_axis_and_continuous_joint_load():
    text = urdf({"a": BODY, "b": BODY, "c": BODY},
                [joint("slide", "prismatic", "a", "b", axis="1 1 0"),
                 joint("spin", "continuous", "b", "c", axis="0 1 1")])
    model = rl.load_urdf(text)
    np.testing.assert_allclose(model.motion_subspaces[1], [2 ** -0.5, 2 ** -0.5, 0, 0, 0, 0])
    np.testing.assert_allclose(model.motion_subspaces[2], [0, 0, 0, 0, 2 ** -0.5, 2 ** -0.5])


def test_gravity_is_a_model_parameter():
    model = rl.load_urdf(bundled_urdf_path(), gravity=(0, 0, -1.62))
    np.testing.assert_array_equal(model.gravity, [0, 0, -1.62])


@pytest.mark.parametrize("text, message", [
    ("<robot name='x'><link name='a'>", "not well-formed XML"),
    ("<sdf version='1.6'><model name='m'/></sdf>", r"not a URDF: the root element is <sdf>"),
    (urdf({"a": BODY, "b": BODY}, [joint("free", "floating", "a", "b")]), "joint 'free' is floating"),
    (urdf({"a": BODY, "b": BODY}, [joint("flat", "planar", "a", "b")]), "joint 'flat' is planar"),
    (urdf({"a": BODY, "b": BODY, "c": BODY},
          [joint("j1", "revolute", "a", "b"), joint("j2", "revolute", "a", "c", extra='<mimic joint="ghost"/>')]),
     "joint 'j2' mimics joint 'ghost', which is not a moving joint"),
    (urdf({"a": BODY, "b": None}, [joint("j", "revolute", "a", "b")]),
     "joint 'j': the bodies it moves have no inertia"),
    (urdf({"a": BODY, "b": dict(m=0.0, c="0 0 0.5", i=0.0)}, [joint("j", "revolute", "a", "b", axis="0 0 1")]),
     "joint 'j': the bodies it moves have no inertia"),
    (urdf({"a": BODY, "b": dict(m=-1.0, c="0 0 0", i=0.01)}, [joint("j", "revolute", "a", "b")]),
     "link 'b': negative mass"),
    (urdf({"a": BODY, "b": dict(m=1.0, c="0 0 0", i=-0.5)}, [joint("j", "revolute", "a", "b")]),
     "link 'b': rotational inertia is not positive semi-definite"),
    (urdf({"a": BODY, "b": dict(m="nan", c="0 0 0", i=0.01)}, [joint("j", "revolute", "a", "b")]),
     "link 'b': inertial contains NaN"),
    (urdf({"a": BODY, "b": BODY}, [joint("j", "revolute", "a", "ghost")]), "joint 'j' refers to link 'ghost'"),
    (urdf({"a": BODY, "b": BODY}, []), "exactly one root link"),
    (urdf({"a": BODY, "b": BODY, "c": BODY}, [joint("j1", "revolute", "a", "c"), joint("j2", "revolute", "b", "c")]),
     "link 'c' is the child of both"),
    (urdf({"a": BODY, "b": BODY}, [joint("j", "revolute", "a", "b", axis="0 0 0")]), "joint 'j': axis"),
    (urdf({"a": BODY, "b": BODY}, [joint("j", "gearbox", "a", "b")]),
     "joint\\[@name='j'\\]: Invalid joint type: gearbox"),
    ("<robot><link name='a'/></robot>", "invalid URDF: .*Required attribute not set in XML: name"),
    ("<robot name='x'><link name='a'><inertial><origin xyz='0 0'/><mass value='1'/></inertial></link></robot>",
     "invalid URDF: .*Invalid vector length"),
    ('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]>'
     '<robot name="x"><link name="&b;"/></robot>', "DOCTYPE/ENTITY"),
])
def test_bad_urdf_is_rejected_with_a_message_naming_the_culprit(text, message):
    with pytest.raises(rl.ModelError, match=message) as caught:
        rl.load_urdf(text)
    assert "\n" not in str(caught.value), str(caught.value)  # one line, also for the parser's own errors


def test_floating_robot_without_mass_is_rejected():
    text = urdf({"a": None}, [])
    with pytest.raises(rl.ModelError, match="base 'a': the robot as a whole has a singular"):
        rl.load_urdf(text)


def test_mimic_joints_follow_by_default_or_are_independent_or_refused():
    text = urdf({"a": BODY, "b": BODY, "c": BODY, "d": BODY},
                [joint("j1", "revolute", "a", "b"),
                 joint("j2", "revolute", "a", "c", extra='<mimic joint="j1" multiplier="-0.5" offset="0.2"/>'),
                 joint("j3", "prismatic", "c", "d", axis="1 0 0", extra='<mimic joint="j2" multiplier="2"/>'
                       '<limit lower="-1" upper="1" effort="1" velocity="1"/>')])
    coupled = rl.load_urdf(text)
    assert coupled.joint_names == ("j1",) and coupled.tree.joint_names == ("j1", "j2", "j3")
    # j2 = −0.5 j1 + 0.2 and j3 = 2 j2 = −j1 + 0.4, composed along the chain
    np.testing.assert_allclose(coupled.coupling[:, 0], [1.0, -0.5, -1.0])
    np.testing.assert_allclose(coupled.offset, [0.0, 0.2, 0.4])
    assert coupled.state_labels == ("H:x", "H:y", "H:z", "H:rx", "H:ry", "H:rz", "s:j1", "v:x", "v:y", "v:z",
                                    "v:rx", "v:ry", "v:rz", "r:j1")
    with pytest.raises(KeyError, match="joint 'j3' of model 't' mimics 'j2': it is not a state or input"):
        coupled.joint_index("j3")
    assert rl.load_urdf(text, mimic_joints="independent").joint_names == ("j1", "j2", "j3")
    with pytest.raises(rl.ModelError, match=r"joint 'j2' mimics joint 'j1' \(mimic_joints='error'\)"):
        rl.load_urdf(text, mimic_joints="error")


def test_missing_file_and_oversized_description_are_reported(tmp_path):
    with pytest.raises(rl.ModelError, match="cannot read URDF file"):
        rl.load_urdf(tmp_path / "nope.urdf")
    with pytest.raises(rl.ModelError, match="more than the"):
        rl.load_urdf("<robot name='x'>" + " " * (rl.urdf.MAX_DESCRIPTION_BYTES + 1) + "</robot>")


def test_unphysical_but_harmless_inertia_loads_with_a_warning(caplog):
    caplog.set_level(logging.WARNING, logger="robot_linearization")  # (whatever an earlier test left it at)
    text = urdf({"a": BODY, "b": dict(m=1.0, c="0 0 0", i=0.01)}, [joint("j", "revolute", "a", "b")])
    text = text.replace('izz="0.01"', 'izz="0.05"', 1)  # 0.01 + 0.01 < 0.05
    rl.load_urdf(text)
    assert "triangle inequality" in caplog.text


def test_programmatic_builder_rejects_bad_input():
    builder = rl.ModelBuilder("base", np.eye(6))
    with pytest.raises(rl.ModelError, match="parent 'nowhere'"):
        builder.add_body("b", parent="nowhere", joint=rl.Joint("j", rl.JointType.REVOLUTE, (0, 0, 1)),
                         placement=np.eye(4), inertia=np.eye(6))
    with pytest.raises(rl.ModelError, match="not symmetric"):
        builder.add_body("b", parent="base", joint=rl.Joint("j", rl.JointType.REVOLUTE, (0, 0, 1)),
                         placement=np.eye(4), inertia=np.triu(np.ones((6, 6))))
    with pytest.raises(rl.ModelError, match="homogeneous transform"):
        builder.add_body("b", parent="base", joint=rl.Joint("j", rl.JointType.REVOLUTE, (0, 0, 1)),
                         placement=2 * np.eye(4), inertia=np.eye(6))


def test_singular_floating_base_message_gives_the_total_mass():
    """A 2.5 kg cart on a rail behind a massless root link: the articulated inertia at
    the base is singular (the rail carries no mass along it), the robot is not massless."""
    cart = urdf({"world": None, "cart": dict(m=2.5, c="0 0 0", i=0.01)},
                [joint("rail", "prismatic", "world", "cart", axis="1 0 0",
                       extra='<limit lower="-1" upper="1" effort="10" velocity="1"/>')])
    with pytest.raises(rl.ModelError, match=r"base 'world'.*singular.*total mass 2\.5 kg"):
        rl.load_urdf(cart)


def test_descriptions_with_leading_blank_lines_or_a_byte_order_mark_load(tmp_path):
    """urdfdom and Pinocchio accept both (pybullet_data's diff_ring.urdf starts with a newline)."""
    xml = '<?xml version="1.0"?>\n' + urdf({"a": BODY, "b": BODY}, [joint("j", "revolute", "a", "b")])
    for text in ("\n" + xml, "\n\n  " + xml, "\ufeff" + xml, "\ufeff\n" + xml):
        assert rl.load_urdf(text).joint_names == ("j",)
        path = tmp_path / "robot.urdf"
        path.write_text(text, encoding="utf-8")
        assert rl.load_urdf(str(path)).joint_names == ("j",)


def test_bad_arguments_to_load_urdf_get_one_line_errors(tmp_path):
    with pytest.raises(rl.ModelError, match=f"cannot read URDF file '{tmp_path}': it is a directory"):
        rl.load_urdf(str(tmp_path))
    with pytest.raises(rl.ModelError, match="floating_base must be True or False, got 'false'"):
        rl.load_urdf(bundled_urdf_path(), floating_base="false")
    long_text = "not xml " * 500  # neither XML nor a path: the message does not echo it all
    with pytest.raises(rl.ModelError) as error:
        rl.load_urdf(long_text)
    assert len(str(error.value)) < 200 and "\n" not in str(error.value)


def test_inertia_warning_ignores_rounding_and_is_given_once(caplog):
    rounding = ('<link name="b"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.02" ixy="0.01" '
                'ixz="0" iyz="0"/></inertial></link>')  # principal moments (≈ −1e-19, 0.02, 0.02): a rod
    unphysical = ('<link name="c"><inertial><mass value="1"/><inertia ixx="0.001" iyy="0.001" izz="0.01" ixy="0" '
                  'ixz="0" iyz="0"/></inertial></link>')  # 0.001 + 0.001 < 0.01
    xml = (f'<robot name="w"><link name="a">{INERTIAL.format(**BODY)}</link>{rounding}{unphysical}'
           f'{joint("j1", "revolute", "a", "b")}{joint("j2", "revolute", "a", "c", axis="1 0 0")}</robot>')
    with caplog.at_level("WARNING", logger="robot_linearization.urdf"):
        rl.load_urdf(xml)
        rl.load_urdf(xml)  # the demo and the node's pipeline load the same URDF twice
    warnings = [r for r in caplog.records if r.name == "robot_linearization.urdf"]
    assert len(warnings) == 1 and "link 'c'" in warnings[0].getMessage()


def test_a_joint_without_axis_turns_about_x_as_urdf_specifies(rng, tmp_path):
    """URDF: <axis> defaults to (1, 0, 0); checked also against Pinocchio's mass matrix."""
    text = urdf({"a": BODY, "b": dict(m=1.0, c="0 0.2 0.1", i=0.01), "c": dict(m=2.0, c="0.1 0 0", i=0.02)},
                [joint("j1", "revolute", "a", "b", extra='<limit lower="-3" upper="3" effort="1" velocity="1"/>')
                 .replace('<axis xyz="0 0 1"/>', ""),
                 joint("j2", "prismatic", "b", "c", xyz="0 0.3 0", extra='<limit lower="-1" upper="1" '
                       'effort="1" velocity="1"/>').replace('<axis xyz="0 0 1"/>', "")])
    model = rl.load_urdf(text, floating_base=False)
    np.testing.assert_array_equal(model.motion_subspaces[1], [0, 0, 0, 1, 0, 0])  # revolute about x
    np.testing.assert_array_equal(model.motion_subspaces[2], [1, 0, 0, 0, 0, 0])  # prismatic along x
    path = tmp_path / "no_axis.urdf"
    path.write_text(text)
    oracle = PinocchioOracle(str(path), model)
    s = rng.uniform(-1, 1, 2)
    M_pin = oracle.pin.crba(oracle.pmodel, oracle.data, s[np.argsort(oracle.perm)])
    M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
    np.testing.assert_allclose(rl.mass_matrix(model, s), M_pin[np.ix_(oracle.perm, oracle.perm)], atol=1e-12)


def test_a_rotated_anisotropic_inertia_matches_pinocchio(rng, tmp_path):
    """An <inertial> with <origin xyz rpy> and a full inertia tensor: the spatial inertia
    is rotated into the link frame (R I Rᵀ) and shifted; the floating-base mass matrix
    equals Pinocchio's at random configurations."""
    inertial = ('<inertial><origin xyz="0.05 -0.1 0.2" rpy="0.3 -0.7 1.1"/><mass value="2.5"/>'
                '<inertia ixx="0.09" iyy="0.04" izz="0.07" ixy="0.005" ixz="-0.01" iyz="0.002"/></inertial>')
    text = (f'<robot name="r"><link name="a">{INERTIAL.format(**BODY)}</link><link name="b">{inertial}</link>'
            f'{joint("j", "revolute", "a", "b", xyz="0.1 0 0", axis="0 1 0", extra=LIMIT)}</robot>')
    path = tmp_path / "r.urdf"
    path.write_text(text)
    model = rl.load_urdf(str(path))
    oracle = PinocchioOracle(str(path), model)
    for _ in range(3):
        s = rng.uniform(-2, 2, 1)
        q = np.zeros(oracle.pmodel.nq)
        q[6], q[7] = 1.0, s[0]  # identity quaternion (x, y, z, w) = (0, 0, 0, 1), then the joint
        M_pin = oracle.pin.crba(oracle.pmodel, oracle.data, q)
        np.testing.assert_allclose(rl.mass_matrix(model, s), np.triu(M_pin) + np.triu(M_pin, 1).T, atol=1e-12)
