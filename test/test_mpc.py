"""The whole-body MPC (walking/mpc.py) trotting the bundled quadruped on the ground (walking/ground.py):
it stays up, its stance feet stay on the ground, its plans keep their constraints, it rejects a
lateral push; bad schedules are refused in one line.  The Jacobians it plans with are rl.linearize's,
checked elsewhere; a sign or a dt changed in them makes the robot fall (tried by hand)."""

import re

import numpy as np
import pytest

import robot_linearization as rl
from robot_linearization.algorithms.kinematics import frame_poses
from robot_linearization.gait import TROT, Gait, Phase
from robot_linearization.robots import BUNDLED_FEET, bundled_urdf_path
from robot_linearization.urdf import effort_limits
from robot_linearization.walking.condensing import perturbations_into
from robot_linearization.walking.ground import GroundSimulation
from robot_linearization.walking import mpc as mpc_module
from robot_linearization.walking.horizon_states import stacked
from robot_linearization.walking.mpc import (SCREENING_ROUNDS, SOLVERS, MPCError, MPCSettings, WholeBodyMPC, _Unsolved,
                                             mpc_contact_sets, mpc_kernels)
from robot_linearization.validation import perturb
from robot_linearization.walking.ground import standing_state
from robot_linearization.walking.scenario import Push, Segment, command_at, trot, walk

from conftest import example_robot_path

MODEL = rl.load_urdf(bundled_urdf_path())


@pytest.fixture(scope="module")
def pushed_trot():
    """3.5 s: the command ramps to 0.3 m/s forward over 1 s; at 2 s the base is pushed sideways by 0.5 m/s."""
    return trot(3.5, (Segment(0.0, (0.3, 0.0, 0.0)),), (Push(2.0, (0.0, 0.5, 0.0)),))


def test_the_mpc_knows_ahead_every_contact_set_a_pushed_trot_holds():
    """mpc_contact_sets: the trot's own sets and the four three-foot sets on the way between them (one foot of
    a pair landing or lifting before the other); a walk's (one foot at a time) are its own.  Every set a knot
    of the pushed trot held (its feet landing early or late: three feet at a cycle's first knot) is among
    them, and so among the kernels built ahead (mpc_kernels: constrained and impact, none for no foot)."""
    sets = mpc_contact_sets(TROT, BUNDLED_FEET)
    assert sets[:3] == TROT.contact_sets(BUNDLED_FEET) and len(sets) == 7
    assert sorted(s for s in sets if len(s) == 3) == sorted(tuple(f for f in BUNDLED_FEET if f != foot)
                                                           for foot in BUNDLED_FEET)
    walk_gait = Gait.walk(BUNDLED_FEET, TROT.posture)
    assert mpc_contact_sets(walk_gait, BUNDLED_FEET) == walk_gait.contact_sets(BUNDLED_FEET)
    kernels = mpc_kernels(TROT, BUNDLED_FEET)
    assert [(tuple(c.frame for c in contacts), kind) for contacts, kind in kernels] == \
        [(s, kind) for s in sets for kind in ("constrained", "impact")]
    held = {}

    class Recording(WholeBodyMPC):
        def solve(self, time, state, contacts_now, held_now):
            for contacts, _ in self._knot_contacts(time, contacts_now, held_now):
                held[contacts] = held.get(contacts, 0) + 1
            return super().solve(time, state, contacts_now, held_now)

    log = trot(3.5, (Segment(0.0, (0.3, 0.0, 0.0)),), (Push(2.0, (0.0, 0.5, 0.0)),), mpc_class=Recording)
    assert log.error is None
    assert set(held) <= set(sets) and any(len(s) == 3 for s in held), held


def test_the_quadruped_trots_forward_and_stays_up(pushed_trot):
    log = pushed_trot
    assert log.error is None, log.error
    heights = np.array(log.position)[:, 2]
    assert heights.min() > 0.27 and heights.max() < 0.34  # standing at 0.306 m
    velocity, time = np.array(log.velocity), np.array(log.time)
    cruising = (time > 1.2) & (time < 2.0)
    assert abs(velocity[cruising, 0].mean() - 0.3) < 0.05
    assert np.array(log.position)[-1, 0] > 0.6  # (0.3 m/s for ≈ 2.5 s)
    assert any(len(held) == 2 for held in log.held) and any(len(held) == 4 for held in log.held)  # it trots
    # the first plan was made at rest before the start, and timed apart from the cycles
    assert set(log.first_plan) == {"linearization", "assembly", "solve"} and len(log.timings) == len(log.time)


def test_the_push_is_rejected_within_a_second(pushed_trot):
    log = pushed_trot
    time, velocity, command = np.array(log.time), np.array(log.velocity), np.array(log.command)
    after = (time >= 2.0) & (time < 2.05)
    assert velocity[after, 1].max() > 0.4  # the push arrived
    back = (time >= 3.0) & (time < 3.5)
    assert np.abs(velocity[back, :2] - command[back, :2]).max() < 0.1


def test_stance_feet_stay_on_the_ground_and_the_plans_keep_their_constraints(pushed_trot):
    log = pushed_trot
    assert not [v for v in log.violations if v.what in ("off the ground", "below the ground")]
    assert max(log.dynamics_residual) < 1e-9
    assert min(log.min_margin) > -1e-6


def test_the_reported_margin_is_the_smallest_of_the_plans_margin_rows():
    """MPCResult.min_margin is the smallest C y − lower over the QP's rows labelled "margin" (of every knot's
    forces, not the swing feet's height above the ground), each cycle of a short trot."""
    cycles = []

    class Recording(WholeBodyMPC):
        def _solve_qp(self, H, g, C, lower, torques, labels):
            solved = super()._solve_qp(H, g, C, lower, torques, labels)
            rows = [i for i, (kind, _, _) in enumerate(labels) if kind == "margin"]
            cycles.append([float((C[rows] @ solved[0] - lower[rows]).min()),
                           any(kind != "margin" for kind, _, _ in labels)])
            return solved

        def solve(self, time, state, contacts_now, held_now):
            result = super().solve(time, state, contacts_now, held_now)
            cycles[-1].append(result.min_margin)
            return result

    log = trot(0.4, (Segment(0.0, (0.3, 0.0, 0.0)),), (), mpc_class=Recording)
    assert log.error is None and len(cycles) > 30 and any(other for _, other, _ in cycles)
    for smallest, _, reported in cycles:
        assert reported == pytest.approx(smallest, rel=1e-12, abs=1e-12)


def test_the_forces_the_robot_receives_stay_in_their_cones(pushed_trot):
    """The ground pushes and does not pull, with Coulomb friction (μ = 0.7): every force a held foot
    receives, at every step, lies in its cone.  Around touchdowns and lift-offs, between the knots,
    a rigid contact would pull or need more friction by a few N: such a foot lets go or slides, and
    is reported (the plan keeps 5 N of normal force and μ = 0.6)."""
    log = pushed_trot
    assert log.forces
    for time, foot, force in log.forces:
        assert force[2] >= 0.0 and np.hypot(force[0], force[1]) <= 0.7 * force[2] * (1 + 1e-12) + 1e-12, \
            (time, foot, force)
    reported = [v for v in log.violations if v.what in ("lets go", "slides")]
    assert reported and max(v.amount for v in reported) < 10.0  # N, against ≈ 60 N per stance foot


def test_the_command_ramps():
    segments = (Segment(0.0, (0.3, 0.0, 0.0)), Segment(4.0, (0.0, 0.0, 0.5), ramp=2.0))
    np.testing.assert_allclose(command_at(segments, 0.5), [0.15, 0.0, 0.0])
    np.testing.assert_allclose(command_at(segments, 5.0), [0.15, 0.0, 0.25])
    np.testing.assert_allclose(command_at(segments, 9.0), [0.0, 0.0, 0.5])


