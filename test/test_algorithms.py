"""Recursive algorithms checked against each other and against Pinocchio."""

import numpy as np
import pytest

import robot_linearization as rl
from robot_linearization.robots import thesis_test_system
from robot_linearization.validation import perturb

from conftest import PinocchioOracle, example_robot_path, load_example, random_state, random_tree


def _models(rng):
    return [thesis_test_system(), random_tree(rng, 12), random_tree(rng, 8, floating_base=False),
            load_example("solo12")]


def test_inverse_mass_matrix_matches_inverted_crba_on_branched_trees(rng):
    for model in _models(rng) + [load_example("talos")]:
        for _ in range(3):
            s = random_state(model, rng).joint_positions
            M_inv = rl.inverse_mass_matrix(model, s)
            reference = np.linalg.inv(rl.mass_matrix(model, s))
            assert np.abs(M_inv - reference).max() <= 1e-10 * np.abs(reference).max(), model.name
            np.testing.assert_allclose(M_inv, M_inv.T, atol=1e-12 * np.abs(M_inv).max())


def test_forward_dynamics_agrees_with_crba_and_rnea(rng):
    """ABA(mb) ν̇ solves M ν̇ + h = Sτ, with M from the CRBA(mb) and h from the RNEA(mb)."""
    for model in _models(rng):
        state = random_state(model, rng)
        torques = rng.normal(size=model.n_joints)
        base_acc, joint_acc = rl.forward_dynamics(model, state, torques)
        M = rl.mass_matrix(model, state.joint_positions)
        if model.floating_base:
            # h = ID̄(state, 0, 0): the extended inverse dynamics at zero acceleration
            h = np.concatenate(rl.extended_inverse_dynamics(model, state, np.zeros(6), np.zeros(model.n_joints)))
            nu_dot = np.concatenate([base_acc, joint_acc])
            rhs = np.concatenate([np.zeros(6), torques])
        else:
            h, _ = rl.inverse_dynamics(model, state, np.zeros(model.n_joints))
            nu_dot, rhs = joint_acc, torques
        np.testing.assert_allclose(M @ nu_dot + h, rhs, atol=1e-9 * max(1.0, np.abs(h).max()))


def test_rnea_moving_base_returns_consistent_base_acceleration(rng):
    """RNEAmb's v̇ makes the EIDAmb's base wrench vanish (Definition 3.1), and
    feeding its τ to the ABAmb returns the requested joint accelerations."""
    for model in [thesis_test_system(), random_tree(rng, 10)]:
        state = random_state(model, rng)
        joint_acc = rng.normal(size=model.n_joints)
        torques, base_acc = rl.inverse_dynamics(model, state, joint_acc)
        base_wrench, torques_eid = rl.extended_inverse_dynamics(model, state, base_acc, joint_acc)
        assert np.abs(base_wrench).max() < 1e-9 * np.abs(torques).max()
        np.testing.assert_allclose(torques_eid, torques, rtol=1e-10, atol=1e-9)
        base_acc_fd, joint_acc_fd = rl.forward_dynamics(model, state, torques)
        np.testing.assert_allclose(joint_acc_fd, joint_acc, atol=1e-8)
        np.testing.assert_allclose(base_acc_fd, base_acc, atol=1e-8)


def test_extended_inverse_dynamics_derivatives_match_geometric_finite_differences(rng):
    """Each block of Tables 4.2–4.5 (with the body twist held fixed for H) against
    central differences of the EIDAmb along H·exp(δ), s + δ, v + δ, r + δ."""
    model = thesis_test_system()
    state = random_state(model, rng)
    base_acc, joint_acc = rng.normal(size=6), rng.normal(size=model.n_joints)
    D = rl.extended_inverse_dynamics_derivatives(model, state, base_acc, joint_acc).stacked()
    h = 1e-6
    numeric = np.empty_like(D)
    for j in range(D.shape[1]):
        z = np.zeros(D.shape[1])
        z[j] = h
        plus = np.concatenate(rl.extended_inverse_dynamics(model, perturb(model, state, z), base_acc, joint_acc))
        minus = np.concatenate(rl.extended_inverse_dynamics(model, perturb(model, state, -z), base_acc, joint_acc))
        numeric[:, j] = (plus - minus) / (2 * h)
    assert np.abs(D - numeric).max() <= 1e-7 * np.abs(numeric).max()
    # with the body twist as state, H enters only through gravity: no translation column
    assert np.all(D[:, :3] == 0.0)


