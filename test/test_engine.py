"""The compiled engine: identical to the unoptimised path, the horizon API, the
workspaces, and the pure-Python fallback of the same kernels."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import robot_linearization as rl
from robot_linearization.workspace import Workspace, workspace
from robot_linearization.robots import thesis_test_system

from conftest import load_example, random_state, random_tree
from dense_reference import dense_linearization


def _relative(ours, ref):
    return np.abs(ours - ref).max() / max(np.abs(ref).max(), 1e-300)


@pytest.mark.parametrize("name", ["thesis", "random", "random_fixed", "talos", "panda"])
def test_compiled_engine_reproduces_the_dense_unoptimised_path(rng, name):
    model = {"thesis": thesis_test_system, "random": lambda: random_tree(rng, 15),
             "random_fixed": lambda: random_tree(rng, 9, floating_base=False)}.get(name, lambda: load_example(name))()
    for _ in range(3):
        state = random_state(model, rng, scale=3.0)
        torques = 5 * rng.normal(size=model.n_joints)
        lin = rl.linearize(model, state, torques)
        A, B, M_inv = dense_linearization(model, state, torques)
        assert _relative(lin.A, A) <= 1e-10
        assert _relative(lin.B, B) <= 1e-10
        assert _relative(lin.M_inv, M_inv) <= 1e-10


def test_trajectory_equals_single_calls_on_both_cores(rng):
    model = load_example("talos")
    states = [random_state(model, rng) for _ in range(9)]
    torques = rng.normal(size=(9, model.n_joints))
    batch = rl.linearize_trajectory(model, states, torques, workers=2)
    assert batch.A.shape == (9, 2 * model.n_velocities, 2 * model.n_velocities)
    assert batch.B.shape == (9, 2 * model.n_velocities, model.n_joints)
    assert batch.M_inv.shape == (9, model.n_velocities, model.n_velocities)
    assert batch.base_acceleration.shape == (9, 6) and batch.joint_accelerations.shape == (9, model.n_joints)
    for k, state in enumerate(states):
        single = rl.linearize(model, state, torques[k])
        np.testing.assert_array_equal(batch.A[k], single.A)
        np.testing.assert_array_equal(batch.M_inv[k], single.M_inv)
        np.testing.assert_array_equal(batch.joint_accelerations[k], single.joint_accelerations)


def test_trajectory_rejects_a_bad_state_by_index(rng):
    model = load_example("solo12")
    states = [random_state(model, rng) for _ in range(4)]
    states[2] = rl.State(base_pose=states[2].base_pose, joint_positions=np.full(model.n_joints, np.nan),
                         base_twist=states[2].base_twist, joint_velocities=states[2].joint_velocities)
    with pytest.raises(ValueError, match=r"states\[2\]\.joint_positions contains NaN or inf"):
        rl.linearize_trajectory(model, states)
    with pytest.raises(ValueError, match=r"joint_torques: expected shape \(2, 12\) .*got shape \(3, 12\)"):
        rl.linearize_trajectory(model, states[:2], np.zeros((3, model.n_joints)))
    torques = np.zeros((2, model.n_joints))
    torques[1, 3] = np.inf
    with pytest.raises(ValueError, match=r"joint_torques contains NaN or inf \(state 1\)"):
        rl.linearize_trajectory(model, states[:2], torques)
    with pytest.raises(ValueError, match="at least one state"):
        rl.linearize_trajectory(model, [])


def test_concurrent_calls_use_separate_workspaces(rng):
    model = load_example("solo12")
    states = [random_state(model, rng) for _ in range(8)]
    expected = [rl.linearize(model, s).A for s in states]
    results, errors = {}, []

    def worker(k):
        try:
            for _ in range(20):
                results[k] = rl.linearize(model, states[k]).A
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert not errors
    for k in range(8):
        np.testing.assert_array_equal(results[k], expected[k])
    assert workspace(model) is workspace(model)
    assert Workspace(model).nbytes > 0


def test_kernels_run_uncompiled_with_numba_disabled():
    """NUMBA_DISABLE_JIT runs the very same kernels as Python: same numbers."""
    code = ("import numpy as np, robot_linearization as rl\n"
            "from robot_linearization.robots import bundled_urdf_path\n"
            "m = rl.load_urdf(bundled_urdf_path()); rng = np.random.default_rng(3)\n"
            "s = rl.State(base_pose=np.eye(4), joint_positions=rng.normal(size=12), base_twist=rng.normal(size=6),"
            " joint_velocities=rng.normal(size=12))\n"
            "import sys; sys.stdout.buffer.write(rl.linearize(m, s).A.tobytes())\n")
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, check=True).stdout
    A_python = np.frombuffer(out, dtype=float).reshape(36, 36)
    model = rl.load_urdf(rl.robots.bundled_urdf_path())
    r = np.random.default_rng(3)
    state = rl.State(base_pose=np.eye(4), joint_positions=r.normal(size=12), base_twist=r.normal(size=6),
                     joint_velocities=r.normal(size=12))
    assert _relative(A_python, rl.linearize(model, state).A) <= 1e-12


def test_a_change_to_any_kernel_source_recompiles_every_kernel(tmp_path):
    """numba stamps a cached kernel with its own file's text only, but the machine code it caches
    carries the passes it calls from other files: after an upgrade or an edit that changed only
    discretization.py, linearize_into (linearization.py) would load the old step.  Every kernel of
    the package is stamped with all its kernel sources instead (compiled.kernel_sources_stamp):
    a change to a kernel file moves the stamp, a change elsewhere does not, and the kernels'
    caches use it."""
    import shutil

    from numba import config

    from robot_linearization import compiled

    copy = tmp_path / "robot_linearization"
    shutil.copytree(os.path.dirname(compiled.__file__), copy, ignore=shutil.ignore_patterns("__pycache__"))
    stamp = compiled.kernel_sources_stamp.__wrapped__
    before = stamp(str(copy))
    (copy / "cli.py").write_text((copy / "cli.py").read_text() + "\n# no kernels here\n")
    assert stamp(str(copy)) == before
    (copy / "discretization.py").write_text((copy / "discretization.py").read_text() + "\n# a pass changed\n")
    assert stamp(str(copy)) != before
    if not config.DISABLE_JIT:
        from robot_linearization.free_linearization import linearize_into

        locator = linearize_into._cache._impl._locator
        assert locator.get_source_stamp() == compiled.kernel_sources_stamp()
