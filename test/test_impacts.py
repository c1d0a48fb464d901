"""The impact map (rl.impact) and gait horizons through a touchdown: against central geometric
finite differences, Pinocchio's impulseDynamics + computeImpulseDynamicsDerivatives (4.0.0),
Crocoddyl 3.2.1's ActionModelImpulseFwdDynamics and its shooting problem with an impulse knot
between two phases, and the physics of a quadruped dropped onto its feet.  docs/impacts.md."""

import sys

import numpy as np
import pytest

import robot_linearization as rl
from robot_linearization.algorithms import constrained_dynamics
from robot_linearization.algorithms.constrained_dynamics import bias_motion, contact_kinematics
from robot_linearization.algorithms.kinematics import body_transforms
from robot_linearization.algorithms.mass_matrix import mass_matrix
from robot_linearization.pinocchio_reference import rigid_constraint_models
from robot_linearization.spatial import se3_exp
from robot_linearization.validation import finite_difference_impact, finite_difference_step

from conftest import PinocchioOracle, example_robot_path, load_example, random_state, random_tree
from test_contacts import _tree_in_contact

SOLO_FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
TALOS_SOLES = ("left_sole_link", "right_sole_link")

CASES = {  # name: (robot, contacts)
    "solo12 1 foot": ("solo12", [rl.Contact("FL_FOOT")]),
    "solo12 2 feet local": ("solo12", [rl.Contact(f, reference="local") for f in ("FL_FOOT", "HR_FOOT")]),
    "solo12 3 feet mixed": ("solo12", [rl.Contact("FL_FOOT"), rl.Contact("HR_FOOT", reference="local"),
                                       rl.Contact("FR_FOOT")]),
    "solo12 4 feet": ("solo12", [rl.Contact(f) for f in SOLO_FEET]),
    "talos 1 sole 6d": ("talos", [rl.Contact("left_sole_link", "6d")]),
    "talos 2 soles 6d local": ("talos", [rl.Contact(f, "6d", "local") for f in TALOS_SOLES]),
    "talos 6d + point": ("talos", [rl.Contact("left_sole_link", "6d"), rl.Contact("right_sole_link", "point",
                                                                                  "local")]),
    "ur5 (fixed) tool hits a point": ("ur5", [rl.Contact("tool0")]),
}


def relative(ours, reference):
    return np.abs(ours - reference).max() / np.abs(reference).max()


def _case(name, rng):
    robot, contacts = CASES[name]
    model = load_example(robot)
    return model, contacts, random_state(model, rng)


def _velocity(model, state):
    return np.r_[state.base_twist, state.joint_velocities] if model.floating_base else state.joint_velocities


@pytest.mark.parametrize("restitution", [0.0, 0.5])
@pytest.mark.parametrize("name", list(CASES))
def test_impact_map_and_its_jacobians_match_finite_differences(name, restitution, rng):
    model, contacts, state = _case(name, rng)
    jump = rl.impact(model, state, contacts, restitution=restitution)
    N, m = model.n_velocities, sum(c.dimension for c in contacts)
    assert jump.A.shape == (2 * N, 2 * N) and jump.impulses.shape == (m,)
    assert jump.impulses_state_jacobian.shape == (m, 2 * N) and len(jump.impulse_labels) == m
    A_fd, dimpulses_fd = finite_difference_impact(model, state, contacts, restitution)
    assert relative(jump.A, A_fd) < 1e-6, relative(jump.A, A_fd)
    assert relative(jump.impulses_state_jacobian, dimpulses_fd) < 1e-6
    np.testing.assert_array_equal(jump.state.joint_positions, state.joint_positions)  # s (and H) do not jump
    if model.floating_base:
        np.testing.assert_array_equal(jump.state.base_pose, state.base_pose)


@pytest.mark.parametrize("restitution", [0.0, 0.5])
@pytest.mark.parametrize("floating_base", [True, False])
def test_impact_map_on_random_branched_trees(floating_base, restitution, rng):
    checked = 0
    for attempt in range(30):
        model, contacts = _tree_in_contact(rng, floating_base)
        state = random_state(model, rng, scale=0.5)
        try:
            jump = rl.impact(model, state, contacts, restitution)
        except rl.ContactError:  # leaves sharing too few joints for these constraints: another tree
            continue
        A_fd, dimpulses_fd = finite_difference_impact(model, state, contacts, restitution)
        assert relative(jump.A, A_fd) < 1e-6 and relative(jump.impulses_state_jacobian, dimpulses_fd) < 1e-6, attempt
        checked += 1
        if checked == 2:
            break
    assert checked == 2


