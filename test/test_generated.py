"""rl.Linearizer(kernel="generated"): the linearization traced on one robot into straight-line C
(robot_linearization.generated).  It must equal the generic kernel's result bit for bit on
robots of every joint type, base and product, and Pinocchio's independently.  At a bad
state it must give the same one-line error.  Where it cannot be built it must say so and
run the generic kernel, leaving no file behind."""

import logging
import os
import threading

import numpy as np
import pytest

import robot_linearization as rl
from robot_linearization import generated, workspace
from robot_linearization.joints import Joint, JointType

from conftest import PinocchioOracle, random_physical_inertia, random_state, random_tree

FIELDS = ("A", "B", "M_inv", "base_acceleration", "joint_accelerations", "A_d", "B_d")
needs_compiler = pytest.mark.skipif(generated.c_compiler() is None,
                                    reason="no C compiler here (CC, cc, gcc): the generated kernel cannot be built")


def _pair(model, **step):
    fast = rl.Linearizer(model, kernel="generated", **step)
    assert fast.kernel == "generated"
    return fast, rl.Linearizer(model, **step)


def _assert_equal(fast, generic):
    for name in FIELDS:
        value, reference = getattr(fast, name), getattr(generic, name)
        assert (value is None) == (reference is None), name
        assert value is None or np.array_equal(value, reference), (name, np.max(np.abs(value - reference)))


MODELS = {
    "bundled quadruped": lambda rng: rl.load_urdf(rl.robots.bundled_urdf_path()),
    "floating tree, revolute, prismatic and helical joints about random axes": lambda rng: random_tree(rng, 7),
    "fixed-base chain": lambda rng: random_tree(rng, 5, floating_base=False, branched=False),
}


@needs_compiler
@pytest.mark.parametrize("step", [{}, {"dt": 2e-3}])
@pytest.mark.parametrize("name", MODELS)
def test_equal_to_the_generic_kernel_bit_for_bit(name, step, rng):
    """At random states and at rest (where the generic sweep skips the inertia rates the generated
    code computes as zeros), through linearize and linearize_arrays."""
    model = MODELS[name](rng)
    fast, generic = _pair(model, **step)
    states = [random_state(model, rng) for _ in range(4)]
    states.append(rl.State(**{**{field: getattr(states[0], field) for field in (
        "base_pose", "joint_positions")}, "base_twist": None if not model.floating_base else np.zeros(6),
        "joint_velocities": np.zeros(model.n_joints)}))
    for state in states:
        torques = rng.normal(size=model.n_joints)
        _assert_equal(fast.linearize(state, torques), generic.linearize(state, torques))
        pose = {"base_pose": state.base_pose, "base_twist": state.base_twist} if model.floating_base else {}
        fast.linearize_arrays(state.joint_positions, state.joint_velocities, torques, **pose)
        generic.linearize_arrays(state.joint_positions, state.joint_velocities, torques, **pose)
        _assert_equal(fast, generic)


@needs_compiler
def test_equal_where_the_product_with_the_inverse_mass_matrix_is_taken_on_the_tree(rng, monkeypatch):
    """A model whose products M⁻¹D go over D's non-zeros (workspace.TREE_PRODUCTS): the product is
    traced with the rest instead of left to the dense loop."""
    monkeypatch.setattr(workspace, "SPARSE_BELOW", 1.0)
    model = random_tree(rng, 6)
    assert workspace.derivative_products(model) == workspace.TREE_PRODUCTS
    fast, generic = _pair(model)
    for _ in range(3):
        state, torques = random_state(model, rng), rng.normal(size=model.n_joints)
        _assert_equal(fast.linearize(state, torques), generic.linearize(state, torques))


@needs_compiler
def test_equal_for_each_instruction_set_and_each_kept_beside_the_other(rng, tmp_path, monkeypatch):
    """The library compiled for this machine's instruction set (generated.target_flags: AVX2 on most
    x86-64 CPUs) and for the baseline give the generic kernel's bits, and a cache shared by machines
    of both keeps the two libraries side by side."""
    monkeypatch.setattr(generated, "cache_directory", lambda: str(tmp_path))
    native = generated.target_flags()
    for instructions in {native, ("baseline", ())}:
        monkeypatch.setattr(generated, "target_flags", lambda: instructions)
        model = random_tree(np.random.default_rng(7), 7)  # (the same robot each time)
        fast, generic = _pair(model)
        for _ in range(3):
            state, torques = random_state(model, rng), rng.normal(size=model.n_joints)
            _assert_equal(fast.linearize(state, torques), generic.linearize(state, torques))
    assert sorted(name.split("-")[2] for name in os.listdir(tmp_path)) == sorted({native[0], "baseline"})


