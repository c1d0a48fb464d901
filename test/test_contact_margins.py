"""Friction-cone, unilateral and centre-of-pressure margins of the contact forces
(robot_linearization/contact_margins.py, docs/contact_margins.md): their Jacobians
against geometric finite differences of margins recomputed from the constrained
forward dynamics, their values and Jacobians against Crocoddyl's
ResidualModelContactFrictionCone / ResidualModelContactCoPPosition, a standing
quadruped and a standing talos whose margins are positive and turn negative when a
torque makes a foot pull or tip, and the one-line errors of wrong arguments."""

import numpy as np
import pytest

import robot_linearization as rl
from robot_linearization.algorithms.constrained_dynamics import bias_motion, contact_kinematics
from robot_linearization.algorithms.kinematics import body_transforms
from robot_linearization.contact_margins import MarginEvaluator, contact_margins
from robot_linearization.spatial import se3_exp
from robot_linearization.validation import _extrapolated, perturb

from conftest import PinocchioOracle, example_robot_path, load_example, random_state

SOLO_FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
TALOS_SOLES = ("left_sole_link", "right_sole_link")
SOLE = (0.2, 0.1)  # talos's sole, about: 20 cm along x, 10 cm along y
TILTED = (0.15, -0.25, 1.0)

CASES = {  # name: (robot, contacts, margin options)
    "solo12 world_aligned, 4-facet inner pyramid": (
        "solo12", [rl.Contact(f) for f in SOLO_FEET], dict(friction=0.7, facets=4)),
    "solo12 local, exact cone, tilted ground": (
        "solo12", [rl.Contact(f, reference="local") for f in SOLO_FEET], dict(friction=0.6, normal=TILTED)),
    "solo12 mixed references, 8-facet outer pyramid, tilted ground": (
        "solo12", [rl.Contact("FL_FOOT"), rl.Contact("HR_FOOT", reference="local"), rl.Contact("FR_FOOT")],
        dict(friction=0.8, normal=TILTED, facets=8, inner=False)),
    "talos 2×6d world_aligned, exact cone": (
        "talos", [rl.Contact(f, "6d") for f in TALOS_SOLES], dict(friction=0.7, sole_size=SOLE)),
    "talos 2×6d local, 6-facet pyramid": (
        "talos", [rl.Contact(f, "6d", "local") for f in TALOS_SOLES], dict(friction=0.5, facets=6, sole_size=SOLE)),
    "talos 6d local + point world_aligned": (
        "talos", [rl.Contact("left_sole_link", "6d", "local"), rl.Contact("right_sole_link")],
        dict(friction=0.9, normal=TILTED, sole_size={"left_sole_link": (0.22, 0.12)})),
}


class ReferenceMargins:
    """The margins at any (state, τ) from nothing of contact_margins: λ from
    rl.constrained_forward_dynamics, each frame's rotation from Pinocchio's
    framesForwardKinematics, the pyramid's, the CoP's and the yaw moment's rows from Crocoddyl's
    FrictionCone.A, CoPSupport.A and WrenchCone.A (margin = −A f), the exact cone as μ n·f − ‖f − (n·f) n‖."""

    def __init__(self, robot, model, contacts, options):
        import crocoddyl

        self.oracle = PinocchioOracle(example_robot_path(robot), model)
        self.model, self.contacts = model, contacts
        self.mu, self.facets = options["friction"], options.get("facets")
        normal = np.asarray(options.get("normal", (0.0, 0.0, 1.0)), dtype=float)
        self.normal = normal / np.linalg.norm(normal)
        self.cone_axes = cone_rotation(self.normal)
        inner = options.get("inner", True)
        self.pyramid = {}  # −A[:k], the facets' margins: of a force in the world, of a sole's in its axes
        if self.facets:
            for where, R in (("ground", self.cone_axes), ("sole", np.eye(3))):
                self.pyramid[where] = -crocoddyl.FrictionCone(R, self.mu, self.facets, inner).A[:self.facets]
        sizes = options.get("sole_size")
        self.cop = {}
        for c in contacts:
            if c.kind == "6d":
                size = sizes[c.frame] if isinstance(sizes, dict) else sizes
                A = crocoddyl.CoPSupport(np.eye(3), np.array(size)).A  # rows: y+, y-, x-, x+
                self.cop[c.frame] = -A[[3, 2, 0, 1]]  # our order: x+, x-, y+, y-
                # the moment about the normal: the wrench cone's last 8 rows, in its order (with the exact
                # cone, μ itself: an outer "pyramid" of any facets)
                wrench_cone = crocoddyl.WrenchCone(np.eye(3), self.mu, np.array(size), self.facets or 4,
                                                   inner if self.facets else False)
                self.cop[c.frame] = np.vstack([self.cop[c.frame], -wrench_cone.A[-8:]])

    def rotations(self, state):
        pin, pm = self.oracle.pin, self.oracle.pmodel
        data = pm.createData()
        pin.framesForwardKinematics(pm, data, self.oracle.configuration(state))
        return [data.oMf[pm.getFrameId(c.frame)].rotation.copy() for c in self.contacts]

    def __call__(self, state, tau):
        _, forces = rl.constrained_forward_dynamics(self.model, state, tau, self.contacts)
        out, start = [], 0
        for contact, R in zip(self.contacts, self.rotations(state)):
            force = forces[start:start + contact.dimension]
            start += contact.dimension
            if contact.kind == "point":
                world = R @ force if contact.reference == "local" else force
                out.append(self._friction(world, self.normal, "ground"))
                out.append([self.normal @ world])
            else:
                local = force if contact.reference == "local" else np.concatenate([R.T @ force[:3], R.T @ force[3:]])
                out.append(self._friction(local[:3], np.array([0.0, 0.0, 1.0]), "sole"))
                out.append([local[2]])
                out.append(self.cop[contact.frame] @ local)
        return np.concatenate(out)

    def _friction(self, force, normal, where):
        if self.facets:
            return self.pyramid[where] @ force
        f_n = normal @ force
        return [self.mu * f_n - np.linalg.norm(force - f_n * normal)]