def _pinocchio_impulse(robot, model, state, contacts, restitution, calls=1):
    """Pinocchio's impulseDynamics + computeImpulseDynamicsDerivatives in our order: (ν⁺, Λ,
    ∂ν⁺/∂z (N, 2N), ∂Λ/∂z (m, 2N)); its ddq_dv is the derivative of the jump ν⁺ − ν⁻.
    ``calls``: how many times both run on the same Data (the result is the last's)."""
    import pinocchio as pin

    oracle = PinocchioOracle(example_robot_path(robot), model)
    pm, P = oracle.pmodel, oracle.perm
    constraint_models, constraint_datas = rigid_constraint_models(pin, pm, contacts)
    data = pm.createData()
    pin.initConstraintDynamics(pm, data, constraint_models, constraint_datas)
    v = np.zeros(pm.nv)
    v[P] = _velocity(model, state)
    settings = pin.ProximalSettings(1e-14, 1e-12, 1)  # μ = 1e-12: the exact solution to ~1e-12
    for _ in range(calls):
        v_plus = pin.impulseDynamics(pm, data, oracle.configuration(state), v, constraint_models, constraint_datas,
                                     restitution, settings)
        pin.computeImpulseDynamicsDerivatives(pm, data, constraint_models, constraint_datas, restitution, settings)
    N = model.n_velocities
    d_nu = np.hstack([np.asarray(data.ddq_dq)[np.ix_(P, P)], np.asarray(data.ddq_dv)[np.ix_(P, P)] + np.eye(N)])
    d_impulses = np.hstack([np.asarray(data.dlambda_dq)[:, P], np.asarray(data.dlambda_dv)[:, P]])
    return np.asarray(v_plus)[P], np.array(data.impulse_c), d_nu, d_impulses


@pytest.mark.parametrize("name", list(CASES))
def test_inelastic_impact_matches_pinocchios_impulse_dynamics_derivatives(name, rng):
    model, contacts, state = _case(name, rng)
    jump = rl.impact(model, state, contacts)
    N = model.n_velocities
    v_plus, impulses, d_nu, d_impulses = _pinocchio_impulse(CASES[name][0], model, state, contacts, 0.0)
    for ours, theirs, what in [(_velocity(model, jump.state), v_plus, "ν⁺"), (jump.impulses, impulses, "Λ"),
                               (jump.A[N:], d_nu, "∂ν⁺/∂z"), (jump.impulses_state_jacobian, d_impulses, "∂Λ/∂z")]:
        assert relative(ours, theirs) < 1e-9, f"{what}: relative error {relative(ours, theirs):.2e}"


@pytest.mark.parametrize("name", list(CASES))
def test_with_restitution_pinocchios_first_call_agrees_too(name, rng):
    """e = 0.5: Pinocchio 4.0.0's ν⁺, Λ and derivatives are ours on a fresh Data."""
    model, contacts, state = _case(name, rng)
    jump = rl.impact(model, state, contacts, 0.5)
    v_plus, impulses, d_nu, d_impulses = _pinocchio_impulse(CASES[name][0], model, state, contacts, 0.5)
    assert relative(_velocity(model, jump.state), v_plus) < 1e-9 and relative(jump.impulses, impulses) < 1e-9
    N = model.n_velocities
    assert relative(jump.A[N:], d_nu) < 1e-9 and relative(jump.impulses_state_jacobian, d_impulses) < 1e-9


@pytest.mark.parametrize("restitution", [0.0, 0.5])
def test_pinocchios_second_call_on_the_same_data_has_wrong_configuration_derivatives(restitution, rng):
    """Pinocchio 4.0.0, floating base: impulseDynamics + computeImpulseDynamicsDerivatives called a
    second time on the same Data with the same arguments keep ν⁺ and ∂ν⁺/∂ν⁻ but change ∂ν⁺/∂q
    by 1e-4 to 20 % (something accumulates instead of being reset; not with the fixed-base ur5).
    Ours equal its first call (docs/impacts.md)."""
    model, contacts, state = _case("solo12 3 feet mixed", rng)
    jump = rl.impact(model, state, contacts, restitution)
    v_plus, _, d_nu, _ = _pinocchio_impulse("solo12", model, state, contacts, restitution, calls=2)
    N = model.n_velocities
    assert relative(_velocity(model, jump.state), v_plus) < 1e-9 and relative(jump.A[N:, N:], d_nu[:, N:]) < 1e-9
    assert relative(jump.A[N:, :N], d_nu[:, :N]) > 1e-3  # (if a later Pinocchio fixes it, this says so)