@needs_compiler
def test_equal_to_pinocchio(rng):
    """An independent reference: Pinocchio's computeABADerivatives on the bundled quadruped."""
    path = rl.robots.bundled_urdf_path()
    model = rl.load_urdf(path)
    oracle = PinocchioOracle(path, model)
    fast = rl.Linearizer(model, kernel="generated")
    for _ in range(3):
        state, torques = random_state(model, rng), rng.normal(size=model.n_joints)
        fast.linearize(state, torques)
        A, B, M_inv, nu_dot = oracle.linearization(state, torques)
        report = rl.validation.compare(model, fast.A, fast.B, fast.M_inv, A, B, M_inv)
        assert report.passed(1e-9), report.summary()
        assert np.allclose(np.concatenate([fast.base_acceleration, fast.joint_accelerations]), nu_dot,
                           rtol=1e-9, atol=1e-9)


def _gimbal(rng) -> rl.Model:
    """A head on three joints about x, y, z through massless links: M is singular where the
    middle one stands at ±π/2 (the outer axes aligned), regular elsewhere."""
    builder = rl.ModelBuilder("b0", random_physical_inertia(rng), name="gimbal")
    for i, axis in enumerate([(1, 0, 0), (0, 1, 0), (0, 0, 1)], start=1):
        builder.add_body(f"b{i}", parent=f"b{i - 1}", joint=Joint(f"j{i}", JointType.REVOLUTE, axis),
                         placement=np.eye(4), inertia=random_physical_inertia(rng) if i == 3 else np.zeros((6, 6)))
    return builder.build()


@needs_compiler
def test_a_bad_state_gets_the_generic_kernels_error_and_no_result(rng):
    model = _gimbal(rng)
    fast, generic = _pair(model, dt=1e-3)
    good = random_state(model, rng)
    bad = {
        "singular": rl.State(base_pose=np.eye(4), joint_positions=np.array([0.2, np.pi / 2, 0.3]),
                             base_twist=np.zeros(6), joint_velocities=np.zeros(3)),
        "overflowing": rl.State(base_pose=np.eye(4), joint_positions=np.zeros(3) + 0.1, base_twist=np.zeros(6),
                                joint_velocities=np.full(3, 1e200)),
        "NaN": rl.State(base_pose=np.eye(4), joint_positions=np.array([0.1, np.nan, 0.0]), base_twist=np.zeros(6),
                        joint_velocities=np.zeros(3)),
        "not a rigid pose": rl.State(base_pose=np.diag([2.0, 1.0, 1.0, 1.0]), joint_positions=np.zeros(3),
                                     base_twist=np.zeros(6), joint_velocities=np.zeros(3)),
    }
    for name, state in bad.items():
        with pytest.raises(ValueError) as expected:
            generic.linearize(state)
        with pytest.raises(ValueError) as got:
            fast.linearize(state)
        assert str(got.value) == str(expected.value), name
        assert "\n" not in str(got.value) and fast.state is None
        _assert_equal(fast.linearize(good), generic.linearize(good))  # and the next state is fine


def test_what_it_does_not_cover_is_a_one_line_error(rng):
    model = random_tree(rng, 3)
    with pytest.raises(ValueError, match="^kernel: expected one of 'generic', 'generated', got str 'fast'$"):
        rl.Linearizer(model, kernel="fast")
    for options in ({"contacts": ["b3"]}, {"dt": 1e-3, "discretization": "zoh"}):
        with pytest.raises(ValueError, match="^kernel: 'generated' covers a Model without contacts"):
            rl.Linearizer(model, kernel="generated", **options)