def cone_rotation(n):
    """R with R e_z = n, the shortest arc, by Pinocchio's Quaternion.FromTwoVectors."""
    import pinocchio as pin

    return pin.Quaternion.FromTwoVectors(np.array([0.0, 0.0, 1.0]), n).toRotationMatrix()


def finite_differences(reference, model, state, tau):
    """(∂margin/∂z (p, 2N), ∂margin/∂τ (p, n)), Ridders-extrapolated central differences
    along state·exp(±h e_j) and τ ± h e_j."""
    N2, n = 2 * model.n_velocities, model.n_joints

    def along_z(h):
        return np.column_stack([(reference(perturb(model, state, h * e), tau)
                                 - reference(perturb(model, state, -h * e), tau)) / (2 * h) for e in np.eye(N2)])

    def along_tau(h):
        return np.column_stack([(reference(state, tau + h * e) - reference(state, tau - h * e)) / (2 * h)
                                for e in np.eye(n)])

    return _extrapolated(along_z, 1e-2)[0], _extrapolated(along_tau, max(1.0, np.abs(tau).max()) * 1e-2)[0]


def relative(ours, theirs):
    return np.abs(ours - theirs).max() / np.abs(theirs).max()


def _case(name, rng):
    robot, contacts, options = CASES[name]
    model = load_example(robot)
    return robot, model, contacts, options, random_state(model, rng), rng.normal(scale=5.0, size=model.n_joints)


@pytest.mark.parametrize("name", list(CASES))
def test_margins_and_their_jacobians_match_finite_differences_of_the_constrained_dynamics(name, rng):
    robot, model, contacts, options, state, tau = _case(name, rng)
    lin = rl.linearize(model, state, tau, contacts=contacts)
    margins = contact_margins(model, lin, **options)
    reference = ReferenceMargins(robot, model, contacts, options)
    p = len(margins.labels)
    assert margins.margins.shape == (p,) and margins.state_jacobian.shape == (p, 2 * model.n_velocities)
    assert margins.input_jacobian.shape == (p, model.n_joints)
    assert relative(margins.margins, reference(state, tau)) < 1e-9
    d_state, d_tau = finite_differences(reference, model, state, tau)
    assert relative(margins.state_jacobian, d_state) < 1e-6, relative(margins.state_jacobian, d_state)
    assert relative(margins.input_jacobian, d_tau) < 1e-6, relative(margins.input_jacobian, d_tau)


