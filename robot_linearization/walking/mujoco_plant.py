"""MuJoCo as the plant a walking controller runs on: the engine users run, independent of the project's own
ground (ground.py), with the robot the project loaded.

:func:`mujoco_description` writes MuJoCo's model (MJCF) of a Model: each body with the inertia the URDF
loader gave it (links on fixed joints merged into their body, no inertia altered), placed where the Model
places it, a free joint on the root, one torque motor per joint limited to its effort limit, a floor,
and contact geometry on the feet only (contacts between feet and floor, nothing else).  Its options are
MuJoCo Menagerie's for legged robots by default (elliptic friction cones, impratio 100), each
overridable.

:class:`MuJoCoPlant` runs it: a State in and out (MuJoCo's quaternion order and free-joint velocity
frames converted both ways: :func:`to_mujoco`, :func:`from_mujoco`), torques held over each step, and
what only an engine with compliant contacts shows: each stance foot's slip, the deepest penetration, a
sole's centre of pressure from the contact forces.  A user's own MJCF (a Menagerie robot) can be the plant
instead: its joints are matched to the Model's by name, and its mass matrix and accelerations are checked
against the Model's when the plant is made.

Needs the ``mujoco`` extra (pip install 'robot_linearization[mujoco]')."""

from __future__ import annotations

import logging
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..algorithms.forward_dynamics import forward_dynamics
from ..algorithms.kinematics import frame_poses
from ..algorithms.mass_matrix import mass_matrix
from ..arguments import positive_number
from ..gait import Gait
from ..model import Model, State, floating_base_of
from ..spatial import inverse_transform, pose_quaternion, quaternion_pose, skew, unskew
from .ground import standing_feet

FLOOR = "floor"
LINK_RADIUS = 0.02
"""The radius of the capsules that draw each link in an image of the scene (MuJoCoPlant.render; no mass, no
contacts), in units of the robot's reach (its farthest foot from its base, every joint at zero)."""
LINK_COLOUR = "0.35 0.45 0.6 1"
"""The name of the floor's geom."""

_log = logging.getLogger("robot_linearization")


def _said(text: str) -> None:
    """MuJoCo's warnings (an unstable simulation, …) on the package's logger: MuJoCo would otherwise
    append them to a file MUJOCO_LOG.TXT in the working directory, which is the user's."""
    _log.warning("MuJoCo: %s", " ".join(text.split()))


@dataclass(frozen=True)
class ContactOptions:
    """MuJoCo's options of the plant: ``timestep`` [s]; ``cone`` "elliptic" or "pyramidal"; ``impratio``;
    ``friction`` μ (sliding) of feet on the floor; ``integrator`` ("Euler", "implicitfast", "RK4");
    the defaults are MuJoCo Menagerie's for its legged robots (elliptic cones, impratio 100)."""

    timestep: float = 0.001
    cone: str = "elliptic"
    impratio: float = 100.0
    friction: float = 1.0
    integrator: str = "Euler"


def _placement(X: np.ndarray) -> np.ndarray:
    """parent_H_joint (4, 4) of a Model's tree transform λ|i_X_λ = Ad(inverse(parent_H_joint)) (6, 6)."""
    R = X[3:, 3:]
    inverse = np.eye(4)
    inverse[:3, :3], inverse[:3, 3] = R, unskew(X[:3, 3:] @ R.T)
    return inverse_transform(inverse)