def test_base_frame_sweep_equals_the_body_frame_sweep_of_tables_4_2_to_4_5(rng):
    """The fast sweep (every column in the base frame) against the literal one, all four
    blocks, floating and fixed base; the thesis system's inertias are general symmetric
    6×6 matrices, not rigid-body ones, and its joints helical and prismatic too."""
    for model in _models(rng) + [load_example("talos"), load_example("ur5")]:
        for _ in range(2):
            state = random_state(model, rng)
            base_acc = rng.normal(size=6) if model.floating_base else None
            joint_acc = rng.normal(size=model.n_joints)
            fast = rl.extended_inverse_dynamics_derivatives(model, state, base_acc, joint_acc).stacked()
            literal = rl.extended_inverse_dynamics_derivatives(model, state, base_acc, joint_acc,
                                                               frame="body").stacked()
            assert np.abs(fast - literal).max() <= 1e-12 * np.abs(literal).max(), model.name
    with pytest.raises(ValueError, match="frame: expected one of"):
        rl.extended_inverse_dynamics_derivatives(model, state, base_acc, joint_acc, frame="world")


def test_both_inertia_placements_equal_the_congruence_and_each_model_gets_its_own(rng):
    """Y = Ad⁻ᵀ I Ad⁻¹ (Ad = spatial.velocity_transform of the body's pose in the base frame) by
    the rigid-body placement and the general one, against the matrix product; the workspace
    takes the first for a URDF robot (lumped bodies too), the second for the thesis system's raw
    Table D.3 inertias."""
    from robot_linearization.algorithms.base_frame_derivatives import _place_inertia, _place_rigid_inertia
    from robot_linearization.spatial import is_rigid_body_inertia, se3_exp, spatial_inertia, velocity_transform
    from robot_linearization.workspace import MODEL_ARRAYS, model_arrays
    raw = thesis_test_system().inertias[0]
    for _ in range(5):
        half = rng.normal(size=(3, 3))
        rigid = spatial_inertia(rng.uniform(0.1, 5.0), rng.normal(size=3), half @ half.T)
        H = se3_exp(rng.normal(size=6) * 2.0)
        inverse = np.linalg.inv(velocity_transform(H))
        for inertia, placements in ((rigid, (_place_rigid_inertia, _place_inertia)), (raw, (_place_inertia,))):
            expected = inverse.T @ inertia @ inverse
            for place in placements:
                Y = np.empty((6, 6))
                getattr(place, "py_func", place)(inertia, H[:3, :3], H[:3, 3], Y, np.empty((6, 6)))
                assert np.abs(Y - expected).max() <= 1e-14 * np.abs(expected).max(), place
    assert is_rigid_body_inertia(rigid) and not is_rigid_body_inertia(raw)
    rigid = {model.name: dict(zip(MODEL_ARRAYS.field_dict, model_arrays(model)))["rigid_inertias"]
             for model in (load_example("talos"), thesis_test_system())}
    assert rigid == {"talos": True, "thesis_test_system": False}


def test_a_rigid_bodys_inertia_rate_in_closed_form_equals_the_general_one(rng):
    """Ẏ = v ×̄* Y − Y v× + B(h) of a rigid body placed in the base frame: the closed form
    [[0, −2h_l^], [0, S]] against the general 6×6 products, and its left half zero."""
    from robot_linearization.algorithms.base_frame_derivatives import (_add_inertia_rate, _add_rigid_inertia_rate,
                                                                       _place_rigid_inertia)
    from robot_linearization.spatial import se3_exp, spatial_inertia

    for _ in range(5):
        half = rng.normal(size=(3, 3))
        inertia = spatial_inertia(rng.uniform(0.1, 5.0), rng.normal(size=3), half @ half.T)
        H = se3_exp(rng.normal(size=6) * 2.0)
        Y = np.empty((6, 6))
        getattr(_place_rigid_inertia, "py_func", _place_rigid_inertia)(inertia, H[:3, :3], H[:3, 3], Y,
                                                                       np.empty((6, 6)))
        v = rng.normal(size=6)
        general, closed = np.zeros((6, 6)), np.zeros((6, 6))
        getattr(_add_inertia_rate, "py_func", _add_inertia_rate)(Y, v, Y @ v, general, np.empty(6))
        getattr(_add_rigid_inertia_rate, "py_func", _add_rigid_inertia_rate)(Y, v, Y @ v, closed)
        assert np.abs(closed - general).max() <= 1e-14 * np.abs(general).max()
        assert np.abs(general[:, :3]).max() <= 1e-14 * np.abs(general).max() and not closed[:, :3].any()