def test_the_labels_name_each_margin_contact_by_contact():
    model = load_example("talos")
    contacts = [rl.Contact("left_sole_link", "6d"), rl.Contact("right_sole_link")]
    lin = rl.linearize(model, random_state(model, np.random.default_rng(1)), contacts=contacts)
    labels = contact_margins(model, lin, friction=0.5, facets=4, sole_size=SOLE).labels
    assert labels == ("left_sole_link:friction_0", "left_sole_link:friction_1", "left_sole_link:friction_2",
                      "left_sole_link:friction_3", "left_sole_link:unilateral", "left_sole_link:cop_x+",
                      "left_sole_link:cop_x-", "left_sole_link:cop_y+", "left_sole_link:cop_y-",
                      *(f"left_sole_link:yaw{side}_{i}" for side in "-+" for i in range(4)),
                      "right_sole_link:friction_0", "right_sole_link:friction_1", "right_sole_link:friction_2",
                      "right_sole_link:friction_3", "right_sole_link:unilateral")
    exact = contact_margins(model, lin, friction=0.5, sole_size=SOLE).labels
    assert exact[0] == "left_sole_link:friction" and exact[-2:] == ("right_sole_link:friction",
                                                                      "right_sole_link:unilateral")


# Crocoddyl: the same λ and ∂λ (DifferentialActionModelContactFwdDynamics, zero Baumgarte gains, no damping)
# with its friction-cone and CoP residuals as costs.  Its cone is fixed in the contact's reference axes, so
# its Jacobians are ours where those axes are the cone's: world-aligned point contacts (R = R_n) and local
# soles (R = I); for local points and world-aligned soles its values are ours with R taken at this state.
CROCODDYL_CASES = {  # name: (robot, contacts, options, whether the Jacobians are comparable)
    "solo12 world_aligned, 4 facets inner, tilted ground": (
        "solo12", [rl.Contact(f) for f in SOLO_FEET], dict(friction=0.7, facets=4, normal=TILTED), True),
    "solo12 world_aligned, 8 facets outer": (
        "solo12", [rl.Contact(f) for f in SOLO_FEET], dict(friction=0.6, facets=8, inner=False), True),
    "solo12 local, 4 facets (values)": (
        "solo12", [rl.Contact(f, reference="local") for f in SOLO_FEET], dict(friction=0.7, facets=4), False),
    "talos 2×6d local, 4 facets + CoP": (
        "talos", [rl.Contact(f, "6d", "local") for f in TALOS_SOLES], dict(friction=0.7, facets=4, sole_size=SOLE),
        True),
    "talos 2×6d world_aligned, 6 facets + CoP (values)": (
        "talos", [rl.Contact(f, "6d") for f in TALOS_SOLES], dict(friction=0.7, facets=6, sole_size=SOLE), False),
}


