"""The contact Jacobian J and drift γ against the contact frame's motion computed from
the URDF alone.

The finite-difference validation cannot see a wrong contact transform: the engine and
its reference both go through contacts.resolve.  Here the frame's world pose is our own
forward kinematics of the URDF text (4×4 matrices from each joint's origin and axis,
scipy's rotations, fixed joints and mimic joints applied by hand; nothing of the
package but the joint order), moved along a trajectory through the state with
velocity ν and acceleration ν̇:

    H(t) = H·expm(t v^ + t²/2 v̇^),   s(t) = s + t r + t²/2 ṙ     (second order exact)

and differenced in t (4th-order stencils).  Then (docs/contacts.md):
  point: J ν = ṗ and J ν̇ + γ = p̈ (world_aligned), Rᵀṗ and Rᵀp̈ (local);
  6d:    J ν = the frame's body twist [Rᵀṗ; ω_b] and J ν̇ + γ its time derivative
         [Ṙᵀṗ + Rᵀp̈; ω̇_b] (local), both rotated by blockdiag(R, R) (world_aligned).
"""

import xml.etree.ElementTree as ET
import zlib

import numpy as np
import pytest
from scipy.linalg import expm
from scipy.spatial.transform import Rotation

import robot_linearization as rl
from robot_linearization.algorithms.constrained_dynamics import bias_motion, contact_kinematics
from robot_linearization.algorithms.kinematics import body_transforms

from conftest import example_robot_path, random_state


class UrdfKinematics:
    """World pose of any link from the URDF text: the chain of joint origins and motions."""

    def __init__(self, path):
        root = ET.parse(path).getroot()
        self.joints = {}  # child link -> (name, type, parent link, origin 4x4, axis, mimic)
        for joint in root.findall("joint"):
            origin = joint.find("origin")
            xyz = [float(x) for x in (origin.get("xyz", "0 0 0") if origin is not None else "0 0 0").split()]
            rpy = [float(x) for x in (origin.get("rpy", "0 0 0") if origin is not None else "0 0 0").split()]
            T = np.eye(4)
            T[:3, :3] = Rotation.from_euler("xyz", rpy).as_matrix()  # URDF: R = Rz(y) Ry(p) Rx(r)
            T[:3, 3] = xyz
            axis = joint.find("axis")
            axis = np.array([float(x) for x in axis.get("xyz").split()]) if axis is not None else np.array([1.0, 0, 0])
            if joint.get("type") != "fixed":
                axis = axis / np.linalg.norm(axis)
            mimic = joint.find("mimic")
            if mimic is not None:
                mimic = (mimic.get("joint"), float(mimic.get("multiplier", 1.0)), float(mimic.get("offset", 0.0)))
            self.joints[joint.find("child").get("link")] = (
                joint.get("name"), joint.get("type"), joint.find("parent").get("link"), T, axis,
                mimic)

    def pose(self, link, base_pose, positions: dict) -> np.ndarray:
        """World pose (4×4) of ``link``; the root link's is ``base_pose``; ``positions`` by joint name."""
        if link not in self.joints:
            return base_pose
        name, kind, parent, origin, axis, mimic = self.joints[link]
        motion = np.eye(4)
        if kind != "fixed":
            q = positions[mimic[0]] * mimic[1] + mimic[2] if mimic else positions[name]
            if kind in ("revolute", "continuous"):
                motion[:3, :3] = Rotation.from_rotvec(q * axis).as_matrix()
            elif kind == "prismatic":
                motion[:3, 3] = q * axis
            else:
                raise ValueError(kind)
        return self.pose(parent, base_pose, positions) @ origin @ motion


def twist_matrix(x):
    """x^ (4×4) of a twist [linear; angular]."""
    w = x[3:]
    return np.array([[0, -w[2], w[1], x[0]], [w[2], 0, -w[0], x[1]], [-w[1], w[0], 0, x[2]], [0, 0, 0, 0]])


def vee(skew):
    return np.array([skew[2, 1] - skew[1, 2], skew[0, 2] - skew[2, 0], skew[1, 0] - skew[0, 1]]) / 2