def _tree_pattern(model, N):
    """Where a row of the EIDAmb derivatives can be non-zero, from the tree alone: a base row
    everywhere; a joint's row in the base's columns, its ancestors', its own and its subtree's
    (both halves, z_q and z_v)."""
    off = 6 if model.floating_base else 0
    mask = np.zeros((N, N), dtype=bool)
    mask[:off] = True
    for row in range(off, N):
        body = row - off + 1
        mask[row, :off] = True
        mask[row, off + model.ancestors[body, :model.depth[body]]] = True
        mask[row, row:off + model.subtree_end[body]] = True
    return np.hstack([mask, mask])



def test_inverse_mass_matrix_product_solves_with_the_crba(rng):
    """inverse_mass_matrix_product_into (M⁻¹ rhs by the IMMAmb's passes, without M⁻¹) equals
    numpy's solve with the CRBA's M, on branched trees (helical joints too), a fixed base, solo12
    and a 100-joint chain, for widths below N, of N, of a block and a remainder, and of 2N."""
    from robot_linearization.algorithms.inverse_mass_matrix import inverse_mass_matrix_product_into
    from robot_linearization.workspace import workspace

    for model in _models(rng) + [random_tree(rng, 100, branched=False)]:
        N = model.n_velocities
        s = random_state(model, rng).joint_positions
        rl.inverse_mass_matrix(model, s)  # (leaves this thread's workspace at s, as the kernels' IMMAmb does)
        M = rl.mass_matrix(model, s)
        for width in (3, N, N + 5, 2 * N):
            rhs = rng.normal(size=(N, 2 * N))
            out = rng.normal(size=(N, width))
            expected = out - 0.5 * np.linalg.solve(M, rhs[:, :width])
            inverse_mass_matrix_product_into(workspace(model).model, workspace(model).data, rhs, -0.5, out)
            assert np.abs(out - expected).max() <= 1e-9 * np.abs(expected).max(), (model.name, width)


def test_a_long_chain_linearizes_by_the_articulated_products(rng):
    """A chain of 100 joints takes −M⁻¹D (and, with a contact, M⁻¹∂R) by the IMMAmb's passes
    (workspace.ARTICULATED_PRODUCTS): A, B, M⁻¹, λ and ∂λ validate against finite differences
    and inv(CRBA)."""
    from robot_linearization.workspace import ARTICULATED_PRODUCTS, derivative_products

    model = random_tree(rng, 100, branched=False)
    assert derivative_products(model) == ARTICULATED_PRODUCTS
    state = random_state(model, rng, scale=0.3)
    torques = rng.normal(size=model.n_joints)
    for contacts in (None, [rl.Contact(model.body_names[-1], "6d")]):
        report = rl.validate(model, rl.linearize(model, state, torques, contacts=contacts))
        assert report.passed(1e-6), report.summary()



def test_a_long_chains_results_by_either_product_agree(monkeypatch):
    """The same 100-joint chain's A, A_d, λ's Jacobian and touchdown impact map, with −M⁻¹D and
    M⁻¹∂R by the IMMAmb's passes and (its workspace made with the choice forced) by the dense
    product: equal to the rounding of a chain whose M⁻¹ spans many decades."""
    import robot_linearization.workspace as workspace_module

    results = []
    for products in (workspace_module.ARTICULATED_PRODUCTS, workspace_module.DENSE_PRODUCTS):
        monkeypatch.setattr(workspace_module, "derivative_products", lambda model, products=products: products)
        rng = np.random.default_rng(3)
        model = random_tree(rng, 100, branched=False)  # (a new model: a new workspace, made with the choice)
        state, torques = random_state(model, rng, scale=0.3), rng.normal(size=model.n_joints)
        contacts = [rl.Contact(model.body_names[-1], "6d")]
        free = rl.linearize(model, state, torques, dt=1e-3)
        held = rl.linearize(model, state, torques, contacts=contacts, dt=1e-3, previous_contacts=[])
        results.append((free.A, free.A_d, held.A, held.A_d, held.contact_forces_state_jacobian, held.impact.A))
    for ours, dense in zip(*results):
        assert np.abs(ours - dense).max() <= 1e-10 * np.abs(dense).max()