def _inertia(M: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass, centre of mass (3,), rotational inertia about it (3, 3)) of a body inertia at its frame
    (spatial.spatial_inertia's inverse)."""
    mass = float(M[0, 0])
    if mass <= 0.0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    c = unskew(M[3:, :3]) / mass
    C = skew(c)
    return mass, c, M[3:, 3:] + mass * C @ C


def _numbers(values) -> str:
    return " ".join(repr(float(x)) for x in np.ravel(values))


def mujoco_description(model: Model, feet, effort_limits, *, sole_size=None, foot_radius: float = 0.01,
                       options: ContactOptions = ContactOptions(), ground: float = 0.0) -> str:
    """MJCF (str) of ``model`` (a floating-base Model) standing on the floor z = ``ground``, for MuJoCo.

    feet: frame names; each gets a sphere of ``foot_radius`` [m] whose lowest point is the frame (a point
    contact there, as the MPC plans it), or, with ``sole_size`` (length, width) [m], a box of that sole
    whose underside is the frame's xy plane (a sole).  effort_limits (n,) [N m or N]: each joint's motor
    limit (inf: none).  ValueError in one line for a fixed base, a helical joint, or a moving body
    without mass."""
    if not model.floating_base:
        raise ValueError(f"model '{model.name}': a fixed base does not stand on a floor")
    limits = np.asarray(effort_limits, dtype=float)
    if limits.shape != (model.n_joints,):
        raise ValueError(f"effort_limits: expected shape ({model.n_joints},), got {limits.shape}")
    root = ET.Element("mujoco", model=model.name)
    ET.SubElement(root, "compiler", angle="radian", inertiafromgeom="false", autolimits="true")
    gravity = _numbers(model.gravity)
    ET.SubElement(root, "option", timestep=repr(options.timestep), gravity=gravity, cone=options.cone,
                  impratio=repr(options.impratio), integrator=options.integrator)
    # what an image of the scene shows (plant.render): a checkered floor in light; nothing of the dynamics
    assets = ET.SubElement(root, "asset")
    ET.SubElement(assets, "texture", name="floor", type="2d", builtin="checker", rgb1="0.8 0.8 0.8",
                  rgb2="0.6 0.6 0.6", width="256", height="256")
    ET.SubElement(assets, "material", name="floor", texture="floor", texrepeat="1 1", texuniform="true")
    ET.SubElement(assets, "texture", type="skybox", builtin="gradient", rgb1="0.65 0.75 0.9", rgb2="0.3 0.35 0.45",
                  width="64", height="64")
    world = ET.SubElement(root, "worldbody")
    ET.SubElement(world, "light", directional="true", pos="0 0 5", dir="-0.3 0.3 -1", castshadow="false")
    zero = State(base_pose=np.eye(4), joint_positions=np.zeros(model.n_joints), base_twist=np.zeros(6),
                 joint_velocities=np.zeros(model.n_joints))
    link_radius = LINK_RADIUS * float(np.linalg.norm(frame_poses(model, zero, list(feet))[:, :3, 3], axis=1).max())
    # (MuJoCo takes the larger friction of a contact's two geoms: the feet carry the floor's too)
    friction = f"{options.friction!r} 0.005 0.0001"
    ET.SubElement(world, "geom", name=FLOOR, type="plane", size="0 0 1", pos=f"0 0 {ground!r}", contype="0",
                  conaffinity="1", friction=friction, material="floor")
    elements: dict[int, ET.Element] = {}
    for body, name in enumerate(model.body_names):
        if body == 0:
            element = ET.SubElement(world, "body", name=name, pos="0 0 0")
            ET.SubElement(element, "freejoint", name="floating_base")
        else:
            placement = _placement(model.tree_transforms[body])
            w, x, y, z = pose_quaternion(placement)
            element = ET.SubElement(elements[model.parent[body]], "body", name=name, pos=_numbers(placement[:3, 3]),
                                    quat=_numbers((w, x, y, z)))
            joint = model.joints[body - 1]
            if joint.type.value == "helical":
                raise ValueError(f"joint '{joint.name}' is helical: MuJoCo has no helical joint")
            kind = "hinge" if joint.type.value == "revolute" else "slide"
            ET.SubElement(element, "joint", name=joint.name, type=kind, axis=_numbers(joint.axis), limited="false")
            if np.linalg.norm(placement[:3, 3]) > 1e-6:  # a link drawn from its parent's origin to this body's
                ET.SubElement(elements[model.parent[body]], "geom", type="capsule", size=repr(link_radius),
                              fromto=_numbers(np.r_[np.zeros(3), placement[:3, 3]]), contype="0", conaffinity="0",
                              mass="0", rgba=LINK_COLOUR)
        mass, com, inertia = _inertia(model.inertias[body])
        if mass <= 0.0:
            raise ValueError(f"body '{name}' has no mass: MuJoCo moves no massless body (give its link an inertial)")
        ET.SubElement(element, "inertial", pos=_numbers(com), mass=repr(mass),
                      fullinertia=_numbers((inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1],
                                            inertia[0, 2], inertia[1, 2])))
        elements[body] = element
    for foot in feet:
        body, H = model.frames[foot]
        ET.SubElement(elements[body], "site", name=foot, pos=_numbers(H[:3, 3]), quat=_numbers(pose_quaternion(H)))
        if np.linalg.norm(H[:3, 3]) > 1e-6:  # (the last link drawn, to the foot)
            ET.SubElement(elements[body], "geom", type="capsule", size=repr(link_radius),
                          fromto=_numbers(np.r_[np.zeros(3), H[:3, 3]]), contype="0", conaffinity="0", mass="0",
                          rgba=LINK_COLOUR)
        if sole_size is None:
            offset = H[:3, :3] @ np.array([0.0, 0.0, foot_radius])  # (its lowest point at the frame, standing)
            ET.SubElement(elements[body], "geom", name=foot, type="sphere", size=repr(foot_radius),
                          pos=_numbers(H[:3, 3] + offset), contype="1", conaffinity="0", condim="3",
                          mass="0", friction=friction)
        else:
            half = (0.5 * sole_size[0], 0.5 * sole_size[1], 0.005)
            centre = H[:3, 3] + H[:3, :3] @ np.array([0.0, 0.0, half[2]])
            ET.SubElement(elements[body], "geom", name=foot, type="box", size=_numbers(half), pos=_numbers(centre),
                          quat=_numbers(pose_quaternion(H)), contype="1", conaffinity="0", condim="3", mass="0",
                          friction=friction)
    actuators = ET.SubElement(root, "actuator")
    for name, limit in zip(model.joint_names, limits):
        attributes = {"name": name, "joint": name, "gear": "1"}
        if np.isfinite(limit):
            attributes["ctrlrange"] = _numbers((-limit, limit))
        ET.SubElement(actuators, "motor", attributes)
    return ET.tostring(root, encoding="unicode")


