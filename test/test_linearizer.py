"""rl.Linearizer: the arrays of rl.linearize's result, allocated once and filled in place at state
after state.  rl.linearize itself is checked against Pinocchio, Crocoddyl and finite differences
elsewhere (test_linearization, test_contacts, test_discretization, test_mimic); here every field
must equal its result bit for bit at every state of a sequence, in the same array objects."""

import numpy as np
import pytest

import robot_linearization as rl

from conftest import example_robot_path, load_example, random_state

FIELDS = ("A", "B", "M_inv", "base_acceleration", "joint_accelerations", "contact_forces",
          "contact_forces_state_jacobian", "contact_forces_input_jacobian", "A_d", "B_d")
SOLO_FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")

CASES = {  # name -> (model loader, contacts)
    "bundled quadruped": (lambda: rl.load_urdf(rl.robots.bundled_urdf_path()), None),
    "solo12 4 point": (lambda: load_example("solo12"), [rl.Contact(f) for f in SOLO_FEET]),
    "talos 2×6d local": (lambda: load_example("talos"),
                         [rl.Contact(f, "6d", "local") for f in ("left_sole_link", "right_sole_link")]),
    "panda fixed": (lambda: load_example("panda"), None),
    "panda coupled": (lambda: rl.load_urdf(example_robot_path("panda"), floating_base=False), None),
    "panda coupled, a held hand": (lambda: rl.load_urdf(example_robot_path("panda"), floating_base=False),
                                   [rl.Contact("panda_hand", "6d")]),
}
STEPS = {"no step": {}, "euler": {"dt": 1e-3}, "zoh": {"dt": 2e-3, "discretization": "zoh"}}


def _equal(value, reference) -> bool:
    if reference is None or value is None:
        return value is None and reference is None
    return value.shape == reference.shape and np.array_equal(value, reference)


@pytest.mark.parametrize("call", ["linearize", "linearize_arrays"])
@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("case", CASES)
def test_every_field_equals_linearize_bit_for_bit_in_the_same_arrays(case, step, call, rng):
    """Given a State, or the arrays a robot hands over (s, r, τ and the base pose as H (4, 4)) with no
    State built: linearize's fields bit for bit, in the same arrays; ``state`` is the one linearized."""
    load, contacts = CASES[case]
    model = load()
    options = dict(contacts=contacts, **STEPS[step])
    linearizer = rl.Linearizer(model, **options)
    arrays = {name: getattr(linearizer, name) for name in FIELDS}
    for _ in range(3):
        state, torques = random_state(model, rng), rng.normal(size=model.n_joints)
        if call == "linearize":
            assert linearizer.linearize(state, torques) is linearizer
        else:
            base = dict(base_pose=state.base_pose, base_twist=state.base_twist) if model.floating_base else {}
            assert linearizer.linearize_arrays(state.joint_positions, state.joint_velocities, torques, **base) \
                is linearizer
        reference = rl.linearize(model, state, torques, **options)
        for name in FIELDS:
            assert getattr(linearizer, name) is arrays[name], name  # filled in place, never replaced
            assert _equal(getattr(linearizer, name), getattr(reference, name)), f"{case}, {step}: {name}"
        if call == "linearize":
            assert linearizer.state is state
        else:
            assert np.array_equal(linearizer.state.joint_positions, state.joint_positions)
            if model.floating_base:
                assert np.array_equal(linearizer.state.base_pose, state.base_pose)
        assert np.array_equal(linearizer.joint_torques, torques)
        assert linearizer.state_labels == reference.state_labels
        assert linearizer.contact_labels == reference.contact_labels and linearizer.contacts == reference.contacts
        assert (linearizer.dt, linearizer.discretization) == (reference.dt, reference.discretization)


def test_validate_takes_a_linearizer_as_a_linearization(rng):
    model = load_example("solo12")
    linearizer = rl.Linearizer(model, contacts=[rl.Contact(f) for f in SOLO_FEET], dt=1e-3)
    report = rl.validate(model, linearizer.linearize(random_state(model, rng), rng.normal(size=12)))
    assert report.passed(1e-6), report.summary()