def test_tree_product_equals_the_dense_product_on_the_sweeps_derivatives(rng):
    """tree_multiply_add_into (the −M⁻¹D of A and the M⁻¹∂R of the contact path) skips the
    entries a joint's row of D cannot have on a large branched tree: the sweep's D is zero
    outside that pattern (checked here from the tree alone, on branched robots and random
    trees), and the product equals the dense one, for w = 2N and w = N (the impact map's),
    both where it goes dense and where it goes sparse (the 120-joint tree)."""
    from robot_linearization.algorithms.constrained_dynamics import tree_multiply_add_into
    from robot_linearization.workspace import ARTICULATED_PRODUCTS, derivative_products, workspace

    for model in _models(rng) + [load_example("talos_full"), load_example("ur5"), random_tree(rng, 120)]:
        N = model.n_velocities
        assert derivative_products(model) != ARTICULATED_PRODUCTS  # (M here is not M⁻¹: that way has its tests)
        for _ in range(2):
            state = random_state(model, rng)
            base_acc = rng.normal(size=6) if model.floating_base else None
            D = rl.extended_inverse_dynamics_derivatives(model, state, base_acc, rng.normal(size=model.n_joints))
            D = np.ascontiguousarray(D.stacked())
            assert not D[~_tree_pattern(model, N)].any(), model.name
            M = rng.normal(size=(N, N))
            M = M + M.T  # (symmetric, as M⁻¹)
            for width in (2 * N, N):
                out = rng.normal(size=(N, width))
                expected = out + 0.5 * M @ D[:, :width]
                tree_multiply_add_into(workspace(model).model, workspace(model).data, M, D, 0.5, out)
                assert np.abs(out - expected).max() <= 1e-13 * np.abs(expected).max(), (model.name, width)


def test_dense_product_equals_numpy_for_every_remainder(rng):
    """multiply_add_into (out += sign · A B[:, :w]) sweeps four rows of out per four rows of B: a
    number of rows that is not a multiple of 4 (the rest one by one), a depth that is not a multiple
    of 4, a transposed A (the KKT elimination's (J M⁻¹)ᵀ) and w narrower than B each take their own
    branch; numpy's product is the reference."""
    from robot_linearization.algorithms.constrained_dynamics import multiply_add_into

    for p in (1, 2, 3, 4, 5, 6, 7, 8, 9, 18):
        for q in (1, 2, 3, 4, 5, 7, 12):
            for transposed in (False, True):
                A = rng.normal(size=(q, p)).T if transposed else rng.normal(size=(p, q))
                B = rng.normal(size=(q, 11))
                out = rng.normal(size=(p, 9))
                expected = out - 0.5 * A @ B[:, :9]
                multiply_add_into(A, B, -0.5, out)
                assert np.abs(out - expected).max() <= 1e-13 * np.abs(expected).max(), (p, q, transposed)


def test_fixed_base_inverse_dynamics_derivatives_match_finite_differences(rng):
    model = load_example("ur5")
    state = random_state(model, rng)
    joint_acc = rng.normal(size=model.n_joints)
    D = rl.extended_inverse_dynamics_derivatives(model, state, None, joint_acc).stacked()
    h, n = 1e-6, model.n_joints
    for j in range(2 * n):
        z = np.zeros(2 * n)
        z[j] = h
        plus, _ = rl.inverse_dynamics(model, perturb(model, state, z), joint_acc)
        minus, _ = rl.inverse_dynamics(model, perturb(model, state, -z), joint_acc)
        np.testing.assert_allclose(D[:, j], (plus - minus) / (2 * h), atol=1e-6)


@pytest.mark.parametrize("name", ["solo12", "talos", "panda"])
def test_forward_dynamics_and_mass_matrix_match_pinocchio(rng, name):
    model = load_example(name)
    oracle = PinocchioOracle(example_robot_path(name), model)
    pin = oracle.pin
    for _ in range(3):
        state = random_state(model, rng)
        torques = rng.normal(size=model.n_joints)
        _, _, M_inv_pin, ddq_pin = oracle.linearization(state, torques)
        base_acc, joint_acc = rl.forward_dynamics(model, state, torques)
        ours = joint_acc if base_acc is None else np.concatenate([base_acc, joint_acc])
        np.testing.assert_allclose(ours, ddq_pin, atol=1e-9 * np.abs(ddq_pin).max())
        M_pin = pin.crba(oracle.pmodel, oracle.data, oracle.configuration(state))
        M_pin = (np.triu(M_pin) + np.triu(M_pin, 1).T)[np.ix_(oracle.perm, oracle.perm)]
        np.testing.assert_allclose(rl.mass_matrix(model, state.joint_positions), M_pin,
                                   atol=1e-10 * np.abs(M_pin).max())
