"""Shared fixtures: example robots, random states, random trees, and the
Pinocchio oracle (an independent implementation, used only in tests)."""

from __future__ import annotations

import os
import shutil
import sysconfig
import tempfile

import numpy as np
import pytest

_MADE_CACHE = "ROBOT_LINEARIZATION_CACHE_DIR" not in os.environ  # (a process a test starts inherits the run's)
if _MADE_CACHE:
    os.environ["ROBOT_LINEARIZATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="robot_linearization-test-kernels-")
os.environ["ROBOT_LINEARIZATION_KERNEL"] = "generic"
"""Set before the package is imported (it reads the default kernel then) and before any test module (some
build models and Linearizers at import): the kernels the tests generate are compiled into the test run's
own directory, not the user's cache (each robot once per run; the processes the tests start inherit it,
also those that import this file), and the default kernel is the generic one: a test of kernel="auto"
(test_kernel_choice.py) asks for it, and the hundreds of random robots of the other tests do not each
start a background build."""

import robot_linearization as rl  # noqa: E402
from robot_linearization.joints import Joint, JointType  # noqa: E402
from robot_linearization.pinocchio_reference import rigid_constraint_models  # noqa: E402
from robot_linearization.spatial import se3_exp, so3_exp, spatial_inertia  # noqa: E402

ROBOTS_DIR = os.path.join(sysconfig.get_paths()["purelib"], "cmeel.prefix", "share", "example-robot-data", "robots")

# name -> (URDF relative to example-robot-data/robots, floating base, load options)
EXAMPLE_ROBOTS = {
    "solo12": ("solo_description/robots/solo12.urdf", True, {}),
    "talos": ("talos_data/robots/talos_reduced.urdf", True, {}),
    "talos_full": ("talos_data/robots/talos_full_v2.urdf", True, {"mimic_joints": "independent"}),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False, {}),
    "panda": ("panda_description/urdf/panda.urdf", False, {"mimic_joints": "independent"}),
}


def example_robot_path(name: str) -> str:
    path = os.path.join(ROBOTS_DIR, EXAMPLE_ROBOTS[name][0])
    if not os.path.exists(path):
        pytest.fail(f"example-robot-data is not installed (no {path}); install the test extra: pip install .[test]")
    return path


def load_example(name: str) -> rl.Model:
    _, floating, options = EXAMPLE_ROBOTS[name]
    return rl.load_urdf(example_robot_path(name), floating_base=floating, **options)


def random_state(model: rl.Model, rng: np.random.Generator, scale: float = 1.0) -> rl.State:
    n = model.n_joints
    s = rng.uniform(-np.pi, np.pi, n)
    r = scale * rng.normal(size=n)
    if not model.floating_base:
        return rl.State(joint_positions=s, joint_velocities=r)
    H = se3_exp(np.concatenate([rng.normal(size=3), rng.uniform(-np.pi, np.pi, 3)]))
    return rl.State(base_pose=H, joint_positions=s, base_twist=scale * rng.normal(size=6), joint_velocities=r)


def random_physical_inertia(rng: np.random.Generator) -> np.ndarray:
    mass = rng.uniform(0.5, 3.0)
    principal = rng.uniform(0.01, 0.1, 3)
    principal[2] = min(principal[2], principal[0] + principal[1])  # triangle inequality
    R = so3_exp(rng.normal(size=3))
    return spatial_inertia(mass, rng.normal(scale=0.1, size=3), R @ np.diag(principal) @ R.T)


def random_tree(rng: np.random.Generator, n_joints: int, floating_base: bool = True,
                branched: bool = True) -> rl.Model:
    """A random branched tree (or, not ``branched``, a chain) with revolute, prismatic and helical
    joints about random axes."""
    builder = rl.ModelBuilder("b0", random_physical_inertia(rng), floating_base=floating_base, name="random_tree")
    types = [JointType.REVOLUTE, JointType.PRISMATIC, JointType.HELICAL]
    for i in range(1, n_joints + 1):
        parent = (int(rng.integers(0, i)) if branched else i - 1) if i > 1 else 0
        joint_type = types[i % 3]
        joint = Joint(f"j{i}", joint_type, tuple(rng.normal(size=3)),
                      pitch=0.1 if joint_type is JointType.HELICAL else 0.0)
        placement = se3_exp(np.concatenate([rng.normal(scale=0.3, size=3), rng.normal(size=3)]))
        builder.add_body(f"b{i}", parent=f"b{parent}", joint=joint, placement=placement,
                         inertia=random_physical_inertia(rng))
    return builder.build()