@pytest.mark.parametrize("name", list(CROCODDYL_CASES))
def test_margins_equal_crocoddyls_friction_cone_cop_and_wrench_cone_residuals(name, rng):
    import crocoddyl
    import pinocchio as pin

    robot, contacts, options, jacobians = CROCODDYL_CASES[name]
    model = load_example(robot)
    state, tau = random_state(model, rng), rng.normal(scale=5.0, size=model.n_joints)
    lin = rl.linearize(model, state, tau, contacts=contacts)
    ours = contact_margins(model, lin, **options)
    oracle = PinocchioOracle(example_robot_path(robot), model)
    pm, P, nv = oracle.pmodel, oracle.perm, oracle.pmodel.nv
    rotations = ReferenceMargins(robot, model, contacts, options).rotations(state)
    multibody = crocoddyl.StateMultibody(pm)
    actuation = crocoddyl.ActuationModelFloatingBase(multibody)
    nu = actuation.nu
    crocoddyl_contacts = crocoddyl.ContactModelMultiple(multibody, nu)
    costs = crocoddyl.CostModelSum(multibody, nu)
    k, inner = options["facets"], options.get("inner", True)
    normal = np.asarray(options.get("normal", (0.0, 0.0, 1.0)), dtype=float)
    for contact, R_c in zip(contacts, rotations):
        frame = pm.getFrameId(contact.frame)
        reference = pin.LOCAL_WORLD_ALIGNED if contact.reference == "world_aligned" else pin.LOCAL
        if contact.kind == "point":
            crocoddyl_contacts.addContact(contact.frame, crocoddyl.ContactModel3D(
                multibody, frame, np.zeros(3), reference, nu, np.zeros(2)))
            R = cone_rotation(normal / np.linalg.norm(normal))  # the cone in the world ...
            if contact.reference == "local":
                R = R_c.T @ R  # ... seen from the foot's axes at this state
        else:
            crocoddyl_contacts.addContact(contact.frame, crocoddyl.ContactModel6D(
                multibody, frame, pin.SE3.Identity(), reference, nu, np.zeros(2)))
            R = np.eye(3) if contact.reference == "local" else R_c  # the sole's axes
            costs.addCost(contact.frame + ":cop", crocoddyl.CostModelResidual(
                multibody, crocoddyl.ResidualModelContactCoPPosition(
                    multibody, frame, crocoddyl.CoPSupport(R, np.array(options["sole_size"])), nu)), 1.0)
            costs.addCost(contact.frame + ":wrench", crocoddyl.CostModelResidual(
                multibody, crocoddyl.ResidualModelContactWrenchCone(multibody, frame, crocoddyl.WrenchCone(
                    R, options["friction"], np.array(options["sole_size"]), k, inner), nu)), 1.0)
        costs.addCost(contact.frame + ":cone", crocoddyl.CostModelResidual(
            multibody, crocoddyl.ResidualModelContactFrictionCone(
                multibody, frame, crocoddyl.FrictionCone(R, options["friction"], k, inner), nu)), 1.0)
    dynamics = crocoddyl.DifferentialActionModelContactFwdDynamics(multibody, actuation, crocoddyl_contacts, costs,
                                                                   0.0, True)
    data = dynamics.createData()
    v = np.zeros(nv)
    v[P] = np.r_[state.base_twist, state.joint_velocities]
    u = np.zeros(nu)
    u[P[6:] - 6] = tau
    x = np.r_[oracle.configuration(state), v]
    dynamics.calc(data, x, u)
    dynamics.calcDiff(data, x, u)
    values, d_state, d_tau = [], [], []
    columns = np.r_[P, nv + P]
    for contact in contacts:
        cone = data.costs.costs[contact.frame + ":cone"].residual
        rows = [(-cone.r[:k], -cone.Rx[:k], -cone.Ru[:k]), (cone.r[k:], cone.Rx[k:], cone.Ru[k:])]  # facets, f_n
        if contact.kind == "6d":
            cop = data.costs.costs[contact.frame + ":cop"].residual
            order = [3, 2, 0, 1]  # Crocoddyl's y+, y-, x-, x+ → our x+, x-, y+, y-
            rows.append((-cop.r[order], -cop.Rx[order], -cop.Ru[order]))
            wrench = data.costs.costs[contact.frame + ":wrench"].residual  # its last 8 rows: the yaw moment's
            rows.append((-wrench.r[-8:], -wrench.Rx[-8:], -wrench.Ru[-8:]))
        for r, Rx, Ru in rows:
            values.append(r)
            d_state.append(Rx[:, columns])
            d_tau.append(Ru[:, P[6:] - 6])
    values, d_state, d_tau = np.concatenate(values), np.vstack(d_state), np.vstack(d_tau)
    assert relative(ours.margins, values) < 1e-9, relative(ours.margins, values)
    if jacobians:
        assert relative(ours.state_jacobian, d_state) < 1e-9, relative(ours.state_jacobian, d_state)
        assert relative(ours.input_jacobian, d_tau) < 1e-9, relative(ours.input_jacobian, d_tau)
    else:  # the cone turns with the contact frame in Crocoddyl, not here: only the τ columns agree
        assert relative(ours.input_jacobian, d_tau) < 1e-9, relative(ours.input_jacobian, d_tau)
        assert relative(ours.state_jacobian, d_state) > 1e-6


def standing(model, contacts, state):
    """τ holding ``state`` still on ``contacts``: the gravity torques minus the contacts' share of
    the least-squares support (ν̇ = 0 then, docs/contacts.md)."""
    base_wrench, joint_torques = rl.extended_inverse_dynamics(model, state, np.zeros(6), np.zeros(model.n_joints))
    X_up = body_transforms(model, state.joint_positions)
    J, _ = contact_kinematics(model, state, contacts, X_up, *bias_motion(model, state, X_up))
    support = np.linalg.lstsq(J[:, :6].T, base_wrench, rcond=None)[0]
    return joint_torques - J[:, 6:].T @ support