def test_a_linearizer_does_not_disturb_the_threads_own_linearize(rng):
    """Its workspace is its own: rl.linearize calls between its calls, on the same model and
    contacts, neither change its arrays nor see its state."""
    model = load_example("solo12")
    contacts = [rl.Contact(f) for f in SOLO_FEET]
    linearizer = rl.Linearizer(model, contacts=contacts, dt=1e-3)
    first, other = random_state(model, rng), random_state(model, rng)
    linearizer.linearize(first)
    kept = {name: getattr(linearizer, name).copy() for name in ("A", "B", "A_d", "contact_forces")}
    rl.linearize(model, other, contacts=contacts, dt=1e-3)
    for name, value in kept.items():
        assert np.array_equal(getattr(linearizer, name), value)
    again = rl.linearize(model, first, contacts=contacts, dt=1e-3)
    assert np.array_equal(again.A_d, kept["A_d"])


def test_bad_input_is_a_one_line_error_and_leaves_no_result(rng):
    model = rl.load_urdf(rl.robots.bundled_urdf_path())
    linearizer = rl.Linearizer(model, dt=1e-3)
    state = random_state(model, rng)
    linearizer.linearize(state)
    with pytest.raises(ValueError, match=r"^joint_torques: expected shape \(12,\)"):
        linearizer.linearize(state, np.zeros(3))
    assert linearizer.state is None
    nan_state = rl.State(base_pose=state.base_pose, joint_positions=np.full(model.n_joints, np.nan),
                         base_twist=state.base_twist, joint_velocities=state.joint_velocities)
    with pytest.raises(ValueError, match="joint_positions"):
        linearizer.linearize(nan_state)
    assert linearizer.state is None and "not filled" in repr(linearizer)
    assert linearizer.linearize(state).state is state  # and it goes on
    reference = rl.linearize(model, state, dt=1e-3)
    assert np.array_equal(linearizer.A_d, reference.A_d)
    with pytest.raises(ValueError, match="dt"):
        rl.Linearizer(model, dt=-1.0)
    with pytest.raises(ValueError, match="discretization"):
        rl.Linearizer(model, discretization="zoh")
    with pytest.raises(TypeError):
        rl.Linearizer(model, previous_contacts=["FL_FOOT"])  # an impact is rl.linearize's


@pytest.mark.parametrize("empty", [[], (), "", "none"], ids=["[]", "()", "empty text", "none"])
@pytest.mark.parametrize("step", ["no step", "euler"])
def test_an_empty_contact_set_is_free_floating_as_in_linearize(empty, step, rng):
    """Linearizer(model, contacts=[]) is the free-floating linearizer: rl.linearize(contacts=[])'s
    result, which is rl.linearize's without contacts, bit for bit, with no contact fields."""
    model = rl.load_urdf(rl.robots.bundled_urdf_path())
    linearizer = rl.Linearizer(model, contacts=empty, **STEPS[step])
    assert linearizer.contacts == () and linearizer.contact_labels == () and linearizer.contact_forces is None
    for _ in range(2):
        state, torques = random_state(model, rng), rng.normal(size=model.n_joints)
        linearizer.linearize(state, torques)
        free, with_empty = rl.linearize(model, state, torques, **STEPS[step]), \
            rl.linearize(model, state, torques, contacts=empty, **STEPS[step])
        for name in FIELDS:
            assert _equal(getattr(linearizer, name), getattr(free, name)), name
            assert _equal(getattr(with_empty, name), getattr(free, name)), name