def _crocoddyl(robot, model):
    import crocoddyl
    import pinocchio as pin

    oracle = PinocchioOracle(example_robot_path(robot), model)
    pm = oracle.pmodel
    multibody = crocoddyl.StateMultibody(pm)
    actuation = crocoddyl.ActuationModelFloatingBase(multibody)
    P, nv = oracle.perm, pm.nv

    def reference(c):
        return pin.LOCAL_WORLD_ALIGNED if c.reference == "world_aligned" else pin.LOCAL

    def impulse_model(contacts, restitution=0.0):
        impulses = crocoddyl.ImpulseModelMultiple(multibody)
        for c in contacts:
            frame = pm.getFrameId(c.frame)
            kind = crocoddyl.ImpulseModel3D if c.kind == "point" else crocoddyl.ImpulseModel6D
            impulses.addImpulse(c.frame, kind(multibody, frame, reference(c)))
        return crocoddyl.ActionModelImpulseFwdDynamics(multibody, impulses, crocoddyl.CostModelSum(multibody, 0),
                                                       restitution, 0.0, True)

    def euler_model(contacts, dt):
        rigid = crocoddyl.ContactModelMultiple(multibody, actuation.nu)
        for c in contacts:
            frame = pm.getFrameId(c.frame)
            rigid.addContact(c.frame, crocoddyl.ContactModel3D(multibody, frame, np.zeros(3), reference(c),
                                                               actuation.nu, np.zeros(2)) if c.kind == "point"
                             else crocoddyl.ContactModel6D(multibody, frame, pin.SE3.Identity(), reference(c),
                                                           actuation.nu, np.zeros(2)))
        dynamics = crocoddyl.DifferentialActionModelContactFwdDynamics(
            multibody, actuation, rigid, crocoddyl.CostModelSum(multibody, actuation.nu), 0.0, True)
        return crocoddyl.IntegratedActionModelEuler(dynamics, dt)

    def x_of(state):
        v = np.zeros(nv)
        v[P] = _velocity(model, state)
        return np.r_[oracle.configuration(state), v]

    def u_of(tau):
        u = np.zeros(actuation.nu)
        u[P[6:] - 6] = tau
        return u

    rows = np.r_[P, nv + P]
    return impulse_model, euler_model, x_of, u_of, rows, P[6:] - 6, crocoddyl


@pytest.mark.parametrize("name", [n for n in CASES if CASES[n][0] != "ur5"])
def test_inelastic_impact_matches_crocoddyls_impulse_action_model(name, rng):
    model, contacts, state = _case(name, rng)
    impulse_model, _, x_of, _, rows, _, _ = _crocoddyl(CASES[name][0], model)
    action = impulse_model(contacts)
    data = action.createData()
    x = x_of(state)
    action.calc(data, x, np.zeros(0))
    action.calcDiff(data, x, np.zeros(0))
    jump = rl.impact(model, state, contacts)
    assert relative(jump.A, data.Fx[np.ix_(rows, rows)]) < 1e-9
    assert relative(x_of(jump.state)[-model.n_velocities:], data.xnext[-model.n_velocities:]) < 1e-12