def test_a_standing_quadrupeds_margins_are_positive_and_a_knee_torque_makes_its_foot_pull():
    model = rl.load_urdf(rl.robots.bundled_urdf_path())
    feet = [rl.Contact(f) for f in rl.robots.BUNDLED_FEET]
    state = rl.State(base_pose=se3_exp(np.array([0.3, -0.2, 0.35, 0.0, 0.0, 0.7])),
                     joint_positions=np.tile([0.1, 0.8, -1.5], 4), base_twist=np.zeros(6),
                     joint_velocities=np.zeros(12))
    tau = standing(model, feet, state)
    lin = rl.linearize(model, state, tau, contacts=feet)
    assert np.abs(lin.joint_accelerations).max() < 1e-9
    for options in (dict(friction=0.6), dict(friction=0.6, facets=4), dict(friction=0.6, facets=8, inner=False)):
        margins = contact_margins(model, lin, **options)
        assert margins.violated() == () and margins.margins.min() > 1.0, margins
    # a torque folding the front left knee (towards more negative angles) lifts that foot: held down by the
    # rigid contact, the foot now pulls on the ground; the other feet keep pushing
    knee = model.joint_names.index("front_left_knee")
    kicked = tau.copy()
    kicked[knee] -= 20.0
    lifting = contact_margins(model, rl.linearize(model, state, kicked, contacts=feet), friction=0.6)
    assert lifting.violated() == ("front_left_foot:friction", "front_left_foot:unilateral"), lifting
    # and the linearized margin predicts it: margin + ∂margin/∂τ δτ, exact as λ is affine in τ
    before = contact_margins(model, lin, friction=0.6)
    row = before.labels.index("front_left_foot:unilateral")
    assert before.margins[row] + before.input_jacobian[row, knee] * -20.0 == pytest.approx(lifting.margins[row],
                                                                                          rel=1e-9)


def test_a_standing_talos_keeps_its_cop_inside_the_soles_until_an_ankle_torque_tips_it_or_a_hip_twists_it():
    model = load_example("talos")
    soles = [rl.Contact(f, "6d") for f in TALOS_SOLES]
    state = rl.State(base_pose=se3_exp(np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.4])),
                     joint_positions=np.zeros(model.n_joints), base_twist=np.zeros(6),
                     joint_velocities=np.zeros(model.n_joints))
    tau = standing(model, soles, state)
    lin = rl.linearize(model, state, tau, contacts=soles)
    assert np.abs(lin.joint_accelerations).max() < 1e-9
    margins = contact_margins(model, lin, friction=0.7, facets=4, sole_size=SOLE)
    assert margins.violated() == () and margins.margins.min() > 1.0, margins
    # the left ankle's pitch, driven hard, rolls the left foot onto its toes or heel: the CoP leaves the sole
    ankle = model.joint_names.index("leg_left_5_joint")
    for sign, edge in ((1.0, "cop_x"), (-1.0, "cop_x")):
        tipped = tau.copy()
        tipped[ankle] += sign * 150.0
        violated = contact_margins(model, rl.linearize(model, state, tipped, contacts=soles), friction=0.7, facets=4,
                                   sole_size=SOLE).violated()
        assert any(v.startswith("left_sole_link:" + edge) for v in violated), (sign, violated)
        assert not any(v.startswith("right_sole_link") for v in violated), (sign, violated)
    # the left hip's yaw, driven hard, twists the left sole on the ground: a moment about its normal that
    # friction at its corners cannot give, one side for each sign of the torque
    hip = model.joint_names.index("leg_left_1_joint")
    sides = []
    for sign in (1.0, -1.0):
        twisted = tau.copy()
        twisted[hip] += sign * 70.0
        violated = contact_margins(model, rl.linearize(model, state, twisted, contacts=soles), friction=0.7, facets=4,
                                   sole_size=SOLE).violated()
        assert violated and all(v.startswith("left_sole_link:yaw") for v in violated), (sign, violated)
        sides.append({v.split(":")[1][:4] for v in violated})
    assert sides in ([{"yaw+"}, {"yaw-"}], [{"yaw-"}, {"yaw+"}]), sides


ARGUMENTS = [  # (keyword arguments, the error's start)
    (dict(friction=0.0), "friction: expected a positive number"),
    (dict(friction=float("nan")), "friction: expected a positive number"),
    (dict(friction=-0.5), "friction: expected a positive number"),
    (dict(friction="0.5"), "friction: expected a positive number"),
    (dict(friction=0.5, normal=(0.0, 0.0, 0.0)), "normal: expected a nonzero vector"),
    (dict(friction=0.5, normal=(0.0, 1.0)), r"normal: expected shape \(3,\)"),
    (dict(friction=0.5, normal=(0.0, np.nan, 1.0)), "normal: contains NaN"),
    (dict(friction=0.5, facets=5), "facets: expected None"),
    (dict(friction=0.5, facets=2), "facets: expected None"),
    (dict(friction=0.5, facets=4.0), "facets: expected None"),
    (dict(friction=0.5, inner="yes"), "inner: expected True"),
]