def test_linearize_arrays_takes_the_base_pose_as_position_and_quaternion_xyzw(rng):
    """(7,) = position and quaternion (x, y, z, w), ROS's and Pinocchio's order: the rotation checked
    against scipy's conversion, the result against linearize at that H."""
    from scipy.spatial.transform import Rotation

    model = load_example("solo12")
    linearizer = rl.Linearizer(model, contacts=[rl.Contact(f) for f in SOLO_FEET], dt=1e-3)
    state, torques = random_state(model, rng), rng.normal(size=12)
    quaternion = rng.normal(size=4)
    quaternion /= np.linalg.norm(quaternion)
    position = rng.normal(size=3)
    H = np.eye(4)
    H[:3, :3], H[:3, 3] = Rotation.from_quat(quaternion).as_matrix(), position  # scipy: scalar last
    linearizer.linearize_arrays(state.joint_positions, state.joint_velocities, torques,
                                base_pose=np.r_[position, quaternion], base_twist=state.base_twist)
    reference = rl.linearize(model, rl.State(base_pose=H, joint_positions=state.joint_positions,
                                             base_twist=state.base_twist, joint_velocities=state.joint_velocities),
                             torques, contacts=linearizer.contacts, dt=1e-3)
    np.testing.assert_allclose(linearizer.state.base_pose, H, rtol=0, atol=1e-15)
    for name in ("A", "B", "A_d", "contact_forces"):
        np.testing.assert_allclose(getattr(linearizer, name), getattr(reference, name), rtol=1e-12,
                                   atol=1e-12 * np.abs(getattr(reference, name)).max(), err_msg=name)
    # the control cycle's path (float64 arrays, the pose turned into H by a compiled kernel) and the checked
    # one (a list, converted and normalised in Python): the same H, the same bits, also for a quaternion a
    # little off unit norm, which both normalise
    fast = {}
    for pose in (np.r_[position, quaternion * 1.0003], list(np.r_[position, quaternion * 1.0003])):
        linearizer.linearize_arrays(state.joint_positions, state.joint_velocities, torques, base_pose=pose,
                                    base_twist=state.base_twist)
        for name in ("A", "B", "A_d", "contact_forces"):
            assert name not in fast or np.array_equal(fast[name], getattr(linearizer, name)), name
            fast[name] = getattr(linearizer, name).copy()


def test_linearize_arrays_refuses_bad_arrays_in_one_line(rng):
    model = rl.load_urdf(rl.robots.bundled_urdf_path())
    fixed = load_example("panda")
    linearizer = rl.Linearizer(model)
    state = random_state(model, rng)
    s, r, H, v = state.joint_positions, state.joint_velocities, state.base_pose, state.base_twist
    bad = [
        (dict(joint_positions=s[:3]), r"^joint_positions: expected shape \(12,\)"),
        (dict(joint_velocities=np.full(12, np.nan)), "joint_velocities"),
        (dict(base_pose=None), "^base_pose, base_twist: model 'rl_quadruped' has a floating base"),
        (dict(base_pose=[0, 0, 0, 0, 0, 0, 0]), r"^base_pose: expected a unit quaternion .* \(norm 0\)"),
        (dict(base_pose=[0, 0, 0, 0, 0, 0, 2.0]), r"^base_pose: expected a unit quaternion"),
        (dict(base_pose=[0, 0, 0, 0, 0, np.nan, 1.0]), r"^base_pose: expected a unit quaternion"),
        (dict(base_pose=np.zeros(7)), r"^base_pose: expected a unit quaternion .* \(norm 0\)"),  # (the fast path's)
        (dict(base_pose=np.array([0, 0, 0, 0, 0, np.nan, 1.0])), r"^base_pose: expected a unit quaternion"),
        (dict(base_pose=np.zeros(5)), r"^base_pose: expected H \(4, 4\), or position .* got shape \(5,\)"),
        (dict(base_pose=2 * H), "base_pose"),  # not rigid: the kernel's check
        (dict(base_twist="fast"), "^base_twist: expected"),
    ]
    for change, message in bad:
        arguments = dict(joint_positions=s, joint_velocities=r, base_pose=H, base_twist=v) | change
        with pytest.raises(ValueError, match=message) as error:
            linearizer.linearize_arrays(arguments.pop("joint_positions"), arguments.pop("joint_velocities"),
                                        **arguments)
        assert "\n" not in str(error.value) and linearizer.state is None, change
    with pytest.raises(ValueError, match="^base_pose, base_twist: model 'panda' has a fixed base"):
        rl.Linearizer(fixed).linearize_arrays(np.zeros(fixed.n_joints), np.zeros(fixed.n_joints), base_pose=H,
                                              base_twist=v)
    assert linearizer.linearize_arrays(s, r, base_pose=H, base_twist=v).state is not None  # and it goes on


