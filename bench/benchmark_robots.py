"""The robots the benchmarks time (example-robot-data's and the bundled one), their random states,
and Pinocchio's calls on them in its coordinates: shared by bench/benchmark.py and
bench/casadi_floor.py."""

from __future__ import annotations

import os
import sysconfig

import numpy as np

import robot_linearization as rl
from robot_linearization.robots import bundled_urdf_path
from robot_linearization.spatial import se3_exp

# (bench/, the script's directory, is first on sys.path)
from pinocchio_pipelines import Pipeline

ROBOTS_DIR = os.path.join(sysconfig.get_paths()["purelib"], "cmeel.prefix", "share", "example-robot-data", "robots")
ROBOTS = {  # name -> (URDF, floating base, load options)
    "solo12": (os.path.join(ROBOTS_DIR, "solo_description/robots/solo12.urdf"), True, {}),
    "talos": (os.path.join(ROBOTS_DIR, "talos_data/robots/talos_reduced.urdf"), True, {}),
    "talos_full": (os.path.join(ROBOTS_DIR, "talos_data/robots/talos_full_v2.urdf"), True,
                   {"mimic_joints": "independent"}),
    "panda": (os.path.join(ROBOTS_DIR, "panda_description/urdf/panda.urdf"), False, {"mimic_joints": "independent"}),
    "rl_quadruped": (bundled_urdf_path(), True, {}),
}


def random_states(model, rng, count):
    states = []
    for _ in range(count):
        s, r = rng.uniform(-np.pi, np.pi, model.n_joints), rng.normal(size=model.n_joints)
        if model.floating_base:
            H = se3_exp(np.concatenate([rng.normal(size=3), rng.uniform(-np.pi, np.pi, 3)]))
            states.append(rl.State(base_pose=H, joint_positions=s, base_twist=rng.normal(size=6), joint_velocities=r))
        else:
            states.append(rl.State(joint_positions=s, joint_velocities=r))
    return states


class PinocchioPipeline:
    """Pinocchio's calls on one of our models (pinocchio_pipelines.Pipeline, the test extra's
    Pinocchio), with our states in its coordinates and the permutation between the two."""

    def __init__(self, path, model, contacts=()):
        import pinocchio as pin

        self.pin, self.model = pin, model
        self.pipeline = Pipeline(pin, path, model.floating_base, contacts)
        self.pmodel = self.pipeline.model
        names = list(self.pmodel.names)
        ids = [names.index(j) for j in model.joint_names]
        off = 6 if model.floating_base else 0
        self.perm = np.array(list(range(off)) + [self.pmodel.joints[j].idx_v for j in ids])
        self.ids = ids

    def inputs(self, state, torques):
        """Our state in Pinocchio's coordinates (done once, outside the timing)."""
        q = np.zeros(self.pmodel.nq)
        v, tau = np.zeros(self.pmodel.nv), np.zeros(self.pmodel.nv)
        off = 6 if self.model.floating_base else 0
        if off:
            q[:3] = state.base_pose[:3, 3]
            q[3:7] = self.pin.Quaternion(state.base_pose[:3, :3]).coeffs()
            v[:6] = state.base_twist
        for k, jid in enumerate(self.ids):
            joint = self.pmodel.joints[jid]
            if joint.nq == 2:
                q[joint.idx_q:joint.idx_q + 2] = np.cos(state.joint_positions[k]), np.sin(state.joint_positions[k])
            else:
                q[joint.idx_q] = state.joint_positions[k]
        v[self.perm[off:]] = state.joint_velocities
        tau[self.perm[off:]] = torques
        return q, v, tau

    def _joint_order(self):
        off = 6 if self.model.floating_base else 0
        return self.perm[off:] - off