def test_a_schedule_that_lifts_every_foot_is_refused_in_one_line():
    flight = Gait(name="flight", phases=(Phase(0.1, BUNDLED_FEET), Phase(0.2, ())), posture=TROT.posture)
    with pytest.raises(ValueError, match=r"^gait 'flight': phase 2 .* lifts every foot") as error:
        WholeBodyMPC(MODEL, flight, BUNDLED_FEET, effort_limits(bundled_urdf_path(), MODEL.joint_names))
    assert "\n" not in str(error.value)


def test_a_qp_without_solution_names_the_constraint_and_the_knot():
    """8 times its weight (960 N) under each foot: more than 30 N m at the knees can push the 12 kg robot
    into the ground."""
    state, height = standing_state(MODEL, TROT, BUNDLED_FEET)
    simulation = GroundSimulation(MODEL, TROT, state, feet=BUNDLED_FEET)
    mpc = WholeBodyMPC(MODEL, TROT, BUNDLED_FEET, effort_limits(bundled_urdf_path(), MODEL.joint_names),
                       MPCSettings(base_height=height, min_normal_load=8.0))
    with pytest.raises(MPCError, match=r"^the MPC's QP has no solution: .* at knot \d+") as error:
        mpc.solve(0.0, simulation.state, simulation.contacts_now(), simulation.held)
    assert "\n" not in str(error.value)


def test_a_first_plan_without_solution_ends_the_scenario_before_the_start_in_one_line():
    """The scenario makes the first plan at rest before the robot starts: when it has no solution, the
    log says so (which constraint, which knot) and holds no cycle and no torque."""
    log = trot(1.0, settings=MPCSettings(min_normal_load=8.0))
    assert log.error is not None and "\n" not in log.error
    assert log.error.startswith("the first plan, at rest: the MPC's QP has no solution: ") and "at knot" in log.error
    assert log.first_plan is None and not log.time and not log.torques


def test_the_urdf_effort_limits_are_read_by_joint():
    limits = effort_limits(bundled_urdf_path(), MODEL.joint_names)
    assert limits.tolist() == [20.0, 20.0, 30.0] * 4


def test_the_effort_limits_of_a_urdf_with_tags_the_dynamics_ignore_are_read_quietly(capfd):
    """solo12's URDF holds tags urdf_parser_py does not know: as quiet as load_urdf (nothing on
    stdout or stderr), and the limits those tags sit beside are still read."""
    path = example_robot_path("solo12")
    model = rl.load_urdf(path)
    capfd.readouterr()
    limits = effort_limits(path, model.joint_names)
    assert capfd.readouterr() == ("", "")
    with open(path) as f:
        text = f.read()
    for name, limit in zip(model.joint_names, limits):  # each joint's own <limit effort=…>, read here by regex
        match = re.search(rf'<joint name="{name}"[^>]*>.*?<limit[^>]*effort="([^"]+)"', text, re.DOTALL)
        assert limit == (float(match.group(1)) if match else np.inf), name