# rl.linearize's results take the arrays of two Linearizers kept per thread, model, contact set, step and
# kernel (linearizer._Lender) while nothing else holds them.  What must hold: its fields are those of the
# path that allocates every array (linearization.linearize_allocating) bit for bit, and no later call ever
# writes to an array any result, array or view of one, still alive, holds.

def _allocated(model, state, torques, contacts=None, dt=None, discretization=None):
    """The result of the path that allocates every array, the reference of the lent ones, with the kernel
    rl.linearize runs here (the tests' default, generic: no kernel is built in the background)."""
    from robot_linearization.algorithms.constrained_dynamics import contact_set
    from robot_linearization.kernel_choice import kernel_argument
    from robot_linearization.linearization import check_step, linearize_allocating
    held = contact_set(model, contacts) if contacts else None
    return linearize_allocating(model, state, torques, held, None, 0.0, check_step(model, dt, discretization),
                                kernel_argument(None))


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("case", CASES)
def test_linearize_equals_the_allocating_path_and_lends_where_a_linearizer_covers(case, step, rng):
    """Every field bit for bit, in a loop that keeps the last result; a Model with no step or the Euler
    step takes lent arrays (alive after the result is dropped), a CoupledModel or the zero-order hold
    arrays of its own (gone with it)."""
    import weakref
    load, contacts = CASES[case]
    model = load()
    options = dict(contacts=contacts, **STEPS[step])
    lends = isinstance(model, rl.Model) and step != "zoh"
    lin = None
    for _ in range(4):
        state, torques = random_state(model, rng), rng.normal(size=model.n_joints)
        lin = rl.linearize(model, state, torques, **options)
        reference = _allocated(model, state, torques, **options)
        for name in FIELDS:
            assert _equal(getattr(lin, name), getattr(reference, name)), f"{case}, {step}: {name}"
        assert lin.state is state and np.array_equal(lin.joint_torques, torques)
        assert (lin.state_labels, lin.contact_labels, lin.contacts, lin.dt, lin.discretization) == (
            reference.state_labels, reference.contact_labels, reference.contacts, reference.dt,
            reference.discretization)
    A = weakref.ref(lin.A)
    del lin
    assert (A() is not None) == lends


SOLO_CONTACTS = [rl.Contact(f) for f in SOLO_FEET]
KEPT = {  # what a caller keeps of a result -> (options, the arrays it can reach from it)
    "the result": ({}, lambda lin: {"A": lin.A, "B": lin.B, "M_inv": lin.M_inv, "ν̇": lin.base_acceleration.base}),
    "A alone": ({}, lambda lin: {"A": lin.A}),
    "M_inv alone": ({}, lambda lin: {"M_inv": lin.M_inv}),
    "the joint accelerations": ({}, lambda lin: {"ṙ": lin.joint_accelerations}),
    "the base acceleration": ({}, lambda lin: {"v̇": lin.base_acceleration}),
    "ν̇ behind the base acceleration": ({}, lambda lin: {"ν̇": lin.base_acceleration.base}),
    "a view of B": ({}, lambda lin: {"B[3:]": lin.B[3:]}),
    "A_d of a step": ({"dt": 1e-3}, lambda lin: {"A_d": lin.A_d}),
    "the contact forces": ({"contacts": SOLO_CONTACTS}, lambda lin: {"λ": lin.contact_forces}),
    "∂λ/∂z": ({"contacts": SOLO_CONTACTS, "dt": 1e-3}, lambda lin: {"∂λ/∂z": lin.contact_forces_state_jacobian}),
}