def test_with_restitution_crocoddyls_jump_is_ours_but_its_derivatives_are_not_of_it(rng):
    """Crocoddyl 3.2.1, r_coeff = 0.5: its xnext (ν⁺) is ours (and Pinocchio's), our A is the
    finite differences of its xnext, its Fx is not (docs/impacts.md)."""
    from robot_linearization.validation import perturb

    model, contacts, state = _case("solo12 3 feet mixed", rng)
    impulse_model, _, x_of, _, rows, _, _ = _crocoddyl("solo12", model)
    action = impulse_model(contacts, 0.5)

    def after(s):
        data = action.createData()
        action.calc(data, x_of(s), np.zeros(0))
        action.calcDiff(data, x_of(s), np.zeros(0))
        return data

    N = model.n_velocities
    jump, data = rl.impact(model, state, contacts, 0.5), after(state)
    assert relative(x_of(jump.state)[-N:], data.xnext[-N:]) < 1e-12
    P = rows[:N]
    columns = [(after(perturb(model, state, h * e)).xnext[-N:] - after(perturb(model, state, -h * e)).xnext[-N:])
               [P] / (2 * h) for h in [1e-6] for e in np.eye(2 * N)]
    differences = np.column_stack(columns)
    assert relative(jump.A[N:], differences) < 1e-6
    assert relative(data.Fx[np.ix_(rows, rows)][N:], differences) > 1e-2


SOLO_GAIT = [["FL_FOOT", "HR_FOOT"], ["FL_FOOT", "HR_FOOT"], [], [], list(SOLO_FEET), list(SOLO_FEET),
             ["FR_FOOT", "HL_FOOT"], [rl.Contact("FR_FOOT"), rl.Contact("HL_FOOT"), rl.Contact("FL_FOOT", "point",
                                                                                                "local")]]
"""A trot's diagonal pair, a flight, a touchdown on four feet (knot 4), a lift-off of two
(knot 6, no impact), a third foot touching down (knot 7)."""


def _gait_rollout(model, rng, dt, restitution=0.0):
    state = random_state(model, rng, scale=0.5)
    torques = rng.normal(scale=2.0, size=(len(SOLO_GAIT), model.n_joints))
    states = [state]
    for k in range(len(SOLO_GAIT) - 1):
        states.append(rl.step(model, states[-1], torques[k], dt, SOLO_GAIT[k],
                              previous_contacts=SOLO_GAIT[k - 1] if k else None, restitution=restitution))
    return states, torques


def test_a_horizon_through_a_touchdown_matches_crocoddyls_shooting_problem(rng):
    """Crocoddyl: IntegratedActionModelEuler(ContactFwdDynamics) per knot, with an
    ActionModelImpulseFwdDynamics knot of its own before each touchdown knot: our A_d[k] is its
    Fx(Euler at x⁺)·Fx(impulse at x⁻), B_d[k] its Fu(Euler at x⁺); and its rollout is rl.step's."""
    model = load_example("solo12")
    dt = 5e-3
    states, torques = _gait_rollout(model, rng, dt)
    horizon = rl.linearize_trajectory(model, states, torques, contacts=SOLO_GAIT, dt=dt)
    touchdowns = [k for k in range(len(SOLO_GAIT)) if horizon.impact[k] is not None]
    assert touchdowns == [4, 7]
    impulse_model, euler_model, x_of, u_of, rows, joints, crocoddyl = _crocoddyl("solo12", model)
    models, controls, knot_of = [], [], []
    for k, feet in enumerate(SOLO_GAIT):
        contacts = rl.contacts.as_contacts(feet)
        if k in touchdowns:
            models.append(impulse_model(contacts))
            controls.append(np.zeros(0))
            knot_of.append(None)
        models.append(euler_model(contacts, dt))
        controls.append(u_of(torques[k]))
        knot_of.append(k)
    problem = crocoddyl.ShootingProblem(x_of(states[0]), models, euler_model([], dt))
    xs = problem.rollout(controls)
    problem.calc(xs, controls)
    problem.calcDiff(xs, controls)
    final = rl.step(model, states[-1], torques[-1], dt, SOLO_GAIT[-1], previous_contacts=SOLO_GAIT[-2])
    assert relative(xs[-1][19:], x_of(final)[19:]) < 1e-9  # the same velocities at the end of the gait
    F_x = {}
    for i, k in enumerate(knot_of):
        data = problem.runningDatas[i]
        if k is None:
            impulse_Fx = np.array(data.Fx)
            continue
        Fx = data.Fx[np.ix_(rows, rows)] @ (impulse_Fx[np.ix_(rows, rows)] if k in touchdowns else np.eye(36))
        F_x[k] = Fx
        assert relative(horizon.A_d[k], Fx) < 1e-9, (k, relative(horizon.A_d[k], Fx))
        assert relative(horizon.B_d[k], data.Fu[np.ix_(rows, joints)]) < 1e-9, k
    assert relative(F_x[4], horizon.A_d[4] @ np.linalg.inv(horizon.impact[4].A)) > 1e-3  # the impact matters


