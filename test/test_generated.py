"""rl.Linearizer(kernel="generated") and rl.ImpactMap(kernel="generated"): the linearization, free or on a
contact set, and the impact map traced on one robot into straight-line C (robot_linearization.codegen).
Each must equal the generic kernel's result bit for bit on robots of every joint type, base and product
(the generic kernels are checked against Pinocchio and finite differences in their own tests), and the free
one Pinocchio's independently.  At a bad
state it must give the same one-line error.  Where it cannot be built it must say so and
run the generic kernel, leaving no file behind."""

import copy
import logging
import os
import threading
import time

import numpy as np
import pytest

import robot_linearization as rl
from robot_linearization import codegen, workspace
from robot_linearization.joints import Joint, JointType

from conftest import PinocchioOracle, random_physical_inertia, random_state, random_tree

FIELDS = ("A", "B", "M_inv", "base_acceleration", "joint_accelerations", "A_d", "B_d")
needs_compiler = pytest.mark.skipif(codegen.c_compiler() is None,
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


def _libraries(directory) -> list:
    """The shared libraries in a cache directory (each has its record and lock beside it)."""
    return sorted(name for name in os.listdir(directory) if name.endswith(".so"))


def _same_error(fast, generic, name) -> str:
    """The message of the ValueError both calls raise, asserted to be the same and on one line."""
    with pytest.raises(ValueError) as expected:
        generic()
    with pytest.raises(ValueError) as got:
        fast()
    assert str(got.value) == str(expected.value), name
    assert "\n" not in str(got.value), name
    return str(got.value)


MODELS = {
    "bundled quadruped": lambda rng: rl.load_urdf(rl.robots.bundled_urdf_path()),
    "floating tree, revolute, prismatic and helical joints about random axes": lambda rng: random_tree(rng, 7),
    "fixed-base chain": lambda rng: random_tree(rng, 5, floating_base=False, branched=False),
}


@pytest.fixture(params=["straight-line sweeps", "looped sweeps"])
def sweeps(request, monkeypatch, tmp_path):
    """Both forms of the IMMAmb and the derivatives' backward pass in the generated C (kernels.LOOPS_FROM):
    these robots are small enough for the straight-line form, so the loops are forced on them (their
    libraries kept apart)."""
    if request.param == "looped sweeps":
        monkeypatch.setattr(codegen.kernels, "LOOPS_FROM", 0)
        monkeypatch.setenv("ROBOT_LINEARIZATION_CACHE_DIR", str(tmp_path))
    return request.param


@needs_compiler
@pytest.mark.parametrize("step", [{}, {"dt": 2e-3}])
@pytest.mark.parametrize("name", MODELS)
def test_equal_to_the_generic_kernel_bit_for_bit(name, step, rng, sweeps):
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
    monkeypatch.setenv("ROBOT_LINEARIZATION_CACHE_DIR", str(tmp_path))
    native = codegen.build.target_flags()
    for instructions in {native, ("baseline", ())}:
        monkeypatch.setattr(codegen.build, "target_flags", lambda: instructions)
        model = random_tree(np.random.default_rng(7), 7)  # (the same robot each time)
        fast, generic = _pair(model)
        for _ in range(3):
            state, torques = random_state(model, rng), rng.normal(size=model.n_joints)
            _assert_equal(fast.linearize(state, torques), generic.linearize(state, torques))
    assert sorted(name.split("-")[2] for name in _libraries(tmp_path)) == sorted({native[0], "baseline"})


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


def _gimbal_bad_states(*names) -> dict:
    """States of :func:`_gimbal` without a result, by name: M singular, a result that overflows, a NaN
    position, a base pose that is not rigid."""
    rest = dict(base_twist=np.zeros(6), joint_velocities=np.zeros(3))
    states = {
        "singular": dict(base_pose=np.eye(4), joint_positions=np.array([0.2, np.pi / 2, 0.3]), **rest),
        "overflowing": dict(base_pose=np.eye(4), joint_positions=np.zeros(3) + 0.1, base_twist=np.zeros(6),
                            joint_velocities=np.full(3, 1e200)),
        "NaN": dict(base_pose=np.eye(4), joint_positions=np.array([0.1, np.nan, 0.0]), **rest),
        "not a rigid pose": dict(base_pose=np.diag([2.0, 1.0, 1.0, 1.0]), joint_positions=np.zeros(3), **rest),
    }
    return {name: rl.State(**states[name]) for name in names}


@needs_compiler
def test_a_bad_state_gets_the_generic_kernels_error_and_no_result(rng):
    model = _gimbal(rng)
    fast, generic = _pair(model, dt=1e-3)
    good = random_state(model, rng)
    bad = _gimbal_bad_states("singular", "overflowing", "NaN", "not a rigid pose")
    for name, state in bad.items():
        _same_error(lambda: fast.linearize(state), lambda: generic.linearize(state), name)
        assert fast.state is None
        _assert_equal(fast.linearize(good), generic.linearize(good))  # and the next state is fine


def test_what_it_does_not_cover_is_a_one_line_error(rng):
    model = random_tree(rng, 3)
    with pytest.raises(ValueError, match="^kernel: expected one of 'auto', 'generic', 'generated', got str 'fast'$"):
        rl.Linearizer(model, kernel="fast")
    for options in ({"dt": 1e-3, "discretization": "zoh"},
                    {"contacts": ["b3"], "dt": 1e-3, "discretization": "zoh"}):
        with pytest.raises(ValueError, match="^kernel: 'generated' covers a Model, with contacts or without, with no "
                                             "step or the Euler step; use kernel='generic' or 'auto' here$"):
            rl.Linearizer(model, kernel="generated", **options)


@needs_compiler
@pytest.mark.parametrize("name", ["bundled quadruped", "fixed-base chain"])
def test_a_horizon_by_the_generated_kernel_equals_the_generic_one_bit_for_bit(name, rng):
    """linearize_trajectory(kernel="generated"): every array of K states, continuous, with an Euler
    step and with a zero-order hold, on one worker and two, one of the states at rest."""
    model = MODELS[name](rng)
    states = [random_state(model, rng) for _ in range(5)]
    states[2] = rl.State(base_pose=states[2].base_pose, joint_positions=states[2].joint_positions,
                         base_twist=np.zeros(6) if model.floating_base else None,
                         joint_velocities=np.zeros(model.n_joints))
    torques = rng.normal(size=(5, model.n_joints))
    for step in ({}, {"dt": 2e-3}, {"dt": 2e-3, "discretization": "zoh"}):
        for workers in (1, 2):
            fast = rl.linearize_trajectory(model, states, torques, workers=workers, kernel="generated", **step)
            generic = rl.linearize_trajectory(model, states, torques, workers=workers, **step)
            _assert_equal(fast, generic)


@needs_compiler
def test_a_horizon_with_a_bad_state_gets_the_generic_kernels_error(rng):
    model = _gimbal(rng)
    good = random_state(model, rng)
    for name, state in _gimbal_bad_states("singular", "overflowing", "NaN", "not a rigid pose").items():
        message = _same_error(lambda: rl.linearize_trajectory(model, [good, state], dt=1e-3, kernel="generated"),
                              lambda: rl.linearize_trajectory(model, [good, state], dt=1e-3), name)
        assert "(state 1)" in message or "states[1]" in message, name


def test_a_horizon_says_what_the_generated_kernel_does_not_cover_and_where_it_cannot_be_built(
        rng, monkeypatch, caplog):
    model = random_tree(rng, 3)
    states = [random_state(model, rng) for _ in range(2)]
    with pytest.raises(ValueError, match="^kernel: expected one of 'auto', 'generic', 'generated', got str 'fast'$"):
        rl.linearize_trajectory(model, states, kernel="fast")
    on_contacts = [rl.linearize_trajectory(model, states, contacts=["b3"], dt=1e-3, kernel=kernel)
                   for kernel in ("generated", "generic")]  # (a horizon on contacts: knot by knot)
    for name in FIELDS + ("contact_forces", "contact_forces_state_jacobian"):
        assert np.array_equal(getattr(on_contacts[0], name), getattr(on_contacts[1], name)), name
    monkeypatch.setattr(codegen.kernels, "GENERATED_OPERATIONS", 100)
    with caplog.at_level(logging.WARNING, logger="robot_linearization"):
        fast = rl.linearize_trajectory(model, states, kernel="generated")
    assert any("operations, above the 100 a generated kernel is compiled for" in r.getMessage() for r in caplog.records)
    _assert_equal(fast, rl.linearize_trajectory(model, states))


@pytest.mark.parametrize("compiler", ["/nonexistent/cc", "false"])
def test_without_a_working_compiler_it_says_so_runs_the_generic_kernel_and_leaves_no_file(
        compiler, rng, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("ROBOT_LINEARIZATION_CACHE_DIR", str(tmp_path / "cache"))
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

    def branching(model, loops):
        if codegen.tracer.Traced(codegen.tracer._Graph(), 0):
            pass
    monkeypatch.setattr(codegen.kernels, "trace", branching)
    with caplog.at_level(logging.WARNING, logger="robot_linearization"):
        assert rl.Linearizer(model, kernel="generated").kernel == "generic"
    assert any(r.getMessage() == "the generic kernel runs: model 'random_tree' cannot be traced: a traced value "
               "cannot decide a branch" for r in caplog.records)


def test_a_robot_too_large_for_it_to_pay_runs_the_generic_kernel(rng, monkeypatch, caplog):
    monkeypatch.setattr(codegen.kernels, "GENERATED_OPERATIONS", 100)
    model = random_tree(rng, 3)
    with caplog.at_level(logging.WARNING, logger="robot_linearization"):
        assert rl.Linearizer(model, kernel="generated").kernel == "generic"
    assert any("operations, above the 100 a generated kernel is compiled for" in r.getMessage() for r in caplog.records)


@needs_compiler
def test_compiled_once_then_loaded_from_the_cache(rng, tmp_path, monkeypatch, caplog):
    """The compile is announced; the same robot loaded again (a new Model, as a new process
    has) finds the library and compiles nothing."""
    monkeypatch.setenv("ROBOT_LINEARIZATION_CACHE_DIR", str(tmp_path))
    seed = int(rng.integers(1 << 30))
    with caplog.at_level(logging.WARNING, logger="robot_linearization"):
        rl.Linearizer(random_tree(np.random.default_rng(seed), 4), kernel="generated")
        assert sum("compiling the generated kernel" in r.getMessage() for r in caplog.records) == 1
        rl.Linearizer(random_tree(np.random.default_rng(seed), 4), kernel="generated")
        assert sum("compiling the generated kernel" in r.getMessage() for r in caplog.records) == 1
    (library,) = _libraries(tmp_path)
    assert library.startswith("linearize-random_tree_") and library.endswith(".so")


@needs_compiler
def test_a_robots_kernel_compiled_anew_is_kept_beside_the_versions_used_last_and_leaves_the_others(
        rng, tmp_path, monkeypatch, caplog):
    """Other versions of the package generate other C for the same robot: two of them used in turn
    (a checkout's venv and a ROS overlay on one machine) each keep theirs, compiled once; a version
    built beyond KEPT_VERSIONS removes the one built or loaded longest ago, which need not be the one
    built first; a robot of the same name but another model (talos_reduced and talos_full are both
    'talos') keeps its own, and a file the package did not write is never touched."""
    monkeypatch.setenv("ROBOT_LINEARIZATION_CACHE_DIR", str(tmp_path))
    (tmp_path / "notes.txt").write_text("the user's")
    tree, namesake = random_tree(rng, 3), random_tree(rng, 4)
    assert tree.name == namesake.name
    rl.Linearizer(tree, kernel="generated")
    first, = _libraries(tmp_path)
    for model in (namesake, _gimbal(rng)):
        rl.Linearizer(model, kernel="generated")
    others = set(_libraries(tmp_path)) - {first}
    assert len(others) == 2
    flags = codegen.build.COMPILE_FLAGS

    def version(*extra):  # the tree's kernel as a version of the package with other bytes builds or loads it
        monkeypatch.setattr(codegen.build, "COMPILE_FLAGS", flags + extra)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="robot_linearization"):
            rl.Linearizer(copy.deepcopy(tree), kernel="generated")  # (a new process, as it were)
        time.sleep(0.01)  # (the files' times tell the versions apart)
        return sum("compiling the generated kernel" in r.getMessage() for r in caplog.records)

    assert version("-O1") == 1 and version() == 0 and version("-O1") == 0 and version() == 0  # (each compiled once)
    second, = set(_libraries(tmp_path)) - others - {first}
    assert codegen.build.KEPT_VERSIONS == 3
    assert version("-Os") == 1  # a third version: the three kept
    third, = set(_libraries(tmp_path)) - others - {first, second}
    assert version() == 0 and version("-O3") == 1  # a fourth: the one used longest ago (-O1's, not the first) goes
    fourth, = set(_libraries(tmp_path)) - others - {first, second, third}
    assert set(_libraries(tmp_path)) == others | {first, third, fourth}  # (the namesake's and the gimbal's kept)
    assert (tmp_path / "notes.txt").read_text() == "the user's"
    assert {name[:-3] for name in _libraries(tmp_path)} == \
        {name.rsplit(".", 1)[0] for name in os.listdir(tmp_path)} - {"notes"}  # (no record or lock left alone)


@needs_compiler
def test_a_deep_copy_fills_its_own_arrays(rng):
    """Without a step the generated kernel writes to its outputs by their addresses (kernels.generated_linearize_at):
    a deep copy of the Linearizer must fill the copy's arrays, never the original's."""
    model = random_tree(rng, 5)
    original = rl.Linearizer(model, kernel="generated")
    first, second = random_state(model, rng), random_state(model, rng)
    original.linearize(first)
    kept = np.copy(original.A)
    copied = copy.deepcopy(original)
    copied.linearize(second)
    assert np.array_equal(original.A, kept)
    assert np.array_equal(copied.A, rl.Linearizer(model).linearize(second).A) and not np.array_equal(copied.A, kept)


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


# ---- the impact map (rl.ImpactMap(kernel="generated")) ------------------------------------------
IMPACT_CASES = {
    "bundled quadruped, four feet, e = 0": (
        lambda rng: rl.load_urdf(rl.robots.bundled_urdf_path()), [rl.Contact(f) for f in rl.robots.BUNDLED_FEET], 0.0),
    "bundled quadruped, three feet, one in its own axes, e = 0.5": (
        lambda rng: rl.load_urdf(rl.robots.bundled_urdf_path()),
        [rl.Contact(f) for f in rl.robots.BUNDLED_FEET[:2]]
        + [rl.Contact(rl.robots.BUNDLED_FEET[2], reference="local")], 0.5),
    "floating tree of revolute, prismatic and helical joints, a sole, e = 0.2": (
        lambda rng: random_tree(rng, 7), [rl.Contact("b5", "6d")], 0.2),
    "fixed-base chain, a point at its tip": (
        lambda rng: random_tree(rng, 5, floating_base=False, branched=False), [rl.Contact("b5")], 0.0),
}
IMPACT_FIELDS = ("A", "impulses", "impulses_state_jacobian", "base_twist", "joint_velocities")


def _impact_pair(model, contacts, restitution):
    fast = rl.ImpactMap(model, contacts, restitution, kernel="generated")
    assert fast.kernel == "generated"
    return fast, rl.ImpactMap(model, contacts, restitution)


def _assert_same_impact(fast, generic):
    for name in IMPACT_FIELDS:
        value, reference = getattr(fast, name), getattr(generic, name)
        assert (value is None) == (reference is None), name
        assert value is None or np.array_equal(value, reference), (name, np.max(np.abs(value - reference)))
    for a, b in zip((fast.state.base_pose, fast.state.joint_positions), (generic.state.base_pose,
                                                                       generic.state.joint_positions)):
        assert (a is None and b is None) or np.array_equal(a, b)


@needs_compiler
@pytest.mark.parametrize("case", IMPACT_CASES)
def test_impact_map_equal_to_the_generic_kernel_bit_for_bit(case, rng, sweeps):
    """impact_into traced with its Cholesky, its solves and its dense products left to runtime routines
    (codegen.tracer._runtime_products): the same operations in the same order, so the same bits."""
    make, contacts, restitution = IMPACT_CASES[case]
    model = make(rng)
    fast, generic = _impact_pair(model, contacts, restitution)
    for _ in range(4):
        state = random_state(model, rng)
        _assert_same_impact(fast.impact(state), generic.impact(state))
        pose = {"base_pose": state.base_pose, "base_twist": state.base_twist} if model.floating_base else {}
        fast.impact_arrays(state.joint_positions, state.joint_velocities, **pose)
        generic.impact_arrays(state.joint_positions, state.joint_velocities, **pose)
        _assert_same_impact(fast, generic)


@needs_compiler
def test_impact_map_at_a_bad_state_or_on_a_degenerate_set_gives_the_generic_kernels_error(rng):
    """Where the generated map has no result, the generic kernel runs and says why, in one line."""
    model = _gimbal(rng)
    fast, generic = _impact_pair(model, [rl.Contact("b3")], 0.0)
    good = random_state(model, rng)
    bad = _gimbal_bad_states("singular", "NaN", "not a rigid pose")  # (an impact map does not overflow there)
    for name, state in bad.items():
        _same_error(lambda: fast.impact(state), lambda: generic.impact(state), name)
        assert fast.state is None
        _assert_same_impact(fast.impact(good), generic.impact(good))  # and the next state is fine
    quadruped = rl.load_urdf(rl.robots.bundled_urdf_path())
    redundant = [rl.Contact(foot, "6d") for foot in rl.robots.BUNDLED_FEET]  # (24 directions, 18 velocities)
    fast, generic = _impact_pair(quadruped, redundant, 0.0)
    state = random_state(quadruped, rng)
    with pytest.raises(rl.ContactError) as expected:
        generic.impact(state)
    with pytest.raises(rl.ContactError) as got:
        fast.impact(state)
    assert str(got.value) == str(expected.value) and "\n" not in str(got.value)


def test_impact_map_kernel_choice_and_what_cannot_be_built_are_said_in_one_line(rng, monkeypatch, caplog):
    model = random_tree(rng, 3)
    with pytest.raises(ValueError, match="^kernel: expected one of 'auto', 'generic', 'generated', got str 'fast'$"):
        rl.ImpactMap(model, ["b3"], kernel="fast")
    monkeypatch.setattr(codegen.kernels, "GENERATED_OPERATIONS", 100)
    with caplog.at_level(logging.WARNING, logger="robot_linearization"):
        fast = rl.ImpactMap(model, ["b3"], kernel="generated")
    assert fast.kernel == "generic"
    assert any(r.getMessage().startswith("the generic kernel runs: model 'random_tree' traces to ")
               and "above the 100 a generated kernel is compiled for" in r.getMessage() for r in caplog.records)
    state = random_state(model, rng)
    _assert_same_impact(fast.impact(state), rl.ImpactMap(model, ["b3"]).impact(state))
    with pytest.raises(AttributeError):  # (fixed when the map is made: a generated kernel is made for it)
        fast.restitution = 0.5


@needs_compiler
def test_kernels_of_several_contact_sets_are_kept_side_by_side(rng, tmp_path, monkeypatch, caplog):
    """One library per robot and contact set (an impact map's serves every restitution): another set of
    the same robot compiles its own and leaves the other; another restitution, or the same set again (a
    new Model, as a new process has), compiles nothing."""
    monkeypatch.setenv("ROBOT_LINEARIZATION_CACHE_DIR", str(tmp_path))
    seed = int(rng.integers(1 << 30))
    with caplog.at_level(logging.WARNING, logger="robot_linearization"):
        for contacts, restitution in ((["b3"], 0.0), (["b3"], 0.5), (["b2", "b3"], 0.0), (["b3"], 0.0)):
            rl.ImpactMap(random_tree(np.random.default_rng(seed), 4), contacts, restitution, kernel="generated")
        for contacts in (["b3"], ["b3"]):
            rl.Linearizer(random_tree(np.random.default_rng(seed), 4), contacts=contacts, kernel="generated")
    assert sum("compiling the generated kernel of the impact map" in r.getMessage() for r in caplog.records) == 2
    assert sum("compiling the generated kernel of the constrained linearization" in r.getMessage()
               for r in caplog.records) == 1
    libraries = _libraries(tmp_path)
    assert len(libraries) == 3 and sum(name.startswith("impact-random_tree_") for name in libraries) == 2
    assert sum(name.startswith("constrained-random_tree_") for name in libraries) == 1


RESTITUTIONS = (0.0, 0.5, 1.0)
_OTHER_PROCESS = """
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
import robot_linearization as rl
from conftest import random_state, random_tree
model = random_tree(np.random.default_rng(int(sys.argv[2])), 4)
state = random_state(model, np.random.default_rng(int(sys.argv[3])))
maps = {e: rl.ImpactMap(model, ["b2", "b4"], e, kernel="generated") for e in map(float, sys.argv[5:])}
assert all(m.kernel == "generated" for m in maps.values())
np.savez(sys.argv[4], **{f"{e}:{name}": getattr(m.impact(state), name) for e, m in maps.items()
                         for name in ("A", "impulses", "impulses_state_jacobian", "base_twist", "joint_velocities")})
"""


@needs_compiler
def test_impact_maps_of_several_restitutions_of_one_model_each_give_their_own_impact(rng, tmp_path, monkeypatch):
    """One Model and contact set, e = 0, 0.5, 1: each generated ImpactMap equals the generic map of its own
    restitution bit for bit — in this process, where the maps share the Model, and in another process
    that finds the kernels in the same cache (made in the other order).  The restitutions' impacts
    differ (checked), so a map given another's kernel fails here."""
    import subprocess
    import sys

    monkeypatch.setenv("ROBOT_LINEARIZATION_CACHE_DIR", str(tmp_path / "cache"))  # (this process's and the other's)
    seeds = [int(k) for k in rng.integers(1 << 30, size=2)]
    model = random_tree(np.random.default_rng(seeds[0]), 4)
    state = random_state(model, np.random.default_rng(seeds[1]))
    generic = {e: rl.ImpactMap(model, ["b2", "b4"], e).impact(state) for e in RESTITUTIONS}
    assert np.abs(generic[0.0].joint_velocities - generic[1.0].joint_velocities).max() > 1e-3
    for e in RESTITUTIONS:
        fast = rl.ImpactMap(model, ["b2", "b4"], e, kernel="generated")
        assert fast.kernel == "generated"
        _assert_same_impact(fast.impact(state), generic[e])
    result = tmp_path / "other_process.npz"
    subprocess.run([sys.executable, "-c", _OTHER_PROCESS, os.path.dirname(__file__), str(seeds[0]), str(seeds[1]),
                    str(result), *map(str, reversed(RESTITUTIONS))], check=True, timeout=600, cwd=tmp_path)
    with np.load(result) as other:
        for e in RESTITUTIONS:
            for name in IMPACT_FIELDS:
                assert np.array_equal(other[f"{e}:{name}"], getattr(generic[e], name)), (e, name)


# ---- the constrained linearization (rl.Linearizer(contacts=…, kernel="generated")) ---------------------
CONSTRAINED_CASES = {
    "bundled quadruped, four feet": (
        lambda rng: rl.load_urdf(rl.robots.bundled_urdf_path()), [rl.Contact(f) for f in rl.robots.BUNDLED_FEET], {}),
    "bundled quadruped, three feet, one in its own axes, Euler step": (
        lambda rng: rl.load_urdf(rl.robots.bundled_urdf_path()),
        [rl.Contact(f) for f in rl.robots.BUNDLED_FEET[:2]]
        + [rl.Contact(rl.robots.BUNDLED_FEET[2], reference="local")], {"dt": 1e-3}),
    "floating tree of revolute, prismatic and helical joints, a sole, Euler step": (
        lambda rng: random_tree(rng, 7), [rl.Contact("b5", "6d")], {"dt": 2e-3}),
    "fixed-base chain, a point at its tip": (
        lambda rng: random_tree(rng, 5, floating_base=False, branched=False), [rl.Contact("b5")], {}),
}
CONSTRAINED_FIELDS = FIELDS + ("contact_forces", "contact_forces_state_jacobian", "contact_forces_input_jacobian")


def _assert_same_constrained(fast, generic):
    for name in CONSTRAINED_FIELDS:
        value, reference = getattr(fast, name), getattr(generic, name)
        assert (value is None) == (reference is None), name
        assert value is None or np.array_equal(value, reference), (name, np.max(np.abs(value - reference)))


@needs_compiler
@pytest.mark.parametrize("case", CONSTRAINED_CASES)
def test_constrained_linearization_equal_to_the_generic_kernel_bit_for_bit(case, rng, sweeps):
    """constrained_linearize_into traced with its Cholesky, its solves and its dense products left to
    runtime routines: the same operations in the same order, so the same bits."""
    make, contacts, step = CONSTRAINED_CASES[case]
    model = make(rng)
    fast = rl.Linearizer(model, contacts=contacts, kernel="generated", **step)
    assert fast.kernel == "generated"
    generic = rl.Linearizer(model, contacts=contacts, **step)
    for _ in range(4):
        state, torques = random_state(model, rng), rng.normal(size=model.n_joints)
        _assert_same_constrained(fast.linearize(state, torques), generic.linearize(state, torques))
        pose = {"base_pose": state.base_pose, "base_twist": state.base_twist} if model.floating_base else {}
        fast.linearize_arrays(state.joint_positions, state.joint_velocities, torques, **pose)
        generic.linearize_arrays(state.joint_positions, state.joint_velocities, torques, **pose)
        _assert_same_constrained(fast, generic)


@needs_compiler
def test_constrained_linearization_at_a_bad_state_or_on_a_degenerate_set_gives_the_generic_kernels_error(rng):
    model = _gimbal(rng)
    fast = rl.Linearizer(model, contacts=["b3"], kernel="generated", dt=1e-3)
    generic = rl.Linearizer(model, contacts=["b3"], dt=1e-3)
    good = random_state(model, rng)
    bad = _gimbal_bad_states("singular", "overflowing", "NaN")
    for name, state in bad.items():
        _same_error(lambda: fast.linearize(state), lambda: generic.linearize(state), name)
        assert fast.state is None
        _assert_same_constrained(fast.linearize(good), generic.linearize(good))  # and the next state is fine
    tree = random_tree(rng, 3)
    redundant = [rl.Contact("b0", "6d"), rl.Contact("b3", "6d")]  # (12 directions, 9 velocities)
    fast = rl.Linearizer(tree, contacts=redundant, kernel="generated")
    assert fast.kernel == "generated"
    state = random_state(tree, rng)
    with pytest.raises(rl.ContactError) as expected:
        rl.Linearizer(tree, contacts=redundant).linearize(state)
    with pytest.raises(rl.ContactError) as got:
        fast.linearize(state)
    assert str(got.value) == str(expected.value) and "\n" not in str(got.value)


@pytest.mark.parametrize("robot, contacts", [("talos_full_v2.urdf", ()),
                                             ("talos_reduced.urdf", ("left_sole_link:6d", "right_sole_link:6d"))])
def test_the_largest_robots_trace_within_the_compilers_budget(robot, contacts):
    """talos_full (50 joints) free and talos on its two soles are generated: the passes that grow as the
    bodies times the depth are loops (runtime.c), so what stays straight-line is within
    GENERATED_OPERATIONS, with room (their traces were 97 000 and 111 000 operations when traced whole)."""
    import example_robot_data

    from robot_linearization.codegen.kernels import _source
    from robot_linearization.contacts import as_contacts

    path = os.path.join(example_robot_data.getModelPath("talos_data/robots/" + robot), "talos_data/robots/", robot)
    model = rl.load_urdf(path, mimic_joints="independent")
    kind = "constrained" if contacts else "linearize"
    source, operations, *_ = _source(model, as_contacts(contacts), kind)
    assert operations < 60_000 < codegen.kernels.GENERATED_OPERATIONS
    assert source.count("rl_inverse_mass_matrix(w + ") == source.count("rl_base_frame_backward(w + ") == 1