@pytest.mark.parametrize("arguments, message", ARGUMENTS)
def test_a_wrong_argument_is_one_line_naming_it(arguments, message, rng):
    model = load_example("solo12")
    lin = rl.linearize(model, random_state(model, rng), contacts=list(SOLO_FEET))
    with pytest.raises(ValueError, match="^" + message) as error:
        contact_margins(model, lin, **arguments)
    assert "\n" not in str(error.value)


def test_a_linearization_without_contacts_or_sole_sizes_is_refused(rng):
    model = load_example("talos")
    state = random_state(model, rng)
    with pytest.raises(ValueError, match="^linearization: has no contacts"):
        contact_margins(model, rl.linearize(model, state), friction=0.5)
    soles = rl.linearize(model, state, contacts=[rl.Contact(f, "6d") for f in TALOS_SOLES])
    with pytest.raises(ValueError, match=r"^sole_size: required for the 6d contacts \['left_sole_link', "):
        contact_margins(model, soles, friction=0.5)
    with pytest.raises(ValueError, match=r"^sole_size: no size for the 6d contacts \['right_sole_link'\]"):
        contact_margins(model, soles, friction=0.5, sole_size={"left_sole_link": SOLE})
    with pytest.raises(ValueError, match="^sole_size: expected positive lengths"):
        contact_margins(model, soles, friction=0.5, sole_size=(0.2, 0.0))
    with pytest.raises(ValueError, match="^linearization: not a linearization of model"):
        contact_margins(load_example("solo12"), soles, friction=0.5)
    with pytest.raises(ValueError, match="^linearization: contact_margins takes one state's"):
        contact_margins(model, rl.linearize_trajectory(model, [state, state], contacts=["left_sole_link"], dt=1e-3),
                        friction=0.5)


def test_an_evaluator_gives_contact_margins_and_refuses_another_contact_set(rng):
    """MarginEvaluator (arguments checked once, for a controller's loop) equals contact_margins bit
    for bit, on a Linearizer's fields too, and names a linearization of other contacts."""
    model = load_example("solo12")
    state = random_state(model, rng)
    contacts = [rl.Contact(f, reference="local") for f in SOLO_FEET]
    options = dict(friction=0.6, normal=TILTED, facets=6)
    evaluator = MarginEvaluator(model, contacts, **options)
    lin = rl.linearize(model, state, contacts=contacts)
    expected = contact_margins(model, lin, **options)
    for got in (evaluator(lin), evaluator(rl.Linearizer(model, contacts=contacts).linearize(state))):
        assert got.labels == expected.labels
        for name in ("margins", "state_jacobian", "input_jacobian"):
            np.testing.assert_array_equal(getattr(got, name), getattr(expected, name))
    other = rl.linearize(model, state, contacts=[rl.Contact(f, reference="local") for f in SOLO_FEET[:3]])
    with pytest.raises(ValueError, match=r"^linearization: its contacts \[FL_FOOT:point:local, FR_FOOT:point:local, "
                                         r"HL_FOOT:point:local\] are not the evaluator's \[FL_FOOT:point:local, "):
        evaluator(other)
    with pytest.raises(ValueError, match=r"^linearization: its contacts \[FL_FOOT:point:world_aligned, "):
        evaluator(rl.linearize(model, state, contacts=list(SOLO_FEET)))  # the same frames, other axes
    with pytest.raises(ValueError, match="^friction: "):
        MarginEvaluator(model, contacts, friction=-1.0)