@pytest.mark.parametrize("compiler", ["/nonexistent/cc", "false"])
def test_without_a_working_compiler_it_says_so_runs_the_generic_kernel_and_leaves_no_file(
        compiler, rng, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(generated, "cache_directory", lambda: str(tmp_path / "cache"))
    monkeypatch.setenv("CC", compiler)
    model = random_tree(rng, 3)
    with caplog.at_level(logging.WARNING, logger="robot_linearization"):
        fast = rl.Linearizer(model, kernel="generated")
    assert fast.kernel == "generic"
    (message,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("the generic kernel runs")]
    assert compiler in message and "\n" not in message
    state = random_state(model, rng)
    _assert_equal(fast.linearize(state), rl.Linearizer(model).linearize(state))
    assert not os.path.exists(tmp_path / "cache") or os.listdir(tmp_path / "cache") == []


def test_passes_that_branch_on_the_state_run_the_generic_kernel(rng, monkeypatch, caplog):
    """A pass that decides a branch on a traced value cannot be traced (Traced refuses it): said,
    and the generic kernel runs."""
    model = random_tree(rng, 3)

    def branching(model):
        if generated.Traced(generated._Graph(), 0):
            pass
    monkeypatch.setattr(generated, "trace", branching)
    with caplog.at_level(logging.WARNING, logger="robot_linearization"):
        assert rl.Linearizer(model, kernel="generated").kernel == "generic"
    assert any(r.getMessage() == "the generic kernel runs: model 'random_tree' cannot be traced: a traced value "
               "cannot decide a branch" for r in caplog.records)


def test_a_robot_too_large_for_it_to_pay_runs_the_generic_kernel(rng, monkeypatch, caplog):
    monkeypatch.setattr(generated, "GENERATED_OPERATIONS", 100)
    model = random_tree(rng, 3)
    with caplog.at_level(logging.WARNING, logger="robot_linearization"):
        assert rl.Linearizer(model, kernel="generated").kernel == "generic"
    assert any("operations, above the 100 for which a generated kernel pays" in r.getMessage() for r in caplog.records)


@needs_compiler
def test_compiled_once_then_loaded_from_the_cache(rng, tmp_path, monkeypatch, caplog):
    """The compile is announced; the same robot loaded again (a new Model, as a new process
    has) finds the library and compiles nothing."""
    monkeypatch.setattr(generated, "cache_directory", lambda: str(tmp_path))
    seed = int(rng.integers(1 << 30))
    with caplog.at_level(logging.WARNING, logger="robot_linearization"):
        rl.Linearizer(random_tree(np.random.default_rng(seed), 4), kernel="generated")
        assert sum("compiling the generated kernel" in r.getMessage() for r in caplog.records) == 1
        rl.Linearizer(random_tree(np.random.default_rng(seed), 4), kernel="generated")
        assert sum("compiling the generated kernel" in r.getMessage() for r in caplog.records) == 1
    (library,) = os.listdir(tmp_path)
    assert library.startswith("linearize-random_tree-") and library.endswith(".so")


@needs_compiler
def test_a_robots_kernel_compiled_anew_replaces_its_older_one_and_leaves_the_others(rng, tmp_path, monkeypatch):
    """Another version of the package generates other C for the same robot: the cache keeps one
    library per robot name, and never touches a file it did not write."""
    monkeypatch.setattr(generated, "cache_directory", lambda: str(tmp_path))
    (tmp_path / "notes.txt").write_text("the user's")
    rl.Linearizer(random_tree(rng, 3), kernel="generated")
    rl.Linearizer(_gimbal(rng), kernel="generated")
    older = sorted(os.listdir(tmp_path))
    monkeypatch.setattr(generated, "COMPILE_FLAGS", generated.COMPILE_FLAGS + ("-O1",))  # (other bytes, same robot)
    rl.Linearizer(random_tree(rng, 3), kernel="generated")
    newer = sorted(os.listdir(tmp_path))
    assert len(newer) == 3 and "notes.txt" in newer
    robot = lambda names, name: [n for n in names if n.startswith(f"linearize-{name}-")]  # noqa: E731
    assert robot(newer, "gimbal") == robot(older, "gimbal") and len(robot(older, "gimbal")) == 1
    assert robot(newer, "random_tree") != robot(older, "random_tree") and len(robot(newer, "random_tree")) == 1


@needs_compiler
def test_two_threads_each_with_its_own_linearizer(rng):
    """Each generated Linearizer has its own scratch: two threads at once get their own results."""
    model = random_tree(rng, 5)
    states = [random_state(model, rng) for _ in range(40)]
    expected = [np.copy(rl.Linearizer(model).linearize(s).A) for s in states]
    results, errors = [[], []], []

    def run(k):
        linearizer = rl.Linearizer(model, kernel="generated")
        try:
            for state in states:
                results[k].append(np.copy(linearizer.linearize(state).A))
        except Exception as error:  # (reported below, in the main thread)
            errors.append(error)
    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for got in results:
        assert all(np.array_equal(a, b) for a, b in zip(got, expected)) and len(got) == len(states)