class PinocchioOracle:
    """Pinocchio's A, B, M⁻¹ for the same URDF, reordered to our joint order.

    Pinocchio's free-flyer velocity is the body twist [linear; angular] in the base
    frame and its configuration derivative is taken along q ⊕ exp(δ) = H·exp(δ),
    exactly our z_H, so its ABA derivatives are our dynamics rows block for block.
    """

    def __init__(self, path: str, model: rl.Model):
        import pinocchio as pin

        self.pin = pin
        self.model = model
        if model.floating_base:
            self.pmodel = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
        else:
            self.pmodel = pin.buildModelFromUrdf(path)
        self.pmodel.gravity.linear = model.gravity.copy()
        self.data = self.pmodel.createData()
        names = list(self.pmodel.names)
        self.joint_ids = [names.index(j) for j in model.joint_names]
        off = 6 if model.floating_base else 0
        # ours -> Pinocchio velocity index
        self.perm = np.array(list(range(off)) + [self.pmodel.joints[j].idx_v for j in self.joint_ids])
        assert sorted(self.perm) == list(range(self.pmodel.nv)), "joint sets differ"

    def configuration(self, state: rl.State) -> np.ndarray:
        q = np.zeros(self.pmodel.nq)
        if self.model.floating_base:
            H = state.base_pose
            q[:3] = H[:3, 3]
            q[3:7] = self.pin.Quaternion(H[:3, :3]).coeffs()
        for k, jid in enumerate(self.joint_ids):
            joint = self.pmodel.joints[jid]
            angle = state.joint_positions[k]
            if joint.nq == 2:  # continuous joint: (cos, sin)
                q[joint.idx_q:joint.idx_q + 2] = np.cos(angle), np.sin(angle)
            else:
                q[joint.idx_q] = angle
        return q

    def linearization(self, state: rl.State, torques: np.ndarray):
        pin, model = self.pin, self.model
        off = 6 if model.floating_base else 0
        v = np.zeros(self.pmodel.nv)
        tau = np.zeros(self.pmodel.nv)
        if model.floating_base:
            v[:6] = state.base_twist
        v[self.perm[off:]] = state.joint_velocities
        tau[self.perm[off:]] = torques
        pin.computeABADerivatives(self.pmodel, self.data, self.configuration(state), v, tau)
        P = self.perm
        ddq_dq = self.data.ddq_dq[np.ix_(P, P)]
        ddq_dv = self.data.ddq_dv[np.ix_(P, P)]
        M_inv = np.triu(self.data.Minv) + np.triu(self.data.Minv, 1).T
        M_inv = M_inv[np.ix_(P, P)]
        N = model.n_velocities
        A = np.zeros((2 * N, 2 * N))
        A[N:] = np.hstack([ddq_dq, ddq_dv])
        A[:N, N:] = np.eye(N)  # the kinematic rows: q̇ = ν, left-trivialised (Pinocchio's q ⊕ δ) ...
        if model.floating_base:  # ... with ż_H = −v×·z_H + z_v, Pinocchio's motion action matrix
            A[:6, :6] = -pin.Motion(state.base_twist).action
        B = np.zeros((2 * N, model.n_joints))
        B[N:] = M_inv[:, off:]
        return A, B, M_inv, self.data.ddq[P]


@pytest.fixture
def rng():
    return np.random.default_rng(20191122)


def pytest_sessionfinish(session, exitstatus):
    """The test run's cache of generated kernels removed at its end, by the process that made it: pytest's
    own, or with pytest-xdist the controller (after its workers ended: they inherited the directory)."""
    if _MADE_CACHE:
        shutil.rmtree(os.environ["ROBOT_LINEARIZATION_CACHE_DIR"], ignore_errors=True)


def pinocchio_constrained_linearization(oracle: PinocchioOracle, state: rl.State, torques, contacts):
    """Pinocchio's constraintDynamics + computeConstraintDynamicsDerivatives for the
    same contacts (RigidConstraintModel CONTACT_3D/6D, LOCAL_WORLD_ALIGNED/LOCAL, zero
    Baumgarte gains), in our joint order: (dynamics rows of A (N, 2N), of B (N, n),
    ν̇, λ, ∂λ/∂z, ∂λ/∂τ)."""
    pin, model, pm = oracle.pin, oracle.model, oracle.pmodel
    off = 6 if model.floating_base else 0
    constraint_models, constraint_datas = rigid_constraint_models(pin, pm, contacts)
    data = pm.createData()
    pin.initConstraintDynamics(pm, data, constraint_models, constraint_datas)
    v, tau = np.zeros(pm.nv), np.zeros(pm.nv)
    if model.floating_base:
        v[:6] = state.base_twist
    P = oracle.perm
    v[P[off:]] = state.joint_velocities
    tau[P[off:]] = torques
    settings = pin.ProximalSettings(1e-14, 1e-12, 1)  # μ = 1e-12: the exact KKT solution to ~1e-12
    ddq = pin.constraintDynamics(pm, data, oracle.configuration(state), v, tau, constraint_models,
                                 constraint_datas, settings)
    ddq_dq, ddq_dv, ddq_dtau, dl_dq, dl_dv, dl_dtau = (np.asarray(x) for x in pin.computeConstraintDynamicsDerivatives(
        pm, data, constraint_models, constraint_datas, settings))
    A_dyn = np.hstack([ddq_dq[np.ix_(P, P)], ddq_dv[np.ix_(P, P)]])
    return (A_dyn, ddq_dtau[np.ix_(P, P[off:])], ddq[P], np.array(data.lambda_c),
            np.hstack([dl_dq[:, P], dl_dv[:, P]]), dl_dtau[:, P[off:]])


def write_bag(path, events, version=8):
    """A ROS 2 bag (mcap, rosbag2 format ``version``) of [(log time ns, topic, rosbags message)],
    one connection per topic; the messages are rosbags' Humble definitions."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    typestore = get_typestore(Stores.ROS2_HUMBLE)
    writer = Writer(path, version=version, storage_plugin=StoragePlugin.MCAP)
    writer.open()
    connections = {}
    for t, topic, msg in events:
        if topic not in connections:
            connections[topic] = writer.add_connection(topic, msg.__msgtype__, typestore=typestore)
        writer.write(connections[topic], t, typestore.serialize_cdr(msg, msg.__msgtype__))
    writer.close()