@pytest.mark.parametrize("hold", [1, 2, 3])
def test_the_condensed_cost_is_the_sum_over_the_knots_of_the_state_costs(hold):
    """H and g of the stacked least-squares rows equal Σ_k Γ_kᵀ Q_k Γ_k and Σ_k Γ_kᵀ (Q_k d_k + q_k) of
    each knot's quadratic cost ½ δzᵀ Q_k δz + q_kᵀ δz (Q_k = diag(w_k) + FᵀF on the configuration, or on
    the whole state for a sliding foot's rows, q_k = w_k r_k + Fᵀf), with Γ_k, d_k from rolling
    δz_{k+1} = A_k δz_k + B_k δτ_k + c_k forward column by column, each column a unit perturbation of one
    held torque y_m over all the knots of its group (hold 3: 20 knots end with a group of two); a block given
    with a knot per row (the swing feet's rows of all knots) counts each row at its knot."""
    rng = np.random.default_rng(32)
    mpc = WholeBodyMPC(MODEL, TROT, BUNDLED_FEET, effort_limits(bundled_urdf_path(), MODEL.joint_names),
                       MPCSettings(torque_hold=hold))
    two_N, n, K = mpc.sizes
    N = two_N // 2
    groups = -(-K // hold)
    steps = [(rng.normal(size=(two_N, two_N)) / 6, rng.normal(size=(two_N, n)), None, None) for _ in range(K)]
    defects = [rng.normal(size=two_N) for _ in range(K)]
    weights = rng.uniform(0.0, 3.0, size=(K, two_N))
    residuals = rng.normal(size=(K, two_N))
    foot_rows = [(k, rng.normal(size=(rows, width)), rng.normal(size=rows))
                 for k, rows, width in ((1, 3, N), (7, 1, N), (7, 2, two_N), (K, 3, N), (K, 4, two_N))]
    foot_rows.append((np.array([3, 3, 9, K]), rng.normal(size=(4, N)), rng.normal(size=4)))  # (a knot per row)
    Gamma, d = mpc._condense(np.array([A for A, *_ in steps]), np.array([B for _, B, *_ in steps]), np.array(defects))
    H, g = mpc._condensed_cost(Gamma, d, weights, residuals, foot_rows)
    knots, F_rows, values = foot_rows.pop()
    foot_rows += [(k, F[None], f[None]) for k, F, f in zip(knots, F_rows, values)]
    # the reference: each column of Γ is the rollout of one unit held-torque perturbation
    reference_Gamma = np.zeros((K + 1, two_N, groups * n))
    reference_d = np.zeros((K + 1, two_N))
    for k in range(K):
        reference_d[k + 1] = steps[k][0] @ reference_d[k] + defects[k]
    for column in range(groups * n):
        y = np.zeros(groups * n)
        y[column] = 1.0
        z = np.zeros(two_N)
        for k in range(K):
            m = k // hold
            z = steps[k][0] @ z + steps[k][1] @ y[m * n:(m + 1) * n]
            reference_Gamma[k + 1, :, column] = z
    np.testing.assert_allclose(Gamma, reference_Gamma, rtol=1e-10, atol=1e-10 * np.abs(Gamma).max())
    np.testing.assert_allclose(d, reference_d, rtol=1e-10, atol=1e-10 * np.abs(d).max())
    Q = np.array([np.diag(w) for w in weights])
    q = weights * residuals
    for k, F, f in foot_rows:
        width = F.shape[1]
        Q[k - 1, :width, :width] += F.T @ F
        q[k - 1, :width] += F.T @ f
    H_reference = sum(reference_Gamma[k].T @ Q[k - 1] @ reference_Gamma[k] for k in range(1, K + 1))
    g_reference = sum(reference_Gamma[k].T @ (Q[k - 1] @ d[k] + q[k - 1]) for k in range(1, K + 1))
    np.testing.assert_allclose(H, H_reference, rtol=1e-10, atol=1e-10 * np.abs(H_reference).max())
    np.testing.assert_allclose(g, g_reference, rtol=1e-10, atol=1e-10 * np.abs(g_reference).max())
    assert np.array_equal(H, H.T)  # (ProxSuite reads a symmetric H)


@pytest.mark.parametrize("hold", [1, 2, 3])
def test_the_constraint_rows_on_the_held_torques_are_the_rows_on_the_rolled_out_states(hold):
    """C y − lower of _constraints' rows equals F δz_k[:r] + T δτ_k − b evaluated on the states rolled out from
    δz_0 = 0 step by step (δz_{k+1} = A_k δz_k + B_k δτ_k + c_k, δτ_k = y_m over the knots of group m), for random
    held torques y: rows at knot 0 (no state dependence), at the last knot, on the configuration (r = N) and on
    the whole state, with and without torque Jacobians, two blocks at one knot, the knots out of order (the
    ground's rows come after the margins') and a block with a knot per row (the ground's rows of all knots).
    The plan's δz_k = Γ_k y + d_k (condensing.perturbations_into, over the columns Γ_k reaches) are those
    states."""
    rng = np.random.default_rng(33)
    mpc = WholeBodyMPC(MODEL, TROT, BUNDLED_FEET, effort_limits(bundled_urdf_path(), MODEL.joint_names),
                       MPCSettings(torque_hold=hold))
    two_N, n, K = mpc.sizes
    N = two_N // 2
    A = rng.normal(size=(K, two_N, two_N)) / 6
    B, c = rng.normal(size=(K, two_N, n)), rng.normal(size=(K, two_N))
    blocks = [(k, rng.normal(size=(rows, width)), rng.normal(size=(rows, n)) if torque else None, rng.normal(size=rows))
              for k, rows, width, torque in ((0, 5, two_N, True), (4, 5, two_N, True), (4, 2, two_N, False),
                                             (K - 1, 3, two_N, True), (3, 1, N, False), (K, 2, N, False),
                                             (1, 4, N, False))]
    blocks.append((np.array([2, 2, 6, K]), rng.normal(size=(4, N)), None, rng.normal(size=4)))  # (a knot per row)
    Gamma, d = mpc._condense(A, B, c)
    C, lower = mpc._constraints(Gamma, d, blocks)
    knots, F_rows, _, bounds = blocks.pop()
    blocks += [(k, F[None], None, b[None]) for k, F, b in zip(knots, F_rows, bounds)]
    assert C.shape == (sum(len(b) for *_, b in blocks), -(-K // hold) * n)
    for _ in range(3):
        y = rng.normal(size=C.shape[1])
        z, states = np.zeros(two_N), [np.zeros(two_N)]
        for k in range(K):
            z = A[k] @ z + B[k] @ y[(k // hold) * n:(k // hold + 1) * n] + c[k]
            states.append(z)
        expected = np.concatenate([F @ states[k][:F.shape[1]] - b + (
            0.0 if T is None else T @ y[(k // hold) * n:(k // hold + 1) * n]) for k, F, T, b in blocks])
        np.testing.assert_allclose(C @ y - lower, expected, rtol=1e-10, atol=1e-10 * np.abs(expected).max())
        dz = np.empty((K + 1, two_N))
        perturbations_into(Gamma.transpose(0, 2, 1), d, mpc._reach, y, dz)  # (the plan's δz_k: _cycle's)
        np.testing.assert_allclose(dz, np.array(states), rtol=0, atol=1e-12 * np.abs(states).max())


@pytest.mark.parametrize("contact", ["point", "6d"])
def test_the_feet_positions_and_jacobians_are_the_kinematics(contact):
    """The MPC's foot positions are frame_poses', their Jacobian (3f, N) the geometric finite
    differences of those positions along z_q = [z_H; z_s] (validation.perturb), at three tilted
    states taken in one call (each knot its own); on soles ("6d" contacts: the point's rows of a sole's
    Jacobian) too."""
    rng = np.random.default_rng(7)
    # (a sole: one foot standing, the 6 directions its leg's 3 joints and the base move; more 6d feet are redundant)
    feet = BUNDLED_FEET if contact == "point" else BUNDLED_FEET[:1]
    gait = TROT if contact == "point" else Gait.stand(feet, TROT.posture, contact="6d")
    mpc = WholeBodyMPC(MODEL, gait, feet, effort_limits(bundled_urdf_path(), MODEL.joint_names),
                       MPCSettings(sole_size=(0.1, 0.06)) if contact == "6d" else None)
    standing, _ = standing_state(MODEL, TROT, BUNDLED_FEET)
    N, f = MODEL.n_velocities, len(feet)
    states = [perturb(MODEL, standing, np.concatenate([0.3 * rng.normal(size=N), np.zeros(N)])) for _ in range(3)]
    (positions, J), soles = mpc._foot_kinematics(stacked(states))
    assert positions.shape == (3, f, 3) and J.shape == (3, 3 * f, N) and (soles is None) == (contact == "point")
    epsilon = 1e-6
    for k, state in enumerate(states):
        np.testing.assert_allclose(positions[k], frame_poses(MODEL, state, list(feet))[:, :3, 3], atol=1e-14)
        for column in range(N):
            z = np.zeros(2 * N)
            z[column] = epsilon
            ahead = frame_poses(MODEL, perturb(MODEL, state, z), list(feet))[:, :3, 3]
            behind = frame_poses(MODEL, perturb(MODEL, state, -z), list(feet))[:, :3, 3]
            np.testing.assert_allclose(J[k, :, column], ((ahead - behind) / (2 * epsilon)).ravel(), atol=1e-8)


def test_the_horizons_frame_kinematics_place_any_frame_of_a_contacts_body():
    """contact_frame_kinematics_many's positions and rotations of frames (k, 4, 4) given in the contacts'
    bodies, turned and moved arbitrarily, at three tilted states in one call: each the body's world pose
    (frame_poses' pose of the foot frame, less the foot frame's own placement in its body) times the frame."""
    from robot_linearization.algorithms.constrained_dynamics import contact_frame_kinematics_many
    from robot_linearization.contacts import as_contacts
    from robot_linearization.spatial import se3_exp

    rng = np.random.default_rng(11)
    standing, _ = standing_state(MODEL, TROT, BUNDLED_FEET)
    N = MODEL.n_velocities
    states = [perturb(MODEL, standing, np.concatenate([0.3 * rng.normal(size=N), np.zeros(N)])) for _ in range(3)]
    x = stacked(states)
    frames = np.array([se3_exp(rng.normal(size=6)) for _ in BUNDLED_FEET])
    positions, J, rotations = contact_frame_kinematics_many(MODEL, as_contacts(BUNDLED_FEET), x[0], x[1], frames)
    assert positions.shape == (3, 4, 3) and rotations.shape == (3, 4, 3, 3) and J.shape == (3, 12, N)
    in_body = np.array([np.reshape(MODEL.frames[foot][1], (4, 4)) for foot in BUNDLED_FEET])
    for k, state in enumerate(states):
        bodies = frame_poses(MODEL, state, list(BUNDLED_FEET)) @ np.linalg.inv(in_body)
        expected = bodies @ frames
        np.testing.assert_allclose(positions[k], expected[:, :3, 3], rtol=0, atol=1e-14)
        np.testing.assert_allclose(rotations[k], expected[:, :3, :3], rtol=0, atol=1e-14)


def test_the_knots_contact_sets_are_the_schedules_at_their_times_kept_per_sequence(monkeypatch):
    """_knot_contacts: knot 0 holds contacts_now after held_now, knot k ≥ 1 the feet the gait schedules at time + k
    knot_dt (Gait.phase_at, in the order of the MPC's feet) after knot k − 1's.  The same at times met again,
    whose sequence is kept, and after the kept sequences were dropped at KNOT_SEQUENCES (here 3)."""
    monkeypatch.setattr(mpc_module, "KNOT_SEQUENCES", 3)
    mpc = WholeBodyMPC(MODEL, TROT, BUNDLED_FEET, effort_limits(bundled_urdf_path(), MODEL.joint_names))
    h, K = mpc.settings.knot_dt, mpc.settings.knots
    three = BUNDLED_FEET[1:]
    for time, contacts_now, held_now in [(0.0, BUNDLED_FEET, BUNDLED_FEET), (0.07, three, BUNDLED_FEET),
                                         (0.07, three, three), (0.07, BUNDLED_FEET, three), (0.33, (), ()),
                                         (1.234, three, three), (0.07, three, BUNDLED_FEET)] * 2:
        scheduled = [tuple(f for f in BUNDLED_FEET if f in TROT.phase_at(time + k * h + 1e-9)[0].stance)
                     for k in range(1, K + 1)]
        sets = [tuple(contacts_now)] + scheduled
        expected = tuple((sets[k], tuple(held_now) if k == 0 else sets[k - 1]) for k in range(K + 1))
        assert mpc._knot_contacts(time, list(contacts_now), list(held_now)) == expected, time
        assert len(mpc._knot_sequences) <= 3
    assert len({contacts for contacts, _ in expected}) == 3  # (the last: three feet, a pair, all four)


def test_the_feet_sliding_rows_are_their_velocities_along_the_ground_as_they_land_and_lift():
    """References.landings and .lifts name, per knot, the feet whose contact closes there and those that
    lifted over the step before it, as the knots' contact sets (_knot_contacts, from the gait's schedule)
    say; their rows are each foot's velocity along the ground in the world, the geometric finite difference
    of its position along the state's own motion (validation.perturb by ε ν), weighted as the settings say,
    and their Jacobian on δz_k is that velocity's in the velocity perturbation (exact: it is linear in ν),
    nothing on the configuration."""
    rng = np.random.default_rng(11)
    mpc = WholeBodyMPC(MODEL, TROT, BUNDLED_FEET, effort_limits(bundled_urdf_path(), MODEL.joint_names),
                       MPCSettings(weights={**MPCSettings().weights, "landing_sliding": 200.0,
                                            "lifting_sliding": 700.0}))
    standing, _ = standing_state(MODEL, TROT, BUNDLED_FEET)
    N, K = MODEL.n_velocities, mpc.sizes[2]
    time = 0.07
    held = [c.frame for c in TROT.contacts_at(time)]
    ref = mpc.references(time, standing, held)
    sets = [set(contacts) for contacts, _ in mpc._knot_contacts(time, held, held)]
    for k in range(1, K + 1):
        landing = {i for i, foot in enumerate(BUNDLED_FEET) if foot in sets[k] and foot not in sets[k - 1]}
        lifted = {i for i, foot in enumerate(BUNDLED_FEET)
                  if k >= 2 and foot not in sets[k - 1] and foot in sets[k - 2]}
        assert (set(ref.landings[k]), set(ref.lifts[k])) == (landing, lifted), k
    assert any(ref.landings) and any(ref.lifts)
    states = [perturb(MODEL, standing, np.concatenate([0.2 * rng.normal(size=N), rng.normal(size=N)]))
              for _ in range(K + 1)]
    x = stacked(states)
    feet = mpc._foot_kinematics(x)[0]
    epsilon = 1e-6
    for k in range(1, K + 1):
        groups = mpc._sliding_rows(ref, x, feet, k)
        expected_groups = [(w, indices) for w, indices in ((ref.landing_sliding_weight, ref.landings[k]),
                                                           (ref.lifting_sliding_weight, ref.lifts[k])) if indices]
        assert [weight for weight, _, _ in groups] == [w for w, _ in expected_groups]
        state = states[k]
        motion = np.concatenate([state.base_twist, state.joint_velocities, np.zeros(N)])
        ahead = frame_poses(MODEL, perturb(MODEL, state, epsilon * motion), list(BUNDLED_FEET))[:, :2, 3]
        behind = frame_poses(MODEL, perturb(MODEL, state, -epsilon * motion), list(BUNDLED_FEET))[:, :2, 3]
        for j, ((_, velocities, F), (_, indices)) in enumerate(zip(groups, expected_groups)):
            np.testing.assert_allclose(velocities, ((ahead - behind) / (2 * epsilon))[list(indices)].ravel(), atol=1e-7)
            assert not F[:, :N].any()
            for column in range(N):  # a velocity perturbation δν_j changes v by its column
                dz = np.zeros(2 * N)
                dz[N + column] = 1e-3
                moved = stacked([perturb(MODEL, state, dz)] * (K + 1))
                after = [v for _, v, _ in mpc._sliding_rows(ref, moved, mpc._foot_kinematics(moved)[0], k)]
                np.testing.assert_allclose(after[j] - velocities, 1e-3 * F[:, N + column], atol=1e-12)


def test_each_knots_step_is_rl_step():
    """The MPC's next state of a knot (from the linearization's accelerations) is rl.step's, also
    through a touchdown's impact, and its A_d, B_d are rl.linearize's (with previous_contacts)."""
    rng = np.random.default_rng(7)
    mpc = WholeBodyMPC(MODEL, TROT, BUNDLED_FEET, effort_limits(bundled_urdf_path(), MODEL.joint_names))
    state, _ = standing_state(MODEL, TROT, BUNDLED_FEET)
    state = rl.State(base_pose=state.base_pose, joint_positions=state.joint_positions + 0.05 * rng.normal(size=12),
                     base_twist=0.1 * rng.normal(size=6), joint_velocities=0.3 * rng.normal(size=12))
    torques = rng.normal(size=12)
    pair, four = BUNDLED_FEET[0::3], tuple(BUNDLED_FEET)
    x = tuple(np.array([a]) for a in (state.base_pose, state.joint_positions, state.base_twist,
                                      state.joint_velocities))  # (the knots' stacked arrays: one knot)
    for contacts, previous in ((pair, pair), (four, pair), ((), ())):
        A_d, B_d, _, following = mpc._steps(x, torques[None], ((contacts, previous),))
        A_d, B_d = A_d[0], B_d[0]
        following = rl.State(**dict(zip(("base_pose", "joint_positions", "base_twist", "joint_velocities"),
                                        (a[0] for a in following))))
        reference = rl.step(MODEL, state, torques, mpc.settings.knot_dt, contacts=list(contacts),
                            previous_contacts=list(previous) if contacts != previous else None)
        np.testing.assert_allclose(rl.state_difference(MODEL, reference, following), 0.0, atol=1e-12)
        lin = rl.linearize(MODEL, state, torques, contacts=list(contacts) or None, dt=mpc.settings.knot_dt,
                           previous_contacts=list(previous) if contacts != previous else None)
        np.testing.assert_allclose(A_d, lin.A_d, rtol=0, atol=1e-13 * np.abs(lin.A_d).max())
        np.testing.assert_allclose(B_d, lin.B_d, rtol=0, atol=1e-13 * np.abs(lin.B_d).max())


def _generated_on(mpc, feet, impact: bool):
    """The MPC's contact set ``feet`` run by its generated kernels (its impact map's too with ``impact``): the
    tests' default is the generic kernel (conftest.py)."""
    held = mpc._held(tuple(feet))
    held.linearizer = rl.Linearizer(mpc.model, contacts=list(held.contacts), dt=mpc.settings.knot_dt,
                                    kernel="generated")
    if impact:
        held.impacts = rl.ImpactMap(mpc.model, list(held.contacts), kernel="generated")
    assert held.linearizer.kernel == "generated" and (not impact or held.impacts.kernel == "generated")


def test_the_knots_in_one_compiled_call_are_rl_step_rl_linearize_and_rl_contact_margins(monkeypatch):
    """Where every knot's kernels are generated, the MPC linearizes its knots in one compiled call
    (walking/knots.py), never knot by knot: each knot's next state is rl.step's, its A_d, B_d rl.linearize's (a
    touchdown's through its impact, with previous_contacts; a knot in flight, the free one's) and its margin
    rows rl.contact_margins' of that linearization, with their lower bounds and labels, row after row; the
    generic kernels are the reference.
    A knot whose set still runs the generic kernel makes the whole horizon go knot by knot, to the same
    values."""
    rng = np.random.default_rng(11)
    mpc = WholeBodyMPC(MODEL, TROT, BUNDLED_FEET, effort_limits(bundled_urdf_path(), MODEL.joint_names))
    four, pair = tuple(BUNDLED_FEET), BUNDLED_FEET[0::3]
    _generated_on(mpc, four, impact=True)
    _generated_on(mpc, (), impact=False)
    standing, _ = standing_state(MODEL, TROT, BUNDLED_FEET)
    states = [rl.State(base_pose=standing.base_pose, joint_positions=standing.joint_positions
                       + 0.05 * rng.normal(size=12), base_twist=0.1 * rng.normal(size=6),
                       joint_velocities=0.3 * rng.normal(size=12)) for _ in range(4)]
    torques = rng.normal(size=(4, 12))
    knots = ((four, four), (four, pair), ((), four), (four, four))  # (a touchdown, then in flight)
    x = stacked(states)

    def knot_by_knot(*args):
        raise AssertionError("linearized knot by knot")

    with monkeypatch.context() as patch:
        patch.setattr(mpc, "_linearize", knot_by_knot)
        A_d, B_d, (row_knots, F, T, bounds, labels, margins), following = mpc._steps(x, torques, knots)
    h = mpc.settings.knot_dt
    floor = mpc._held(four).floor
    for k, (state, (contacts, previous)) in enumerate(zip(states, knots)):
        previous = list(previous) if previous != contacts and contacts else None
        reference = rl.step(MODEL, state, torques[k], h, contacts=list(contacts), previous_contacts=previous)
        got = rl.State(**dict(zip(("base_pose", "joint_positions", "base_twist", "joint_velocities"),
                                  (a[k] for a in following))))
        np.testing.assert_allclose(rl.state_difference(MODEL, reference, got), 0.0, atol=1e-12)
        lin = rl.linearize(MODEL, state, torques[k], contacts=list(contacts) or None, dt=h,
                           previous_contacts=previous, kernel="generic")
        np.testing.assert_allclose(A_d[k], lin.A_d, rtol=0, atol=1e-13 * np.abs(lin.A_d).max())
        np.testing.assert_allclose(B_d[k], lin.B_d, rtol=0, atol=1e-13 * np.abs(lin.B_d).max())
        if not contacts:
            assert not (row_knots == k).any()
            continue
        expected = rl.contact_margins(MODEL, lin, friction=mpc.settings.friction, facets=4)
        mine = row_knots == k
        assert [label for label, row in zip(labels, mine) if row] == [("margin", k, label) for label in expected.labels]
        for got, value in ((margins[mine], expected.margins), (F[mine], expected.state_jacobian),
                           (T[mine], expected.input_jacobian), (bounds[mine], floor - expected.margins)):
            np.testing.assert_allclose(got, value, rtol=0, atol=1e-12 * np.abs(value).max())
    assert list(row_knots) == sorted(row_knots) and len(row_knots) == 3 * len(expected.labels)
    # the same knots again: the compiled call's inputs as kept (no kernel looked up), the same arrays bit for bit;
    # other knots of the same number (no touchdown, none in flight) their own
    with monkeypatch.context() as patch:
        patch.setattr(mpc, "_linearize", knot_by_knot)
        patch.setattr(mpc._knot_kernels, "addresses", knot_by_knot)
        again = mpc._steps(x, torques, knots)
    for got, first in zip(again[:2] + again[2][:4] + (again[2][5],) + again[3],
                          (A_d, B_d, row_knots, F, T, bounds, margins) + following):
        np.testing.assert_array_equal(got, first)
    assert again[2][4] == labels
    standing_knots = mpc._steps(x, torques, ((four, four),) * 4)
    lin = rl.linearize(MODEL, states[1], torques[1], contacts=list(four), dt=h, kernel="generic")
    np.testing.assert_allclose(standing_knots[0][1], lin.A_d, rtol=0, atol=1e-13 * np.abs(lin.A_d).max())
    assert len(standing_knots[2][4]) == 4 * len(expected.labels)
    # with room for one kept sequence: the kept ones dropped before another is kept, the arrays the same
    monkeypatch.setattr(mpc_module, "KNOT_SEQUENCES", 1)
    assert len(mpc._compiled_knots) == 2
    three = mpc._steps(tuple(a[:3] for a in x), torques[:3], ((four, four),) * 3)
    assert list(mpc._compiled_knots) == [((four, four),) * 3]
    np.testing.assert_array_equal(three[0], standing_knots[0][:3])
    # a knot on a set still generic (the pair): every knot by the generic path, the same values
    knot_by_knot_steps = mpc._steps(tuple(a[:3] for a in x), torques[:3], knots[:2] + ((pair, four),))
    np.testing.assert_allclose(knot_by_knot_steps[0][:2], A_d[:2], rtol=0, atol=1e-13 * np.abs(A_d).max())
    np.testing.assert_array_equal(knot_by_knot_steps[2][0][:2 * len(expected.labels)],
                                  row_knots[:2 * len(expected.labels)])


@pytest.mark.parametrize("bad", [0, 2])
def test_where_a_generated_kernel_has_no_result_the_knots_go_one_by_one_from_the_states_given(bad):
    """A knot the generated kernel refuses (a joint velocity NaN at the first knot, or at the last of three,
    after a touchdown whose impact the compiled call already applied): the knots are linearized one by one from the
    states as given (the touchdown's velocities not taken twice), and the generic kernel's one-line error names
    the bad value, as knot by knot; the caller's arrays are untouched."""
    rng = np.random.default_rng(12)
    mpc = WholeBodyMPC(MODEL, TROT, BUNDLED_FEET, effort_limits(bundled_urdf_path(), MODEL.joint_names))
    four, pair = tuple(BUNDLED_FEET), BUNDLED_FEET[0::3]
    _generated_on(mpc, four, impact=True)
    standing, _ = standing_state(MODEL, TROT, BUNDLED_FEET)
    x = stacked([rl.State(base_pose=standing.base_pose, joint_positions=standing.joint_positions,
                           base_twist=0.1 * rng.normal(size=6), joint_velocities=0.3 * rng.normal(size=12))
                  for _ in range(3)])
    x[3][bad, 4] = np.nan
    given = tuple(a.copy() for a in x)
    knots, torques = ((four, four), (four, pair), (four, four)), rng.normal(size=(3, 12))
    linearized = []
    one_by_one = mpc._linearize

    def knot(x_k, k, *args):
        linearized.append((k, x_k[2][k].copy(), x_k[3][k].copy()))
        return one_by_one(x_k, k, *args)

    compiled = []
    steps_into = mpc._knot_kernels.steps_into
    mpc._knot_kernels.steps_into = lambda *args: compiled.append(steps_into(*args)) or compiled[-1]
    mpc._linearize = knot
    with pytest.raises(ValueError, match="joint_velocities contains NaN") as error:
        mpc._steps(x, torques, knots)
    assert "\n" not in str(error.value)
    assert compiled == [None] and [k for k, *_ in linearized] == list(range(bad + 1))
    if bad == 2:
        np.testing.assert_array_equal(linearized[1][1], given[2][1])  # (the pre-impact twist: the impact taken once)
    for a, b in zip(x, given):
        np.testing.assert_array_equal(a, b)


def test_a_push_that_cannot_be_rejected_ends_with_a_one_line_report_and_no_nan_torque():
    """3 m/s sideways, standing: the MPC's QP loses its solution within a few cycles and says which
    constraint at which knot; every torque the robot got was finite.  Each cycle without a plan says so
    within the plan's iteration limit (mpc.PLAN_ITERATIONS, 20 outer × 20 inner: ProxSuite counts one more
    per outer iteration), DAQP's on the same QP (mpc.PLAN_CHANGES, 500) and the least violation's
    (mpc.LEAST_VIOLATION_CHANGES, 1000): where ProxSuite solved that too, it took 30 000 more, seconds a
    cycle.  A cycle after one without a plan tries the least violation first: it says there is none in that
    one solve (≤ 1000), where it spent ProxSuite's and DAQP's iterations on the hard QP first."""
    log = trot(1.5, (Segment(0.0, (0.0, 0.0, 0.0)),), (Push(0.5, (0.0, 3.0, 0.0)),))
    assert log.error is not None and "\n" not in log.error
    assert log.error.startswith("t = ") and ("at knot" in log.error or "fell" in log.error), log.error
    assert all(np.isfinite(torques).all() for torques in log.torques)
    spent = [int(re.search(r"\((\d+) iterations; also with", why).group(1)) for _, why in log.fallbacks]
    assert len(spent) >= 5 and max(spent) <= 20 * (20 + 1) + 500 + 1000, log.fallbacks
    again = [count for count, (_, why) in zip(spent, log.fallbacks)
             if why.startswith("no plan keeps the constraints, as in the cycle before (")]
    assert len(again) >= 4 and max(again) <= 1000, log.fallbacks


def test_settings_that_cannot_work_are_refused_in_one_line():
    limits = effort_limits(bundled_urdf_path(), MODEL.joint_names)
    for settings, name in ((MPCSettings(solver="cvxopt"), "solver"), (MPCSettings(blas_threads=0), "blas_threads"),
                           (MPCSettings(blas_threads=1.5), "blas_threads"),
                           (MPCSettings(blas_threads=True), "blas_threads")):
        with pytest.raises(ValueError, match=f"^{name}: ") as error:
            WholeBodyMPC(MODEL, TROT, BUNDLED_FEET, limits, settings)
        assert "\n" not in str(error.value)


def test_a_cycle_holds_numpys_blas_to_its_threads_and_gives_the_setting_back():
    """The cycle's products run on blas_threads (1: the controller's core), whatever the process set,
    and the process's own setting is back after the cycle; None leaves it alone."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    seen = []

    class Watched(WholeBodyMPC):
        def _solve_qp(self, *arguments):
            seen.append({pool["num_threads"] for pool in threadpoolctl.threadpool_info()
                         if pool["user_api"] == "blas"})
            return super()._solve_qp(*arguments)

    state, height = standing_state(MODEL, TROT, BUNDLED_FEET)
    simulation = GroundSimulation(MODEL, TROT, state, feet=BUNDLED_FEET)
    limits = effort_limits(bundled_urdf_path(), MODEL.joint_names)
    def blas_threads():
        return {pool["num_threads"] for pool in threadpoolctl.threadpool_info() if pool["user_api"] == "blas"}

    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        outer = blas_threads()
        if outer != {2}:
            pytest.skip(f"numpy's BLAS runs {outer} threads here, not the 2 this test sets")
        for threads, expected in ((1, {1}), (None, {2})):
            mpc = Watched(MODEL, TROT, BUNDLED_FEET, limits, MPCSettings(base_height=height, blas_threads=threads))
            mpc.solve(0.0, simulation.state, simulation.contacts_now(), simulation.held)
            assert seen.pop() == expected
            assert blas_threads() == {2}


def test_a_command_that_is_not_a_finite_number_is_refused_in_one_line():
    mpc = WholeBodyMPC(MODEL, TROT, BUNDLED_FEET, effort_limits(bundled_urdf_path(), MODEL.joint_names))
    for arguments, name in (((float("nan"),), "forward"), ((0.3, "left"), "lateral"), ((0.0, 0.0, np.inf), "yaw_rate")):
        with pytest.raises(ValueError, match=f"^{name}: ") as error:
            mpc.command(*arguments)
        assert "\n" not in str(error.value)
    mpc.command(0.3, 0.0, 0.5)
    assert mpc.velocity.tolist() == [0.3, 0.0, 0.5]


def test_every_solver_plans_the_same_torques():
    """One cycle from the same standing state with ProxSuite, DAQP and OSQP (MPCSettings.solver): the
    same QP, solved to 1e-9 by each, gives the same first torque to within 1e-4 of its size."""
    state, height = standing_state(MODEL, TROT, BUNDLED_FEET)
    simulation = GroundSimulation(MODEL, TROT, state, feet=BUNDLED_FEET)
    torques = {}
    for solver in SOLVERS:
        mpc = WholeBodyMPC(MODEL, TROT, BUNDLED_FEET, effort_limits(bundled_urdf_path(), MODEL.joint_names),
                           MPCSettings(base_height=height, solver=solver))
        mpc.command(0.3)
        torques[solver] = mpc.solve(0.0, simulation.state, simulation.contacts_now(), simulation.held).torques
    scale = np.abs(torques["proxsuite"]).max()
    assert scale > 1.0  # the robot's weight is carried
    for solver in SOLVERS[1:]:
        np.testing.assert_allclose(torques[solver], torques["proxsuite"], atol=1e-4 * scale, err_msg=solver)


def _screened_calls(mpc) -> list:
    """The rows of C each QP the MPC's solver is handed has (their lower bounds), recorded as it runs."""
    calls = []
    solver_on = mpc._solver_on

    def recorded(H, g, C, lower, box_lower, box_upper):
        calls.append(lower.copy())
        return solver_on(H, g, C, lower, box_lower, box_upper)

    mpc._solver_on = recorded
    return calls


@pytest.mark.parametrize("solver", ["proxsuite", "daqp"])
def test_a_plans_qp_is_solved_on_the_rows_its_point_does_not_keep_then_on_those_its_solution_breaks(solver,
                                                                                                       monkeypatch):
    """min ½‖y − c‖² in a wide box with rows C y ≥ b, screened (the threshold here at their number): the first QP the
    solver is handed has the rows y = 0 does not keep strictly (b ≥ 0); the rows its solution breaks are added;
    the result is the whole QP's (worked out by hand, and DAQP on every row).  Rows that keep breaking: after
    mpc.SCREENING_ROUNDS QPs, the whole QP.  A first QP with no solution is the answer: no QP on every row is
    tried.  With fewer than mpc.SCREENING_ROWS_PER_UNKNOWN rows per unknown, the whole QP at once."""
    mpc, _ = _planner(solver)
    size = len(mpc._starts) * MODEL.n_joints
    H, box = np.eye(size), (np.full(size, -100.0), np.full(size, 100.0))
    c = np.zeros(size)
    c[:3] = 0.0, -2.0, 0.3
    C = np.zeros((5, size))
    C[[0, 1, 2, 3], [0, 1, 2, 3]] = 1.0
    C[4, :3] = 1.0
    lower = np.array([0.5, -1.0, -1.0, 0.0, -5.0])  # (y₀ ≥ 0.5 broken at 0, y₃ ≥ 0 at its bound, the rest kept)
    calls = _screened_calls(mpc)
    y, solved, _ = mpc._run_solver(H, -c, C, lower, *box)
    assert solved and [list(rows) for rows in calls] == [list(lower)]  # (5 rows, 120 unknowns: whole at once)
    monkeypatch.setattr("robot_linearization.walking.mpc.SCREENING_ROWS_PER_UNKNOWN", len(lower) / size)
    calls.clear()
    y, solved, _ = mpc._run_solver(H, -c, C, lower, *box)  # (as many rows per unknown as the threshold: screened)
    expected = c.copy()
    expected[:2] = 0.5, -1.0  # (y₀ onto its bound; y₁ = −2 of the first QP breaks y₁ ≥ −1, added; y₂ free)
    assert solved
    np.testing.assert_allclose(y, expected, rtol=0, atol=1e-7)
    np.testing.assert_allclose(y, WholeBodyMPC._daqp(H, -c, C, lower, *box)[0], rtol=0, atol=1e-7)
    assert [list(rows) for rows in calls] == [[0.5, 0.0], [0.5, -1.0, 0.0]]
    monkeypatch.setattr("robot_linearization.walking.mpc.SCREENING_ROWS_PER_UNKNOWN", 0)
    # a chain: y₁ ≥ y₀ − 0.2 breaks once y₀ is held, then y₂ ≥ y₁ − 0.1: the whole QP after the rounds
    c[:3] = 0.0, -2.0, -2.0
    C = np.zeros((4, size))
    C[0, 0], C[1, :2], C[2, 1:3], C[3, 5] = 1.0, (-1.0, 1.0), (-1.0, 1.0), 1.0
    lower = np.array([0.5, -0.2, -0.1, -5.0])
    calls.clear()
    y, solved, _ = mpc._run_solver(H, -c, C, lower, *box)
    assert solved and SCREENING_ROUNDS == 2
    assert [len(rows) for rows in calls] == [1, 2, 4]
    np.testing.assert_allclose(y, WholeBodyMPC._daqp(H, -c, C, lower, *box)[0], rtol=0, atol=1e-7)
    np.testing.assert_allclose(y[:3], [0.5, 0.3, 0.2], rtol=0, atol=1e-7)
    # y₂ ≥ −1 + δ screened out, the first QP's y₂ = −1 breaking it by δ: within SCREENED_VIOLATION it stands, beyond
    # it the row is added; a bound that is not a number is handed to the solver in the first QP
    c = np.zeros(size)
    c[2] = -1.0
    C = np.zeros((3, size))
    C[0, 0], C[1, 2], C[2, 3] = 1.0, 1.0, 1.0
    for violation, handed in ((0.5, [[0.5]]), (2.0, [[0.5], [0.5, -1.0 + 2.0 * mpc_module.SCREENED_VIOLATION]])):
        calls.clear()
        lower = np.array([0.5, -1.0 + violation * mpc_module.SCREENED_VIOLATION, -5.0])
        y, solved, _ = mpc._run_solver(H, -c, C, lower, *box)
        assert solved and [list(rows) for rows in calls] == handed
        np.testing.assert_allclose(y[2], max(-1.0, lower[1]) if violation > 1.0 else -1.0, rtol=0, atol=1e-12)
    calls.clear()
    mpc._run_solver(H, -c, C, np.array([0.5, np.nan, -5.0]), *box)
    assert np.isnan(calls[0][1]) and len(calls[0]) == 2
    # y₀ ≥ 5 and y₀ ≤ −3, both broken at 0: no solution, said by the first QP
    C = np.zeros((3, size))
    C[0, 0], C[1, 0], C[2, 1] = 1.0, -1.0, 1.0
    calls.clear()
    y, solved, _ = mpc._run_solver(H, -c, C, np.array([5.0, 3.0, -1.0]), *box)
    assert not solved and [list(rows) for rows in calls] == [[5.0, 3.0]]


def _trot_qps(seconds: float) -> tuple:
    """(the Log, [(the solver's arguments (H, g, C, lower, box_lower, box_upper), its (y, solved, iterations))] of
    each QP) of ``seconds`` of the bundled robot's trot forward at 0.3 m/s, the first plan's QP first."""
    qps = []

    class Recorded(WholeBodyMPC):
        def _run_solver(self, *arguments, **options):
            found = super()._run_solver(*arguments, **options)
            qps.append((arguments, found))
            return found

    log = walk(MODEL, BUNDLED_FEET, TROT, effort_limits(bundled_urdf_path(), MODEL.joint_names), seconds,
               (Segment(0.0, (0.3, 0.0, 0.0)),), (), mpc_class=Recorded)
    return log, qps


def test_daqp_solves_every_qp_of_a_trot_as_proxsuite_does():
    """Each QP of 1 s of the trot (forward at 0.3 m/s, ProxSuite's plans), solved again by DAQP: the same
    held torques y to 1e-6 of their size (both solve to 1e-9; the QPs are strictly convex), as many
    constraints active (to 1e-5 of the bounds' size: at the first plan, from rest, ProxSuite leaves rows
    DAQP holds exactly active 2e-6 to 3e-5 inside), and no failure."""
    log, qps = _trot_qps(1.0)
    assert log.error is None and len(qps) == len(log.time) + 1  # (one QP a cycle, and the first plan's)
    for (H, g, C, lower, box_lower, box_upper), (y, solved, _) in qps:
        assert solved
        x, found, iterations = WholeBodyMPC._daqp(H, g, C, lower, box_lower, box_upper)
        assert found and iterations > 0
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-6 * np.abs(y).max())
        active = (C @ y - lower < 1e-5 * np.abs(lower).max()).sum()
        assert active == (C @ x - lower < 1e-5 * np.abs(lower).max()).sum()


def test_a_qp_with_large_terms_is_solved_where_its_rounding_floor_lies_above_the_absolute_tolerance():
    """After a hard landing (the bundled quadruped on MuJoCo, planning every 5 ms) the cost's gradient
    reaches 10⁷: the dual residual's rounding floor, ≈ 10⁻⁸, lies above the absolute tolerance of 10⁻⁹, and
    ProxSuite, stopping on that alone, never stopped (the previous plan took over, cycle after cycle, and
    the robot fell).  The QPs of 0.3 s of the trot, their cost multiplied by 10⁴ (the same minimizer):
    each is solved, to its unscaled plan within 10⁻⁶ of its size (with the relative tolerance at 0, every
    one fails)."""
    log, qps = _trot_qps(0.3)
    assert log.error is None and len(qps) == 31
    mpc, _ = _planner()
    for (H, g, C, lower, box_lower, box_upper), (y, solved, _) in qps:
        assert solved
        x, found, _ = mpc._proxsuite(1e4 * H, 1e4 * g, C, lower, box_lower, box_upper)
        assert found
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-6 * np.abs(y).max())


@pytest.mark.parametrize("settings, name, nearest", [
    ("MPCSettings", "swing_height", "swing_lift"), ("MPCSettings", "horizon_knots", "knots"),
    ("PipelineConfig", "max_age", "max_input_age"), ("PipelineConfig", "use_efforts", "use_effort")])
def test_a_setting_that_does_not_exist_is_refused_in_one_line_naming_the_nearest(settings, name, nearest):
    """(swing_height: MPCSettings' name before 0.6.0, which nothing reads since.)"""
    from robot_linearization.ros.pipeline import PipelineConfig

    made = {"MPCSettings": MPCSettings, "PipelineConfig": PipelineConfig}[settings]()
    with pytest.raises(AttributeError, match=rf"^{settings} has no setting '{name}': the nearest is '{nearest}'$"):
        setattr(made, name, 1.0)
    assert not hasattr(made, name)
    setattr(made, nearest, getattr(made, nearest))  # (a setting is set as before)


def _planner(solver="proxsuite"):
    state, height = standing_state(MODEL, TROT, BUNDLED_FEET)
    simulation = GroundSimulation(MODEL, TROT, state, feet=BUNDLED_FEET)
    mpc = WholeBodyMPC(MODEL, TROT, BUNDLED_FEET, effort_limits(bundled_urdf_path(), MODEL.joint_names),
                       MPCSettings(base_height=height, solver=solver))
    return mpc, simulation


@pytest.mark.parametrize("solver", ["proxsuite", "daqp"])
def test_constraints_no_plan_can_keep_at_the_first_knots_are_violated_as_little_as_possible(solver):
    """Rows of knot 0 that contradict each other (y₀ ≥ 5 and y₀ ≤ 3, as a measured state past a margin
    makes them): the plan takes the least violation (σ = 1, y₀ = 4, to the 1 % of room), says how much and
    where; the same contradiction at a knot the state cannot have broken is no plan at all."""
    mpc, _ = _planner(solver)
    n = MODEL.n_joints
    size = len(mpc._starts) * n
    H, g = np.eye(size), np.zeros(size)
    C = np.zeros((3, size))
    C[0, 0], C[1, 0], C[2, 1] = 1.0, -1.0, 1.0
    lower = np.array([5.0, -3.0, -1.0])
    torques = np.zeros((mpc.sizes[2], n))
    labels = [("margin", 0, "a:unilateral"), ("margin", 0, "a:friction_0"), ("margin", 4, "b:unilateral")]
    y, _, slack, softened = mpc._solve_qp(H, g, C, lower, torques, labels)
    assert slack == pytest.approx(1.0, rel=1e-6) and softened == "margin a:unilateral at knot 0"
    assert y[0] == pytest.approx(4.0, abs=0.011) and np.abs(y[1:]).max() < 1e-6  # (the rest: the cost's)
    feasible, _, no_slack, none = mpc._solve_qp(H, g, C[2:], lower[2:], torques, labels[2:])
    assert no_slack == 0.0 and none is None and np.abs(feasible).max() < 1e-6
    # (which of the two contradicting rows the failed solve breaks most is the solver's: ProxSuite's halfway, DAQP's
    # on one of them)
    with pytest.raises(_Unsolved, match=r"^margin a:(unilateral|friction_0) at knot 5 violated by [12] \(\d+ "
                                        r"iterations; none of the first 3 knots' to make soft\)$"):
        mpc._solve_qp(H, g, C[:2], lower[:2], torques, [(kind, 5, what) for kind, _, what in labels[:2]])


@pytest.mark.parametrize("solver", ["proxsuite", "daqp"])
def test_after_a_cycle_whose_qp_had_no_solution_the_least_violation_comes_first(solver):
    """The cycle after one whose QP had no solution solves the least violation first, so that a run of such
    cycles does not spend the plan's solver's iterations on QPs without one: the same plan as a planner that
    tries the hard QP first, in fewer iterations; where the least violation needs no slack, the hard QP's own
    plan, and the cycle after that tries the hard QP first again."""
    n = MODEL.n_joints
    before, _ = _planner(solver)
    size = len(before._starts) * n
    H, g = np.eye(size), np.zeros(size)
    C = np.zeros((2, size))
    C[0, 0], C[1, 0] = 1.0, -1.0
    lower = np.array([5.0, -3.0])  # (y₀ ≥ 5 and y₀ ≤ 3: rows of knot 0 that contradict each other)
    torques = np.zeros((before.sizes[2], n))
    labels = [("margin", 0, "a:unilateral"), ("margin", 0, "a:friction_0")]
    y, iterations, slack, softened = before._solve_qp(H, g, C, lower, torques, labels)
    assert slack > 0.5 and softened is not None
    again, fewer, same_slack, same_rows = before._solve_qp(H, g, C, lower, torques, labels)
    np.testing.assert_allclose(again, y, rtol=0, atol=1e-9)
    assert same_slack == pytest.approx(slack, rel=1e-12) and same_rows == softened and fewer < iterations
    feasible = (H, g, C[:1], lower[:1], torques, labels[:1])  # (y₀ ≥ 5 alone)
    expected, hard_iterations, _, _ = _planner(solver)[0]._solve_qp(*feasible)
    found, _, no_slack, none = before._solve_qp(*feasible)
    assert no_slack == 0.0 and none is None
    np.testing.assert_allclose(found, expected, rtol=0, atol=1e-9)
    assert before._solve_qp(*feasible)[1] == hard_iterations  # (the hard QP first again)


@pytest.mark.parametrize("solver", ["proxsuite", "daqp"])
def test_after_a_cycle_without_a_solution_a_least_violation_within_1e9_is_no_violation(solver):
    """After a cycle whose QP had no solution, the least violation comes first, and one of at most 10⁻⁹ (the
    solvers' own tolerance) counts as none: rows y₀ ≥ 3 + a and y₀ ≤ 3 of knot 0, which share a slack σ (a/2
    at the least violation), give the hard QP's plan (no slack) at σ = 8·10⁻¹⁰, and a soft plan with a
    slack of σ (to the least violation's regularization), naming the row, at σ = 2·10⁻⁹."""
    n = MODEL.n_joints
    mpc, _ = _planner(solver)
    size = len(mpc._starts) * n
    H, g, torques = np.eye(size), np.zeros(size), np.zeros((mpc.sizes[2], n))
    C = np.zeros((2, size))
    C[0, 0], C[1, 0] = 1.0, -1.0
    labels = [("margin", 0, "a:unilateral"), ("margin", 0, "a:friction_0")]
    for a, soft in ((1.6e-9, False), (4e-9, True)):
        assert mpc._solve_qp(H, g, C, np.array([5.0, -3.0]), torques, labels)[3] is not None  # (no solution)
        y, _, slack, softened = mpc._solve_qp(H, g, C, np.array([3.0 + a, -3.0]), torques, labels)
        assert y[0] == pytest.approx(3.0, abs=1e-6)
        if soft:
            assert slack == pytest.approx(a / 2, rel=0.1) and softened == "margin a:unilateral at knot 0"
        else:
            assert slack == 0.0 and softened is None


def test_the_walks_plans_use_no_slack_and_the_previous_plan_takes_over_where_the_solver_fails(pushed_trot,
                                                                                               monkeypatch):
    """Where the hard QP has a solution (every cycle of the pushed trot) it is the plan: no slack. A solver
    that fails after the first plan: each cycle gives the previous plan's torques, shifted to its time, and
    says why; one that fails at the first plan has nothing to fall back on: MPCError."""
    assert pushed_trot.slack and max(pushed_trot.slack) == 0.0 and not pushed_trot.fallbacks
    mpc, simulation = _planner()
    first = mpc.solve(0.0, simulation.state, simulation.contacts_now(), simulation.held)
    assert first.fallback is None and first.slack == 0.0
    failing = lambda H, g, C, lower, *box, **options: (np.full(len(g), np.nan), False, 100)  # noqa: E731
    monkeypatch.setattr(mpc, "_run_solver", failing)
    simulation.step(first.torques)
    shifted = mpc._shifted_plan(0.002, simulation.state)[1]
    result = mpc.solve(0.002, simulation.state, simulation.contacts_now(), simulation.held)
    assert result.fallback is not None and result.fallback.startswith("the solver did not converge")
    np.testing.assert_array_equal(result.torques, shifted[0])
    np.testing.assert_array_equal(result.torques, first.torques_plan[0])  # (2 ms into a 15 ms knot)
    fresh, simulation = _planner()
    monkeypatch.setattr(fresh, "_run_solver", failing)
    monkeypatch.setattr(fresh, "_daqp", failing)  # (the least violation's solver)
    with pytest.raises(MPCError, match=r"^the MPC's QP has no solution: the solver did not converge \(200 "
                                       r"iterations; also with the first 3 knots' constraints soft\)$"):
        fresh.solve(0.0, simulation.state, simulation.contacts_now(), simulation.held)


@pytest.mark.parametrize("solver", ["proxsuite", "osqp"])
def test_where_the_solver_does_not_converge_daqp_solves_the_same_qp(solver, monkeypatch):
    """A QP the plan's solver does not settle within its limits (Talos's as a sole lands in a turn, a Hessian of
    condition 10¹⁰: ProxSuite's primal residual stayed at 10⁻⁵) goes to DAQP's active set before any
    constraint is made soft or the previous plan takes over.  The solver made to fail: the first plan is
    DAQP's, ProxSuite's own to 10⁻⁶ of its size, with no slack and no fallback, its iterations counted."""
    mpc, simulation = _planner()
    expected = mpc.solve(0.0, simulation.state, simulation.contacts_now(), simulation.held)
    failing, simulation = _planner(solver)
    monkeypatch.setattr(failing, f"_{solver}", lambda H, g, *rest, **options: (np.full(len(g), np.nan), False, 1050))
    result = failing.solve(0.0, simulation.state, simulation.contacts_now(), simulation.held)
    assert result.fallback is None and result.slack == 0.0 and result.iterations > 1050
    scale = np.abs(expected.torques).max()
    np.testing.assert_allclose(result.torques, expected.torques, rtol=0, atol=1e-6 * scale)


@pytest.mark.parametrize("period, dt", [(0.005, 0.001), (0.004, 0.002)])
def test_the_trot_plans_every_cycle_at_a_control_period_shorter_than_a_knot(period, dt):
    """Planning every 5 (or 4) ms, the bundled quadruped's first knot at 10 % of a swing can come one knot after
    its lift-off, whose step leaves the foot at rest on the ground: there it cannot be above the ground yet
    (the rows had no solution from the second cycle on; the cycles fell back on the previous plan and the
    trot fell at 0.57 s).  1.2 s forward: every cycle has its plan, every constraint hard."""
    log = trot(1.2, (Segment(0.0, (0.3, 0.0, 0.0)),), (), control_period=period, dt=dt)
    assert log.error is None and not log.fallbacks and max(log.slack) == 0.0, (log.error, log.fallbacks[:1])
    assert len(log.time) == round(1.2 / period)


def test_a_walk_planned_by_daqp_repeats_bit_for_bit():
    """The same 1.5 s of the bundled robot's trot, twice in one process (its arrays elsewhere in memory): with DAQP
    every torque is the same to the last bit — the knots' kernels, the condensing and the references repeat
    exactly.  ProxSuite's solutions vary in their last bits from solve to solve of the same QP (docs/mpc.md,
    "Solver"); with it the same two walks part."""
    limits = effort_limits(bundled_urdf_path(), MODEL.joint_names)
    settings = MPCSettings(base_height=standing_state(MODEL, TROT, BUNDLED_FEET)[1], solver="daqp")
    first, again = (walk(MODEL, BUNDLED_FEET, TROT, limits, 1.5, (Segment(0.0, (0.3, 0.0, 0.2)),), (),
                         settings=settings) for _ in range(2))
    assert first.error is None and again.error is None
    np.testing.assert_array_equal(np.array(first.torques), np.array(again.torques))