@pytest.mark.parametrize("restitution", [0.0, 0.5])
def test_a_horizon_through_a_touchdown_matches_finite_differences_of_the_step(restitution, rng):
    model = load_example("solo12")
    dt = 1e-2
    states, torques = _gait_rollout(model, rng, dt, restitution)
    horizon = rl.linearize_trajectory(model, states, torques, contacts=SOLO_GAIT, dt=dt, restitution=restitution,
                                      workers=2)
    for k in range(len(SOLO_GAIT)):
        previous = SOLO_GAIT[k - 1] if k else None
        A_fd, B_fd = finite_difference_step(model, states[k], torques[k], dt, SOLO_GAIT[k],
                                            previous_contacts=previous, restitution=restitution)
        assert relative(horizon.A_d[k], A_fd) < 1e-6 and relative(horizon.B_d[k], B_fd) < 1e-6, k
        single = rl.linearize(model, states[k], torques[k], contacts=SOLO_GAIT[k], dt=dt,
                              previous_contacts=previous, restitution=restitution)
        np.testing.assert_array_equal(single.A_d, horizon.A_d[k])
        np.testing.assert_allclose(rl.discretize(model, single, dt)[0], single.A_d, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rl.discretize(model, horizon, dt)[0], horizon.A_d, rtol=0, atol=1e-12)
    if restitution == 0.0:
        lin = rl.linearize(model, states[4], torques[4], contacts=SOLO_GAIT[4], dt=dt, previous_contacts=[])
        assert lin.impact is not None and rl.validate(model, lin).passed(1e-6)


def test_the_step_at_a_touchdown_is_the_step_from_the_post_impact_state(rng):
    model = load_example("solo12")
    state, tau = random_state(model, rng), rng.normal(size=12)
    feet = list(SOLO_FEET)
    jump = rl.impact(model, state, feet)
    after = rl.step(model, state, tau, 1e-3, feet, previous_contacts=["FL_FOOT"])
    expected = rl.step(model, jump.state, tau, 1e-3, feet)
    np.testing.assert_array_equal(after.joint_velocities, expected.joint_velocities)
    for previous in (None, feet, feet + []):  # no previous set, or nothing closes: no impact
        plain = rl.step(model, state, tau, 1e-3, feet, previous_contacts=previous)
        np.testing.assert_array_equal(plain.joint_velocities, rl.step(model, state, tau, 1e-3, feet).joint_velocities)
    lift_off = rl.step(model, state, tau, 1e-3, ["FL_FOOT"], previous_contacts=feet)
    np.testing.assert_array_equal(lift_off.joint_velocities,
                                  rl.step(model, state, tau, 1e-3, ["FL_FOOT"]).joint_velocities)