def test_an_evaluator_given_the_soles_frames_gives_the_margins_it_computes_and_reads_them(rng):
    """The soles' rotations and the angular rows of their body Jacobians in their own axes, handed over
    (as a horizon's kinematics in one call gives them: walking/mpc.py), here from Pinocchio: the margins
    and Jacobians the evaluator computes itself, to 1e-12 of their size; J_ω in the world instead changes
    the state Jacobian (the frames are read); a wrong shape is one line naming it."""
    import pinocchio as pin

    model = load_example("talos")
    state = random_state(model, rng)
    contacts = [rl.Contact(f, "6d") for f in TALOS_SOLES]
    evaluator = MarginEvaluator(model, contacts, friction=0.7, facets=4, sole_size=SOLE)
    lin = rl.linearize(model, state, contacts=contacts)
    oracle = PinocchioOracle(example_robot_path("talos"), model)
    data = oracle.pmodel.createData()
    q = oracle.configuration(state)
    pin.computeJointJacobians(oracle.pmodel, data, q)
    pin.updateFramePlacements(oracle.pmodel, data)
    frames = [oracle.pmodel.getFrameId(f) for f in TALOS_SOLES]
    rotations = np.array([data.oMf[f].rotation for f in frames])
    local, world = (np.array([pin.getFrameJacobian(oracle.pmodel, data, f, axes)[3:, oracle.perm] for f in frames])
                    for axes in (pin.LOCAL, pin.LOCAL_WORLD_ALIGNED))
    expected, got = evaluator(lin), evaluator(lin, (rotations, local))
    for name in ("margins", "state_jacobian", "input_jacobian"):
        value = getattr(expected, name)
        np.testing.assert_allclose(getattr(got, name), value, rtol=0, atol=1e-12 * np.abs(value).max(), err_msg=name)
    wrong = evaluator(lin, (rotations, world)).state_jacobian
    assert np.abs(wrong - expected.state_jacobian).max() > 1e-3 * np.abs(expected.state_jacobian).max()
    with pytest.raises(ValueError, match=r"^frames: expected .*\(2, 3, 3\).*, got shape \(1, 3, 3\)$"):
        evaluator(lin, (rotations[:1], local))
    # the layouts a caller may hand over (Fortran order, a strided view, big-endian), converted; NaN refused
    swapped = local.astype(local.dtype.newbyteorder(">"))
    for frames in ((np.asfortranarray(rotations), local), (rotations, swapped),
                   (np.repeat(rotations, 2, axis=0)[::2], local)):
        np.testing.assert_array_equal(evaluator(lin, frames).state_jacobian, got.state_jacobian)
    broken = local.copy()
    broken[1, 2, 3] = np.nan
    with pytest.raises(ValueError, match=r"^frames: .*(finite|NaN)") as raised:
        evaluator(lin, (rotations, broken))
    assert "\n" not in str(raised.value)


def test_the_exact_cone_at_zero_tangential_force_has_the_minimal_norm_subgradient():
    """A box resting on one point contact at its centre of mass: λ is exactly vertical (f_t = 0),
    where ‖f_t‖ has no derivative; the margin is μ f_n and its Jacobians are μ ∂f_n — the
    minimal-norm subgradient of −‖f_t‖ is 0 — finite, never the 0/0 of the smooth formula."""
    from robot_linearization.joints import Joint, JointType
    from robot_linearization.spatial import spatial_inertia

    builder = rl.ModelBuilder("box", spatial_inertia(2.0, np.zeros(3), np.diag([0.02, 0.03, 0.04])), name="box")
    builder.add_body("lid", parent="box", joint=Joint("hinge", JointType.REVOLUTE, (0.0, 0.0, 1.0)),
                     placement=np.eye(4), inertia=spatial_inertia(0.5, np.zeros(3), np.diag([0.01, 0.01, 0.02])))
    builder.add_frame("bottom", body="box", placement=np.eye(4))
    model = builder.build()
    state = rl.State(base_pose=np.eye(4), joint_positions=np.zeros(1), base_twist=np.zeros(6),
                     joint_velocities=np.zeros(1))
    lin = rl.linearize(model, state, contacts=["bottom"])
    assert lin.contact_forces[0] == 0.0 and lin.contact_forces[1] == 0.0 and lin.contact_forces[2] > 0
    margins = contact_margins(model, lin, friction=0.5)
    assert margins.labels == ("bottom:friction", "bottom:unilateral")
    assert margins.margins[0] == 0.5 * lin.contact_forces[2]
    assert np.isfinite(margins.state_jacobian).all() and np.isfinite(margins.input_jacobian).all()
    np.testing.assert_array_equal(margins.state_jacobian[0], 0.5 * lin.contact_forces_state_jacobian[2])
    np.testing.assert_array_equal(margins.input_jacobian[0], 0.5 * lin.contact_forces_input_jacobian[2])