def expected_contact_motion(kinematics, model, state, nu_dot, contact, h=1e-3):
    """(velocity, acceleration) of the contact in its rows' meaning, from the URDF's kinematics."""
    floating = model.floating_base
    r_dot = nu_dot[6:] if floating else nu_dot

    def pose(t):
        positions = dict(zip(model.joint_names, state.joint_positions + t * state.joint_velocities
                             + 0.5 * t * t * r_dot))
        H = np.eye(4)
        if floating:
            H = state.base_pose @ expm(twist_matrix(t * state.base_twist + 0.5 * t * t * nu_dot[:6]))
        return kinematics.pose(contact.frame, H, positions)

    poses = [pose(k * h) for k in (-2, -1, 0, 1, 2)]
    first = (poses[0] - 8 * poses[1] + 8 * poses[3] - poses[4]) / (12 * h)
    second = (-poses[0] + 16 * poses[1] - 30 * poses[2] + 16 * poses[3] - poses[4]) / (12 * h * h)
    R, R_dot, R_ddot = poses[2][:3, :3], first[:3, :3], second[:3, :3]
    p_dot, p_ddot = first[:3, 3], second[:3, 3]
    if contact.kind == "point":
        velocity, acceleration = p_dot, p_ddot
        if contact.reference == "local":
            velocity, acceleration = R.T @ velocity, R.T @ acceleration
        return velocity, acceleration
    body_velocity = np.concatenate([R.T @ p_dot, vee(R.T @ R_dot)])
    body_acceleration = np.concatenate([R_dot.T @ p_dot + R.T @ p_ddot, vee(R.T @ R_ddot)])
    if contact.reference == "world_aligned":
        rotate = np.kron(np.eye(2), R)
        body_velocity, body_acceleration = rotate @ body_velocity, rotate @ body_acceleration
    return body_velocity, body_acceleration


def engine_contact_kinematics(model, state, contact):
    """The engine's (J (m, N), γ (m)) in the model's coordinates."""
    tree = getattr(model, "tree", model)
    full = model.tree_state(state) if tree is not model else state
    X_up = body_transforms(tree, full.joint_positions)
    J, drift = contact_kinematics(model, full, [contact], X_up, *bias_motion(tree, full, X_up))
    J, drift = J[:contact.dimension], drift[:contact.dimension]
    return (J @ model.velocity_map if tree is not model else J), drift


def offset_mimic_quadruped(tmp_path):
    text = open(rl.robots.bundled_urdf_path()).read()
    end = text.index("</joint>", text.index('<joint name="front_right_knee" type="revolute">'))
    path = tmp_path / "quadruped_offset_mimic.urdf"
    path.write_text(text[:end] + '  <mimic joint="front_left_knee" multiplier="-0.8" offset="0.4"/>\n  ' + text[end:])
    return str(path), True


ROBOTS = {  # name -> (path, floating base) given tmp_path
    "quadruped": lambda tmp: (rl.robots.bundled_urdf_path(), True),
    "quadruped fixed": lambda tmp: (rl.robots.bundled_urdf_path(), False),
    "quadruped with an offset mimic knee": offset_mimic_quadruped,
    "talos": lambda tmp: (example_robot_path("talos"), True),
    "ur5": lambda tmp: (example_robot_path("ur5"), False),
    "panda coupled": lambda tmp: (example_robot_path("panda"), False),
}
CASES = [
    ("quadruped", "front_left_foot", "point", "world_aligned"),
    ("quadruped", "hind_right_foot", "point", "local"),
    ("quadruped", "front_right_foot", "6d", "local"),
    ("quadruped", "hind_left_foot", "6d", "world_aligned"),
    ("quadruped", "imu_link", "6d", "local"),
    ("quadruped fixed", "front_left_foot", "point", "world_aligned"),
    ("quadruped with an offset mimic knee", "front_right_foot", "6d", "local"),
    ("quadruped with an offset mimic knee", "front_right_foot", "point", "world_aligned"),
    ("talos", "left_sole_link", "6d", "world_aligned"),
    ("talos", "right_sole_link", "point", "local"),
    ("talos", "wrist_left_ft_tool_link", "6d", "local"),
    ("talos", "wrist_right_ft_tool_link", "point", "local"),
    ("talos", "imu_link", "6d", "world_aligned"),
    ("ur5", "tool0", "6d", "local"),
    ("ur5", "ee_link", "point", "local"),
    ("ur5", "tool0", "6d", "world_aligned"),
    ("panda coupled", "panda_hand", "6d", "local"),
    ("panda coupled", "panda_rightfinger", "point", "local"),
]


@pytest.mark.parametrize("robot, frame, kind, reference", CASES)
def test_contact_jacobian_and_drift_match_the_urdfs_own_kinematics(robot, frame, kind, reference, tmp_path):
    path, floating = ROBOTS[robot](tmp_path)
    model = rl.load_urdf(path, floating_base=floating)
    kinematics = UrdfKinematics(path)
    contact = rl.Contact(frame, kind=kind, reference=reference)
    rng = np.random.default_rng(zlib.crc32(f"{robot} {frame} {kind} {reference}".encode()))
    for _ in range(3):
        state = random_state(model, rng)
        nu_dot = rng.normal(size=model.n_velocities)
        nu = state.joint_velocities if not floating else np.concatenate([state.base_twist, state.joint_velocities])
        J, drift = engine_contact_kinematics(model, state, contact)
        velocity, acceleration = expected_contact_motion(kinematics, model, state, nu_dot, contact)
        assert np.abs(J @ nu - velocity).max() <= 1e-8 * max(1.0, np.abs(velocity).max()), (J @ nu, velocity)
        assert np.abs(J @ nu_dot + drift - acceleration).max() <= 1e-6 * max(1.0, np.abs(acceleration).max()), (
            J @ nu_dot + drift, acceleration)