@pytest.mark.parametrize("kept", KEPT)
def test_what_a_caller_keeps_of_a_result_is_never_overwritten(kept, rng):
    """A result, one of its arrays or a view of one, kept while rl.linearize goes on at other states
    (their results dropped, or the last one kept): its values stay those of its own state."""
    options, reach = KEPT[kept]
    model = load_example("solo12")
    first = rl.linearize(model, random_state(model, rng), rng.normal(size=12), **options)
    held = reach(first)
    copies = {name: value.copy() for name, value in held.items()}
    del first
    last = None
    for k in range(5):
        other = rl.linearize(model, random_state(model, rng), rng.normal(size=12), **options)
        if k % 2:
            last = other  # (a loop that keeps its last result)
        del other
    del last
    for name, value in held.items():
        assert np.array_equal(value, copies[name]), f"{kept}: {name} was overwritten"


def test_results_kept_past_the_two_lent_take_arrays_of_their_own(rng):
    """A caller that keeps every result: each its own arrays, each equal to the allocating path's."""
    model = load_example("solo12")
    states = [random_state(model, rng) for _ in range(5)]
    results = [rl.linearize(model, state, contacts=SOLO_CONTACTS) for state in states]
    assert len({id(lin.A) for lin in results}) == len(results)
    for lin, state in zip(results, states):
        reference = _allocated(model, state, None, contacts=SOLO_CONTACTS)
        for name in FIELDS:
            assert _equal(getattr(lin, name), getattr(reference, name)), name


def test_a_loop_that_keeps_its_last_result_takes_the_two_lent_in_turn(rng):
    """``lin = rl.linearize(...)`` in a loop: two sets of arrays, no allocation per call; a result dropped
    at once: one."""
    model = load_example("solo12")
    lin, seen = None, set()
    for _ in range(6):
        lin = rl.linearize(model, random_state(model, rng))
        seen.add(id(lin.A))
    assert len(seen) == 2
    del lin
    assert len({id(rl.linearize(model, random_state(model, rng)).A) for _ in range(4)}) == 1


def test_each_thread_lends_its_own_arrays(rng):
    """Threads linearizing the same model at once: every result that of its own state."""
    from concurrent.futures import ThreadPoolExecutor
    model = load_example("solo12")
    states = [[random_state(model, rng) for _ in range(30)] for _ in range(3)]

    def run(sequence):
        return [(state, rl.linearize(model, state, contacts=SOLO_CONTACTS, dt=1e-3)) for state in sequence]

    with ThreadPoolExecutor(3) as pool:
        runs = list(pool.map(run, states))
    for results in runs:
        for state, lin in results[-3:] + results[:2]:
            assert np.array_equal(lin.A_d, _allocated(model, state, None, contacts=SOLO_CONTACTS, dt=1e-3).A_d)


def test_a_call_that_repeats_its_arguments_still_reads_them_anew_when_they_change(rng):
    """rl.linearize keeps a thread's last arguments beside the arrays it lends for them: a list of contacts
    changed in place, another step, and each argument a call must refuse, given right after the same call
    with a good value of it, are read as new."""
    model = load_example("solo12")
    state = random_state(model, rng)
    contacts = list(SOLO_FEET[:2])
    rl.linearize(model, state, contacts=contacts, dt=1e-3)
    contacts.append(SOLO_FEET[2])
    for dt in (1e-3, 2e-3):
        lin = rl.linearize(model, state, contacts=contacts, dt=dt)
        reference = _allocated(model, state, None, contacts=SOLO_FEET[:3], dt=dt)
        assert lin.contact_labels == reference.contact_labels and len(lin.contact_forces) == 9
        for name in FIELDS:
            assert _equal(getattr(lin, name), getattr(reference, name)), f"dt {dt}: {name}"
    refused = {"dt": (1.0, True), "discretization": ("euler", "rk4"), "kernel": ("generic", "fastest"),
               "restitution": (1.0, True), "contacts": (["FL_FOOT"], ["FL_FOOT", "nose"])}
    for name, (good, bad) in refused.items():
        options = {"dt": 1.0, name: good}
        rl.linearize(model, state, **options)
        with pytest.raises(ValueError, match=f"^{name}: " if name != "contacts" else "'nose'"):
            rl.linearize(model, state, **{**options, name: bad})