class Layout:
    """Where a Model's state lies in a MuJoCo model's qpos and qvel: matched by joint name (the free joint
    is the root body's).  ``mujoco_model``: a mujoco.MjModel; ValueError in one line for a joint of the
    Model the MuJoCo model lacks or a root without a free joint."""

    def __init__(self, model: Model, mujoco_model):
        import mujoco

        free = [j for j in range(mujoco_model.njnt) if mujoco_model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
        if len(free) != 1:
            raise ValueError(f"the MuJoCo model has {len(free)} free joints: expected one, on the robot's root")
        self.free_qpos, self.free_qvel = int(mujoco_model.jnt_qposadr[free[0]]), int(mujoco_model.jnt_dofadr[free[0]])
        qpos, qvel = [], []
        for name in model.joint_names:
            index = mujoco.mj_name2id(mujoco_model, mujoco.mjtObj.mjOBJ_JOINT, name)
            if index < 0:
                raise ValueError(f"the MuJoCo model has no joint '{name}' (a joint of model '{model.name}')")
            qpos.append(int(mujoco_model.jnt_qposadr[index]))
            qvel.append(int(mujoco_model.jnt_dofadr[index]))
        self.joint_qpos, self.joint_qvel = np.array(qpos), np.array(qvel)
        # ν (the Model's order: base twist, then joints) -> MuJoCo's dofs
        self.dofs = np.r_[self.free_qvel + np.arange(6), self.joint_qvel]
        self.nq, self.nv = mujoco_model.nq, mujoco_model.nv


def to_mujoco(layout: Layout, state: State, qpos: np.ndarray, qvel: np.ndarray) -> None:
    """Write ``state`` into MuJoCo's ``qpos`` (nq,) and ``qvel`` (nv,): the base's position and
    quaternion (w, x, y, z), its linear velocity in the world and angular velocity in the base frame
    (MuJoCo's free joint), the joints by name."""
    H, twist = floating_base_of(state)
    qpos[layout.free_qpos:layout.free_qpos + 3] = H[:3, 3]
    qpos[layout.free_qpos + 3:layout.free_qpos + 7] = pose_quaternion(H)
    qpos[layout.joint_qpos] = state.joint_positions
    qvel[layout.free_qvel:layout.free_qvel + 3] = H[:3, :3] @ twist[:3]
    qvel[layout.free_qvel + 3:layout.free_qvel + 6] = twist[3:]
    qvel[layout.joint_qvel] = state.joint_velocities


def from_mujoco(layout: Layout, qpos: np.ndarray, qvel: np.ndarray) -> State:
    """The State of MuJoCo's ``qpos`` and ``qvel`` (:func:`to_mujoco`'s inverse): the base twist in the
    base frame, [v; ω]."""
    w, x, y, z = qpos[layout.free_qpos + 3:layout.free_qpos + 7]
    H = quaternion_pose(w, x, y, z, qpos[layout.free_qpos:layout.free_qpos + 3])
    linear = H[:3, :3].T @ qvel[layout.free_qvel:layout.free_qvel + 3]
    return State(base_pose=H, joint_positions=qpos[layout.joint_qpos].copy(),
                 base_twist=np.r_[linear, qvel[layout.free_qvel + 3:layout.free_qvel + 6]],
                 joint_velocities=qvel[layout.joint_qvel].copy())


def velocity_map(layout: Layout, state: State) -> np.ndarray:
    """T (nv, N): MuJoCo's velocity of the Model's ν at ``state`` (qvel = T ν): the base's linear
    velocity turned into the world, the rest as it is.  Its mass matrix is then Tᵀ M_mujoco T."""
    H, _ = floating_base_of(state)
    T = np.zeros((layout.nv, 6 + len(layout.joint_qvel)))
    T[layout.dofs, np.arange(T.shape[1])] = 1.0
    T[layout.free_qvel:layout.free_qvel + 3, :3] = H[:3, :3]
    return T


def dynamics_mismatch(model: Model, mujoco_model, layout: Layout, state: State, torques: np.ndarray,
                      data=None) -> tuple[float, float]:
    """(relative error of MuJoCo's mass matrix, relative error of its accelerations) against the Model's at
    ``state`` with joint torques ``torques`` (n,), without contacts (the robot away from the floor):
    the largest entry of ``Tᵀ M_mj T − M`` over the largest of ``M``, and that of ``ν̇_mj − ν̇`` over
    ``max(max abs ν̇, 1)``, ν̇_mj from MuJoCo's qacc (its free joint's linear part is the world
    acceleration of the base's origin: ν̇ = Rᵀ a − ω × v)."""
    import mujoco

    data = mujoco.MjData(mujoco_model) if data is None else data
    to_mujoco(layout, state, data.qpos, data.qvel)
    data.qfrc_applied[:] = 0.0
    data.ctrl[:] = 0.0
    data.qfrc_applied[layout.joint_qvel] = torques
    mujoco.mj_forward(mujoco_model, data)
    if data.ncon:
        raise ValueError(f"the state touches the floor ({data.ncon} contacts): lift the robot to compare")
    full = np.zeros((mujoco_model.nv, mujoco_model.nv))
    if hasattr(data, "qM"):  # (MuJoCo before 4.0, the newest on Python 3.10: the sparse inertia qM)
        mujoco.mj_fullM(mujoco_model, full, data.qM)
    else:
        mujoco.mj_fullM(mujoco_model, data, full)
    T = velocity_map(layout, state)
    M = mass_matrix(model, state.joint_positions)
    mass_error = float(np.abs(T.T @ full @ T - M).max() / np.abs(M).max())
    H, twist = floating_base_of(state)
    qacc = data.qacc
    base = np.r_[H[:3, :3].T @ qacc[layout.free_qvel:layout.free_qvel + 3] - np.cross(twist[3:], twist[:3]),
                 qacc[layout.free_qvel + 3:layout.free_qvel + 6]]
    base_acceleration, joint_accelerations = forward_dynamics(model, state, torques)
    assert base_acceleration is not None  # (a floating base)
    ours = np.concatenate([base_acceleration, joint_accelerations])
    theirs = np.r_[base, qacc[layout.joint_qvel]]
    return mass_error, float(np.abs(theirs - ours).max() / max(np.abs(ours).max(), 1.0))


class MuJoCoPlant:
    """``model`` (a floating-base Model) walking ``gait`` on MuJoCo's floor z = ``ground``: the same
    interface as ground.GroundSimulation, which scenario.walk drives.

    ``feet``: the gait's frames; ``effort_limits`` (n,): the motors' limits; ``state``: where it starts
    (a State; the time 0).  ``options``: ContactOptions (the step ``dt`` is its timestep).  ``mjcf``: a
    user's own MJCF text instead of :func:`mujoco_description`'s (its joints matched by name, its free
    joint the root's; its dynamics checked against the Model's at ``state`` lifted, ValueError in one
    line beyond ``check_tolerance``); ``sole_size``: a sole's (length, width) [m] ("6d" gaits).

    After each step: ``held`` the feet touching the floor; ``forces`` {foot: the force (3,) [N] it
    received, world axes}; ``pressure_margins`` {sole: how far inside its rectangle its centre of
    pressure lay [m] (negative: outside)}; ``penetration`` [m] the deepest a foot went into the floor
    so far; ``slips`` [(time, foot, distance [m])] each stance's slip at its lift-off: how far the foot's
    material point at its contact moved along the floor while it stood (a foot rolling on its sphere
    does not slip); ``touchdowns`` (time, feet) as the ground's; ``landing_tilts`` [(time, sole, angle
    [rad])] how far each sole's normal was from the floor's when it touched down (soles only)."""

    def __init__(self, model: Model, gait: Gait, state: State, *, feet, effort_limits, sole_size=None,
                 options: ContactOptions = ContactOptions(), ground: float = 0.0, mjcf: str | None = None,
                 tolerance: float = 1e-3, check_tolerance: float = 1e-8):
        try:
            import mujoco
        except ImportError:
            raise ImportError("the MuJoCo plant needs mujoco: pip install 'robot_linearization[mujoco]'") from None
        except Exception as error:  # noqa: BLE001 - (its renderer's OpenGL, loaded as it is imported, fails so)
            backend, said = os.environ.get("MUJOCO_GL"), " ".join(str(error).split())
            raise ImportError(f"mujoco cannot be imported here ({type(error).__name__}: {said})"
                              + (f": MUJOCO_GL={backend} needs its library (egl: libEGL, osmesa: libOSMesa); "
                                 "without it, unset MUJOCO_GL" if backend else "")) from None
        self._mujoco = mujoco
        mujoco.set_mju_user_warning(_said)
        self.model, self.gait, self.feet = model, gait, tuple(feet)
        self.sole_size, self.height, self.tolerance = sole_size, ground, tolerance
        positive_number(options.timestep, "timestep", "s")
        text = mjcf if mjcf is not None else mujoco_description(model, self.feet, effort_limits, sole_size=sole_size,
                                                               options=options, ground=ground)
        try:
            self.mj_model = mujoco.MjModel.from_xml_string(text)
        except ValueError as error:
            raise ValueError(f"MuJoCo refused the model: {' '.join(str(error).split())}") from None
        self.data = mujoco.MjData(self.mj_model)
        self.layout = Layout(model, self.mj_model)
        self.dt = float(self.mj_model.opt.timestep)
        self._foot_geoms = {}
        for foot in self.feet:
            geom = mujoco.mj_name2id(self.mj_model, mujoco.mjtObj.mjOBJ_GEOM, foot)
            if geom < 0:
                raise ValueError(f"the MuJoCo model has no geom named '{foot}' (a foot's contact geometry)")
            self._foot_geoms[geom] = foot
        # (each foot's site, in its frame: a sole's centre of pressure and tilt are taken there)
        self._sites = {foot: mujoco.mj_name2id(self.mj_model, mujoco.mjtObj.mjOBJ_SITE, foot) for foot in self.feet}
        self._actuators = np.array([mujoco.mj_name2id(self.mj_model, mujoco.mjtObj.mjOBJ_ACTUATOR, name)
                                    for name in model.joint_names])
        if (self._actuators < 0).any():
            missing = model.joint_names[int(np.flatnonzero(self._actuators < 0)[0])]
            raise ValueError(f"the MuJoCo model has no actuator named '{missing}' (one per joint, by name)")
        if mjcf is not None:
            lifted = State(base_pose=floating_base_of(state)[0] + _lift(10.0),
                           joint_positions=state.joint_positions, base_twist=np.zeros(6),
                           joint_velocities=np.zeros(model.n_joints))
            errors = dynamics_mismatch(model, self.mj_model, self.layout, lifted, np.zeros(model.n_joints))
            if max(errors) > check_tolerance:
                raise ValueError(f"the MuJoCo model's dynamics differ from model '{model.name}''s: mass matrix "
                                 f"{errors[0]:.1e}, accelerations {errors[1]:.1e} (relative; tolerance "
                                 f"{check_tolerance:g})")
        self.time, self.steps = 0.0, 0
        self.state = state
        self._standing = max(float(floating_base_of(state)[0][2, 3]) - ground, 0.1)  # [m] (the camera's distance)
        self._renderer: Any = None  # (mujoco.Renderer, made at the first image)
        self.held = self._touching()
        self.forces: dict = {}
        self.pressure_margins: dict = {}
        self.penetration = 0.0
        self.slips: list = []
        self.touchdowns: list = []
        self.landing_tilts: list = []
        self.violations: list = []  # (none: MuJoCo's contacts are what they are; slip and penetration say)
        self.correction = self.drift = self.turned = 0.0  # (the own ground's projection: none here)
        self._slid = {foot: np.zeros(2) for foot in self.held}  # foot -> its slip so far in this stance (xy)

    @property
    def state(self) -> State:
        return from_mujoco(self.layout, self.data.qpos, self.data.qvel)

    @state.setter
    def state(self, state: State) -> None:
        to_mujoco(self.layout, state, self.data.qpos, self.data.qvel)
        self._mujoco.mj_forward(self.mj_model, self.data)

    @property
    def divergences(self) -> int:
        """How many times MuJoCo found its accelerations not finite or huge (an unstable simulation) and reset
        its state to the model's default (which is not standing) so far."""
        return int(self.data.warning[self._mujoco.mjtWarning.mjWARN_BADQACC].number)

    def foot_heights(self, state: State | None = None) -> dict:
        """{foot: the height of its frame above the floor [m]}."""
        poses = frame_poses(self.model, self.state if state is None else state, list(self.feet))
        return {foot: poses[i, 2, 3] - self.height for i, foot in enumerate(self.feet)}

    def _touching(self) -> tuple:
        data, touching = self.data, set()
        for k in range(data.ncon):
            contact = data.contact[k]
            for geom in (contact.geom1, contact.geom2):
                if geom in self._foot_geoms and contact.dist <= 0.0:
                    touching.add(self._foot_geoms[geom])
        return tuple(f for f in self.feet if f in touching)

    def contacts_now(self) -> tuple:
        """The feet the gait schedules that touch the floor or are within ``tolerance`` of it (the MPC's
        contact set)."""
        scheduled = {c.frame for c in self.gait.contacts_at(self.time)}
        return standing_feet(self.feet, scheduled, self.held, self.foot_heights(), self.tolerance)

    def step(self, torques: np.ndarray) -> None:
        """One MuJoCo step of dt with joint torques τ (n,) (clipped to the motors' limits)."""
        mujoco, data = self._mujoco, self.data
        data.ctrl[self._actuators] = torques
        mujoco.mj_step(self.mj_model, data)
        self.steps += 1
        self.time = self.steps * self.dt
        sliding = self._contact_forces()
        held = self._touching()
        closing = tuple(f for f in held if f not in self.held)
        if closing:
            self.touchdowns.append((self.time, closing))
            if self.sole_size is not None:  # (a sole's site has its frame: R₂₂ = its z axis · the floor's normal)
                for foot in closing:
                    cosine = data.site_xmat[self._sites[foot]][8]
                    self.landing_tilts.append((self.time, foot, float(np.arccos(np.clip(cosine, -1.0, 1.0)))))
        for foot in held:
            self._slid[foot] = self._slid.get(foot, np.zeros(2)) + self.dt * sliding.get(foot, np.zeros(2))
        for foot in self.held:
            if foot not in held:  # (lift-off: how far it slid while it stood)
                self.slips.append((self.time, foot, float(np.linalg.norm(self._slid.pop(foot, np.zeros(2))))))
        self.held = held

    def render(self, width: int = 320, height: int = 240) -> np.ndarray:
        """An image (height, width, 3) uint8 of the robot now, seen by a camera that follows its base from
        three times its standing height, ahead to its left.  RuntimeError in one line where MuJoCo cannot
        render (it needs $MUJOCO_GL=egl or osmesa without a display)."""
        mujoco = self._mujoco
        if self._renderer is None:
            try:
                self._renderer = mujoco.Renderer(self.mj_model, height, width)
            except Exception as error:  # noqa: BLE001 - (MuJoCo's errors differ by backend)
                raise RuntimeError("MuJoCo cannot render here (set MUJOCO_GL=egl or osmesa where there is no "
                                   f"display): {' '.join(str(error).split())}") from None
            self._camera = mujoco.MjvCamera()
            self._camera.type = mujoco.mjtCamera.mjCAMERA_TRACKING
            self._camera.trackbodyid = 1  # (the root: the base)
            self._camera.distance, self._camera.azimuth, self._camera.elevation = 3.0 * self._standing, 135.0, -15.0
        self._renderer.update_scene(self.data, camera=self._camera)
        return self._renderer.render().copy()

    def stance_slips(self) -> list:
        """The slips of the stances not ended yet, (time, foot, distance [m]), as at a lift-off now."""
        return [(self.time, foot, float(np.linalg.norm(slid))) for foot, slid in self._slid.items()]

    def _contact_forces(self) -> dict:
        """forces, pressure_margins and the deepest penetration, from MuJoCo's contacts; returns {foot: the
        mean velocity (2,) along the floor [m/s] of its material points at its contacts}."""
        mujoco, data = self._mujoco, self.data
        forces = {foot: np.zeros(3) for foot in self.feet}
        moments = {foot: np.zeros(3) for foot in self.feet}
        sliding: dict = {}
        local, motion = np.zeros(6), np.zeros(6)
        for k in range(data.ncon):
            contact = data.contact[k]
            geom = contact.geom1 if contact.geom1 in self._foot_geoms else contact.geom2
            foot = self._foot_geoms.get(geom)
            if foot is None:
                continue
            self.penetration = max(self.penetration, -float(contact.dist))
            # the velocity of the foot's material point at the contact (mj_objectVelocity: [ω; v] at the
            # geom's centre, world axes)
            mujoco.mj_objectVelocity(self.mj_model, data, mujoco.mjtObj.mjOBJ_GEOM, geom, motion, 0)
            at = motion[3:] + np.cross(motion[:3], contact.pos - data.geom_xpos[geom])
            count, total = sliding.get(foot, (0, np.zeros(2)))
            sliding[foot] = (count + 1, total + at[:2])
            mujoco.mj_contactForce(self.mj_model, data, k, local)
            frame = contact.frame.reshape(3, 3)  # rows: the contact's axes in the world
            force = frame.T @ local[:3]  # on geom2 from geom1, world axes
            if contact.geom1 in self._foot_geoms:
                force = -force  # (on the foot)
            forces[foot] += force
            if self.sole_size is not None:
                moments[foot] += np.cross(contact.pos - data.site_xpos[self._sites[foot]], force)
        self.forces = {foot: f for foot, f in forces.items() if f.any()}
        self.pressure_margins = {}
        if self.sole_size is not None:
            for foot, force in self.forces.items():
                R = data.site_xmat[self._sites[foot]].reshape(3, 3)
                f, m = R.T @ force, R.T @ moments[foot]
                if f[2] <= 0.0:
                    continue
                cop = np.array([-m[1] / f[2], m[0] / f[2]])  # in the sole's frame
                self.pressure_margins[foot] = float(min(0.5 * self.sole_size[0] - abs(cop[0]),
                                                        0.5 * self.sole_size[1] - abs(cop[1])))
        return {foot: total / count for foot, (count, total) in sliding.items()}


def _lift(height: float) -> np.ndarray:
    lift = np.zeros((4, 4))
    lift[2, 3] = height
    return lift