@pytest.mark.parametrize("yaw", [0.3, 1.1, 2.9])
def test_the_exact_cone_at_a_tangential_force_of_rounding_noise_has_the_minimal_norm_subgradient(yaw):
    """A body balanced on one point contact straight below its centre of mass, turned about the vertical:
    λ is vertical up to rounding (‖f_t‖ ≈ 1e-16 N), while tilting the body would make a tangential
    force (∂f_t/∂z ≠ 0).  The friction row's Jacobians are μ ∂f_n, the minimal-norm subgradient
    (docs/contact_margins.md), not −(f_t/‖f_t‖)·∂f_t with a direction made of noise."""
    from robot_linearization.joints import Joint, JointType
    from robot_linearization.spatial import so3_exp, spatial_inertia

    centre = np.array([0.03, -0.02, 0.01])
    below = np.eye(4)
    below[:3, 3] = centre - [0.0, 0.0, 0.1]
    builder = rl.ModelBuilder("box", spatial_inertia(2.0, centre, np.array(
        [[0.02, 0.001, 0.002], [0.001, 0.03, 0.003], [0.002, 0.003, 0.04]])), name="balanced_box")
    builder.add_body("lid", parent="box", joint=Joint("hinge", JointType.REVOLUTE, (0.0, 0.0, 1.0)),
                     placement=below, inertia=spatial_inertia(0.5, np.zeros(3), np.diag([0.01, 0.01, 0.02])))
    builder.add_frame("bottom", body="box", placement=below)
    model = builder.build()
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = so3_exp(np.array([0.0, 0.0, yaw])), (0.1, 0.2, 0.3)
    state = rl.State(base_pose=pose, joint_positions=np.array([0.4]), base_twist=np.zeros(6),
                     joint_velocities=np.zeros(1))
    lin = rl.linearize(model, state, contacts=["bottom"])
    tangential, normal = np.hypot(*lin.contact_forces[:2]), lin.contact_forces[2]
    assert 0.0 < tangential < 1e-14 * normal  # rounding, not a force
    assert np.abs(lin.contact_forces_state_jacobian[:2]).max() > 1.0  # a tilt would make one
    mu = 0.5
    margins = contact_margins(model, lin, friction=mu)
    assert margins.labels[0] == "bottom:friction" and margins.margins[0] == mu * normal - tangential
    scale = np.abs(lin.contact_forces_state_jacobian).max()
    np.testing.assert_allclose(margins.state_jacobian[0], mu * lin.contact_forces_state_jacobian[2],
                               rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(margins.input_jacobian[0], mu * lin.contact_forces_input_jacobian[2],
                               rtol=0, atol=1e-12 * np.abs(lin.contact_forces_input_jacobian).max())


def test_margins_of_a_mimic_coupled_robot_match_finite_differences(rng):
    """The bundled quadruped with its front right knee mimicking the front left one (reduced
    coordinates), both front feet in local point contacts: the frames' turning term of λ's
    rotation into the cone goes through the coupling Ĝ (reduced velocities), checked against
    differences of the margins recomputed from the constrained dynamics and the frames' poses."""
    from robot_linearization.algorithms.kinematics import frame_poses

    with open(rl.robots.bundled_urdf_path()) as f:
        model = rl.load_urdf(f.read().replace(
            '<joint name="front_right_knee" type="revolute">',
            '<joint name="front_right_knee" type="revolute"><mimic joint="front_left_knee" multiplier="-0.8"/>'))
    assert isinstance(model, rl.CoupledModel)
    feet = [rl.Contact(frame, reference="local") for frame in rl.robots.BUNDLED_FEET[:2]]
    normal, mu = np.array(TILTED) / np.linalg.norm(TILTED), 0.6

    def reference(state, tau):
        _, forces = rl.constrained_forward_dynamics(model, state, tau, feet)
        out = []
        for k, R in enumerate(frame_poses(model, state, [c.frame for c in feet])[:, :3, :3]):
            world = R @ forces[3 * k:3 * k + 3]
            f_n = normal @ world
            out += [mu * f_n - np.linalg.norm(world - f_n * normal), f_n]
        return np.array(out)

    state, tau = random_state(model, rng, scale=0.7), rng.normal(scale=5.0, size=model.n_joints)
    margins = contact_margins(model, rl.linearize(model, state, tau, contacts=feet), friction=mu, normal=TILTED)
    assert relative(margins.margins, reference(state, tau)) < 1e-9
    d_state, d_tau = finite_differences(reference, model, state, tau)
    assert relative(margins.state_jacobian, d_state) < 1e-6, relative(margins.state_jacobian, d_state)
    assert relative(margins.input_jacobian, d_tau) < 1e-6, relative(margins.input_jacobian, d_tau)


def test_a_negative_sole_size_is_refused_even_without_6d_contacts(rng):
    model = rl.load_urdf(rl.robots.bundled_urdf_path())
    lin = rl.linearize(model, random_state(model, rng), contacts=list(rl.robots.BUNDLED_FEET))
    for bad in ((0.2, -0.1), {"front_left_foot": (-0.2, 0.1)}, (0.2,)):
        with pytest.raises(ValueError, match="sole_size") as caught:
            contact_margins(model, lin, friction=0.6, sole_size=bad)
        assert "\n" not in str(caught.value)