def test_each_contact_argument_is_parsed_once_on_its_way_down(monkeypatch, rng):
    """rl.linearize, rl.step, rl.impact and rl.linearize_trajectory read each contact set they are given
    once (contacts.as_contacts, in constrained_dynamics.contact_set) and pass the set bound to the model
    down to the touchdown test, the impact map and the constrained dynamics, which read it no more; the
    results are those of the same calls unobserved, bit for bit.  A new model: the contact sets are
    bound for the first time during the counted calls; contact_set's cache of the sets it was given before
    is bypassed, so that every reading counts."""
    model = rl.load_urdf(rl.robots.bundled_urdf_path())
    state, tau = random_state(model, rng), rng.normal(size=model.n_joints)
    feet, two = list(rl.robots.BUNDLED_FEET), ", ".join(rl.robots.BUNDLED_FEET[:2])  # (two: the node's text)
    calls = {  # name: (call, the number of contact arguments)
        "linearize": (lambda: rl.linearize(model, state, tau, contacts=feet, dt=1e-3), 1),
        "linearize at a touchdown": (lambda: rl.linearize(model, state, tau, contacts=feet, previous_contacts=two,
                                                          dt=1e-3), 2),
        "linearize at a lift-off": (lambda: rl.linearize(model, state, tau, contacts=two, previous_contacts=feet,
                                                         dt=1e-3), 2),
        "step": (lambda: rl.step(model, state, tau, 1e-3, feet), 1),
        "step at a touchdown": (lambda: rl.step(model, state, tau, 1e-3, feet, previous_contacts=two), 2),
        "impact": (lambda: rl.impact(model, state, feet, 0.3), 1),
        "a horizon through a touchdown": (lambda: rl.linearize_trajectory(
            model, [state] * 3, contacts=[feet[:2], feet, feet], previous_contacts=two, dt=1e-3, workers=1), 4),
    }
    parser = rl.contacts.as_contacts
    parsed = []

    def counted(contacts):
        parsed.append(contacts)
        return parser(contacts)

    for module in [m for name, m in sys.modules.items() if name.startswith("robot_linearization")]:
        if getattr(module, "as_contacts", None) is parser:
            monkeypatch.setattr(module, "as_contacts", counted)
    seen = constrained_dynamics._contact_set_seen
    monkeypatch.setattr(constrained_dynamics, "_contact_set_seen", seen.__wrapped__)
    observed = {}
    for name, (call, arguments) in calls.items():
        parsed.clear()
        observed[name] = call()
        assert len(parsed) == arguments, f"{name}: {len(parsed)} readings of {arguments} contact arguments"
    monkeypatch.undo()
    for name, (call, _) in calls.items():
        result, expected = dict(_arrays_of(observed[name])), dict(_arrays_of(call()))
        assert result.keys() == expected.keys() and result, name
        for field, value in result.items():
            np.testing.assert_array_equal(value, expected[field], err_msg=f"{name}: {field}")


def _arrays_of(value, name=""):
    """(name, array) of every array in a result (a Linearization, Impact, State), its fields' too."""
    if isinstance(value, np.ndarray):
        yield name, value
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            yield from _arrays_of(item, f"{name}[{i}]")
    elif hasattr(value, "__dict__"):
        for field, item in vars(value).items():
            yield from _arrays_of(item, f"{name}.{field}")


def _dropped_quadruped(speed=1.0):
    """The bundled quadruped, level, legs bent, falling at ``speed`` m/s, joints still."""
    model = rl.load_urdf(rl.robots.bundled_urdf_path())
    pose = se3_exp(np.array([0.0, 0.0, 0.35, 0.0, 0.0, 0.4]))
    twist = np.r_[pose[:3, :3].T @ [0.0, 0.0, -speed], np.zeros(3)]  # the body twist of a vertical fall
    state = rl.State(base_pose=pose, joint_positions=np.tile([0.1, 0.8, -1.5], 4), base_twist=twist,
                     joint_velocities=np.zeros(12))
    return model, state, list(rl.robots.BUNDLED_FEET)


def _contact_velocity_and_energy(model, state, feet):
    X_up = body_transforms(model, state.joint_positions)
    J, _ = contact_kinematics(model, state, feet, X_up, *bias_motion(model, state, X_up))
    nu = _velocity(model, state)
    return J @ nu, 0.5 * nu @ mass_matrix(model, state.joint_positions) @ nu


def test_a_quadruped_dropped_flat_onto_four_feet_stops_them_and_loses_energy():
    model, state, feet = _dropped_quadruped()
    before, energy = _contact_velocity_and_energy(model, state, feet)
    assert np.abs(before).max() > 0.9  # the feet do hit the ground
    jump = rl.impact(model, state, feet)
    after, energy_after = _contact_velocity_and_energy(model, jump.state, feet)
    assert np.abs(after).max() < 1e-10
    assert energy_after < 0.9 * energy
    assert (jump.impulses.reshape(4, 3)[:, 2] > 0).all()  # world-aligned: every foot pushes the robot up


def test_a_perfectly_elastic_impact_keeps_the_energy_and_reverses_the_feet():
    model, state, feet = _dropped_quadruped()
    before, energy = _contact_velocity_and_energy(model, state, feet)
    jump = rl.impact(model, state, feet, restitution=1.0)
    after, energy_after = _contact_velocity_and_energy(model, jump.state, feet)
    np.testing.assert_allclose(after, -before, atol=1e-10)
    assert abs(energy_after - energy) < 1e-10 * energy


def test_impact_arguments_and_degenerate_sets(rng):
    solo = load_example("solo12")
    state = random_state(solo, rng)
    none = rl.impact(solo, state, [])
    np.testing.assert_array_equal(none.A, np.eye(36))
    assert none.impulses.shape == (0,) and none.state.base_twist.tolist() == state.base_twist.tolist()
    with pytest.raises(rl.ContactError, match=r"constrains 24 directions of which only 18 are independent"):
        rl.impact(solo, state, [rl.Contact(f, "6d") for f in SOLO_FEET])
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="restitution"):
            rl.impact(solo, state, ["FL_FOOT"], restitution=bad)
    with pytest.raises(ValueError, match="previous_contacts: a touchdown's impact enters the step's Jacobians only"):
        rl.linearize(solo, state, contacts=["FL_FOOT"], previous_contacts=[])
    with pytest.raises(rl.ContactError, match="did you mean"):
        rl.step(solo, state, None, 1e-3, ["FL_FOOT"], previous_contacts=["FL_FOT"])
    tree = random_tree(rng, 3)
    assert rl.impact(tree, random_state(tree, rng), ["b2"]).A.shape == (18, 18)


@pytest.mark.parametrize("restitution", [0.0, 0.5])
@pytest.mark.parametrize("name", ["solo12 4 feet", "talos 2 soles 6d local", "ur5 (fixed) tool hits a point"])
def test_an_impact_map_held_fills_rl_impacts_result_bit_for_bit(name, restitution, rng):
    """rl.ImpactMap: rl.impact's numbers in the same arrays at state after state, given a State or
    the robot's arrays; the base pose as position and quaternion (x, y, z, w) too."""
    from scipy.spatial.transform import Rotation

    model, contacts, _ = _case(name, rng)
    held = rl.ImpactMap(model, contacts, restitution=restitution)
    arrays = (held.A, held.impulses, held.impulses_state_jacobian, held.joint_velocities)
    for _ in range(3):
        state = random_state(model, rng)
        jump = rl.impact(model, state, contacts, restitution=restitution)
        expected = (jump.A, jump.impulses, jump.impulses_state_jacobian, jump.state.joint_velocities)
        pose = dict(base_pose=state.base_pose, base_twist=state.base_twist) if model.floating_base else {}
        for call in (lambda: held.impact(state),
                     lambda: held.impact_arrays(state.joint_positions, state.joint_velocities, **pose)):
            assert call() is held
            assert all(np.array_equal(ours, reference) for ours, reference in zip(arrays, expected))
            assert np.array_equal(held.state.joint_velocities, jump.state.joint_velocities)
            assert not model.floating_base or np.array_equal(held.base_twist, jump.state.base_twist)
        assert held.impulse_labels == jump.impulse_labels
        if model.floating_base:
            quaternion = Rotation.from_matrix(state.base_pose[:3, :3]).as_quat()  # (x, y, z, w)
            held.impact_arrays(state.joint_positions, state.joint_velocities, base_twist=state.base_twist,
                               base_pose=np.r_[state.base_pose[:3, 3], quaternion])
            assert all(relative(ours, reference) < 1e-12 for ours, reference in zip(arrays, expected))


def test_an_impact_map_held_gives_rl_impacts_errors_and_then_no_result(rng):
    solo = load_example("solo12")
    state = random_state(solo, rng)
    held = rl.ImpactMap(solo, [rl.Contact(f, "6d") for f in SOLO_FEET])
    with pytest.raises(rl.ContactError) as expected:
        rl.impact(solo, state, [rl.Contact(f, "6d") for f in SOLO_FEET])
    with pytest.raises(rl.ContactError) as got:
        held.impact(state)
    assert str(got.value) == str(expected.value) and held.state is None
    held = rl.ImpactMap(solo, SOLO_FEET)
    bad = rl.State(base_pose=state.base_pose, joint_positions=np.full(12, np.nan), base_twist=state.base_twist,
                   joint_velocities=state.joint_velocities)
    with pytest.raises(ValueError, match="joint_positions") as got:
        held.impact(bad)
    assert "\n" not in str(got.value) and held.state is None
    assert repr(held).startswith("<ImpactMap of 'solo': 4 contacts, e = 0, A (36, 36), impulses (12,); not filled")
    panda = rl.load_urdf(example_robot_path("panda"), floating_base=False)  # mimic joints coupled
    with pytest.raises(ValueError, match="'generated' covers a Model, not a CoupledModel"):
        rl.ImpactMap(panda, ["panda_hand"], kernel="generated")
