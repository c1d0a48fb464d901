"""A flat ground under a legged robot's simulation: contacts close where the feet reach it.

The gait (gait.py) says which feet may stand at each instant; the ground decides when they do.
A foot the schedule puts in stance closes its contact once it is on the ground (its height above
it at most ``tolerance``), at the start of a step, with the rigid impact of the new set
(rl.impact, docs/impacts.md); a late foot stays free until it arrives.  A foot the schedule lifts
opens its contact.  Each step is rl.step's semi-implicit Euler on the group with the constrained
dynamics of the held set, followed by the projection of ν onto zero contact velocity
(integrator.contact_velocities_zeroed) and of the configuration onto the held feet's positions
(:func:`held_feet_projected`): velocity-level contacts alone drift off the ground, by up to 2 mm
in 2 000 steps on a 50 kg quadruped.

The ground pushes and does not pull, and its friction is Coulomb's (:func:`ground_dynamics`): a
held foot sticks while the force that takes lies in the friction cone μ f_n ≥ ‖f_t‖, f_n ≥ 0;
one that would have to pull lets go (it lifts; it closes again, with an impact, once it is back
on the ground), and one that would need more friction slides, pushed on the cone's edge.  So
the forces the robot receives always lie in their cones; every foot that lets go or slides is
kept in ``violations`` (time, foot, what, the force the rigid contact would have needed beyond
the cone).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..algorithms.constrained_dynamics import bias_motion, constrained_forward_dynamics, contact_kinematics
from ..algorithms.forward_dynamics import forward_dynamics
from ..algorithms.inverse_mass_matrix import inverse_mass_matrix
from ..algorithms.kinematics import body_transforms, frame_poses
from ..arguments import did_you_mean, joint_vector, positive_number
from ..contacts import Contact
from ..gait import Gait
from ..impacts import impact
from ..integrator import contact_velocities_zeroed
from ..model import Model, State, floating_base_of
from ..spatial import se3_exp, so3_log


def standing_state(model: Model, gait: Gait, feet, height: float = 0.0) -> tuple[State, float]:
    """The robot at rest in the gait's posture, level, with its ``feet`` on the ground z = height
    (their mean height), and the base's height above the ground [m].

    ``model``: a floating-base Model; ``gait``: its posture is taken (gait.Gait).  Returns (State,
    height)."""
    posture = gait.joint_posture(model.joint_names)
    at_origin = State(base_pose=np.eye(4), joint_positions=posture, base_twist=np.zeros(6),
                      joint_velocities=np.zeros(model.n_joints))
    above = -float(frame_poses(model, at_origin, list(feet))[:, 2, 3].mean())
    pose = np.eye(4)
    pose[2, 3] = height + above
    return State(base_pose=pose, joint_positions=posture, base_twist=np.zeros(6),
                 joint_velocities=np.zeros(model.n_joints)), above


def foot_heights(model: Model, state: State, feet, height: float = 0.0) -> dict:
    """{foot: its height [m] above the ground z = height} at ``state``.

    ``model``: a Model; ``feet``: frame names; ``height``: the ground's z [m]."""
    poses = frame_poses(model, state, list(feet))
    return {foot: poses[i, 2, 3] - height for i, foot in enumerate(feet)}


def standing_feet(feet, scheduled, held, heights: dict, tolerance: float) -> tuple:
    """The ``feet`` that stand over the next step: those the gait schedules (``scheduled``) that
    are held already (``held``) or on the ground, ``heights`` [foot] ≤ tolerance [m] above it."""
    return tuple(f for f in feet if f in scheduled and (f in held or heights[f] <= tolerance))


def ground_dynamics(model: Model, state: State, torques: np.ndarray, feet, friction: float):
    """Forward dynamics with ``feet`` (point frames) on a ground of normal +z that pushes and does
    not pull, with Coulomb friction μ = ``friction``: (ν̇ (N,), {foot: the force (3,) on the
    robot, world axes, N}, {foot: "sticks" | "slides" | "lets go"}, {foot: what a rigid contact
    would have needed beyond the cone, N}).

    The feet that let go are the fewest (of those, the ones rigid contacts pull hardest on) with
    which every held foot pushes and no foot let go heads into the ground.  A held foot sticks
    (a rigid point contact, docs/contacts.md) unless the force that takes leaves the cone; then
    it slides, one foot at a time, the one needing most friction first: its normal acceleration
    stays zero and the ground pushes it with f_n (e_z + μ t), t the unit direction its sticking
    force had.  Every force returned lies in its cone.  Where no set of feet let go satisfies
    this (not seen on a walking robot), the held feet that pull let go, the hardest first.
    ValueError (one line, naming the argument) for a foot that is not a frame of the model, μ
    that is not a positive number, or torques (n,) that are not finite.

    ``model``: a floating-base Model; ``state``: its State; ``torques``: τ (n,) [N m]."""
    friction = positive_number(friction, "friction")
    torques = joint_vector(model, torques, "torques", default_zero=False)
    feet = tuple(feet)
    for foot in feet:
        if not isinstance(foot, str) or foot not in model.frames:
            raise ValueError(f"feet: {foot!r} is not a frame of model '{model.name}'"
                             + (did_you_mean(foot, list(model.frames)) if isinstance(foot, str) else ""))
    X_up = body_transforms(model, state.joint_positions)
    J, drift = contact_kinematics(model, state, [Contact(f) for f in feet], X_up, *bias_motion(model, state, X_up))
    M_inv = inverse_mass_matrix(model, state.joint_positions)
    base, joints = forward_dynamics(model, state, torques)
    free = np.concatenate([base, joints])

    def solve(modes, directions):
        """ν̇ and the forces with each foot held as ``modes`` says."""
        rows, pushes = [], []  # the constrained rows of J, the generalized force of each λ
        for i, foot in enumerate(feet):
            if modes[foot] == "sticks":
                rows += [3 * i, 3 * i + 1, 3 * i + 2]
                pushes += [J[3 * i], J[3 * i + 1], J[3 * i + 2]]
            elif modes[foot] == "slides":
                t = directions[foot]
                rows.append(3 * i + 2)
                pushes.append(J[3 * i + 2] + friction * (t[0] * J[3 * i] + t[1] * J[3 * i + 1]))
        if not rows:
            return free, {}
        MW = M_inv @ np.array(pushes).T
        lam = np.linalg.solve(J[rows] @ MW, -(J[rows] @ free + drift[rows]))
        forces, k = {}, 0
        for foot in feet:
            if modes[foot] == "sticks":
                forces[foot], k = lam[k:k + 3], k + 3
            elif modes[foot] == "slides":
                t = directions[foot]
                forces[foot], k = lam[k] * np.array([friction * t[0], friction * t[1], 1.0]), k + 1
        return free + MW @ lam, forces

    def with_friction(released, sticking=None):
        """(ν̇, forces, modes, excess) with ``released`` let go and the others sticking or, where
        their force leaves the cone, sliding; ``sticking``: solve's result with all of those
        sticking, when known."""
        modes = {foot: "lets go" if foot in released else "sticks" for foot in feet}
        directions, excess = {}, {}
        nu_dot, forces = sticking or solve(modes, directions)
        while True:
            beyond = {foot: float(np.hypot(*force[:2])) - friction * force[2] for foot, force in forces.items()
                      if modes[foot] == "sticks" and force[2] >= 0.0}
            sliding = max(beyond, key=beyond.get, default=None)
            if sliding is None or beyond[sliding] <= 0.0:
                return nu_dot, forces, modes, excess
            modes[sliding], excess[sliding] = "slides", beyond[sliding]
            directions[sliding] = forces[sliding][:2] / np.hypot(*forces[sliding][:2])
            nu_dot, forces = solve(modes, directions)

    rigid = solve({foot: "sticks" for foot in feet}, {})
    pulls = {foot: max(-float(rigid[1][foot][2]), 0.0) for foot in feet}
    order = sorted(feet, key=lambda foot: -pulls[foot])
    for size in range(len(feet) + 1):
        for released in itertools.combinations(order, size):
            nu_dot, forces, modes, excess = with_friction(set(released), rigid if not released else None)
            accelerations = J @ nu_dot + drift
            if (all(force[2] >= 0.0 for force in forces.values())
                    and all(accelerations[3 * i + 2] >= 0.0 for i, foot in enumerate(feet) if foot in released)):
                excess.update((foot, pulls[foot]) for foot in released)
                return nu_dot, forces, modes, excess
    letting_go: set[str] = set()  # (no set found: let go of the pulling feet one by one)
    while True:
        nu_dot, forces, modes, excess = with_friction(letting_go, rigid if not letting_go else None)
        pulling = min(forces, key=lambda foot: forces[foot][2], default=None)
        if pulling is None or forces[pulling][2] >= 0.0:
            excess.update((foot, pulls[foot]) for foot in letting_go)
            return nu_dot, forces, modes, excess
        letting_go.add(pulling)


def sole_dynamics(model: Model, state: State, torques: np.ndarray, soles, friction: float, sole_size) -> tuple:
    """Forward dynamics with ``soles`` (frames) held flat on the ground, rigid 6d contacts
    (world-aligned): (ν̇ (N,), {sole: the wrench [f; m] (6,) on the robot, world axes at the sole's
    origin, N and N m}, [(sole, what, amount)] of each wrench the ground could not give: "pulls"
    (f_n < 0, by ``amount`` [N]), "slides" (‖f_t‖ beyond μ f_n, μ = ``friction``, by [N]), "tips"
    (its centre of pressure beyond the sole's rectangle ``sole_size`` (length, width) [m], by [m]) or
    "twists" (its moment about its normal beyond what friction μ at the rectangle's corners gives, by [N m]),
    {sole: its centre of pressure's margin, the distance [m] inside the nearest edge of the
    rectangle (negative: beyond it; −inf for a sole that pulls)}).
    The ground holds the soles whatever the wrench: a sole that would lift, slide, tip or turn is
    reported, not simulated.  ValueError / ContactError in one line from rl's constrained dynamics
    for torques (n,) or soles that do not fit the model.

    ``model``: a floating-base Model; ``state``: its State; ``torques``: τ (n,) [N m]."""
    friction = positive_number(friction, "friction")
    soles = tuple(soles)
    nu_dot, wrenches = constrained_forward_dynamics(model, state, torques, [Contact(f, "6d") for f in soles])
    half = 0.5 * np.asarray(sole_size, dtype=float)
    rotations = frame_poses(model, state, list(soles))[:, :3, :3]
    forces, issues, margins = {}, [], {}
    for i, sole in enumerate(soles):
        wrench = forces[sole] = wrenches[6 * i:6 * i + 6].copy()
        f_n = wrench[2]
        if f_n < 0.0:
            issues.append((sole, "pulls", -f_n))
            margins[sole] = -np.inf
            continue
        if np.hypot(wrench[0], wrench[1]) > friction * f_n:
            issues.append((sole, "slides", float(np.hypot(wrench[0], wrench[1]) - friction * f_n)))
        force, moment = rotations[i].T @ wrench[:3], rotations[i].T @ wrench[3:]  # in the sole's axes (it lies
        pressure = np.array([-moment[1], moment[0]]) / max(f_n, 1e-12)  # flat: its z is the normal)
        beyond = float(np.max(np.abs(pressure) - half))
        margins[sole] = -beyond
        if beyond > 0.0:
            issues.append((sole, "tips", beyond))
        # the moment about the normal that friction at the sole's corners gives (docs/contact_margins.md)
        (X, Y), spin = half, friction * (half[0] + half[1]) * f_n
        highest = spin - abs(Y * force[0] + friction * moment[0]) - abs(X * force[1] + friction * moment[1])
        lowest = -spin + abs(Y * force[0] - friction * moment[0]) + abs(X * force[1] - friction * moment[1])
        twist = float(max(moment[2] - highest, lowest - moment[2]))
        if twist > 0.0:
            issues.append((sole, "twists", twist))
    return nu_dot, forces, issues, margins


def held_feet_projected(model: Model, state: State, contacts, rows, anchors, *, tolerance: float = 1e-10,
                        iterations: int = 4) -> tuple[State, float, float]:
    """``state`` with its configuration moved, in the metric of the mass matrix M, onto where its
    held feet are held: ``contacts`` (world-aligned Contacts: a point contact holds its frame's
    origin, a 6d one its pose) held at ``anchors`` (f, 4, 4), poses in the world; ``rows``: the
    rows of the stacked error held (a sticking foot: its three, a sliding one: its height, a sole:
    its six).  The error of a contact is p − p* (point) or [p − p*; log(R R*ᵀ)] (6d), [m; rad].
    Gauss–Newton on the group: each iteration takes δz_q = −M⁻¹Jᵀ (J M⁻¹ Jᵀ)⁻¹ e, J the rows of the
    contacts' Jacobian (the configuration Jacobian of the left-trivialized perturbation), to
    H·exp(δz_H), s + δz_s, until ``max|e|`` ≤ ``tolerance`` or after ``iterations``.  The velocities
    are left as they are.  Returns the state and the largest ``|e|`` before and after the projection.

    ``model``: a floating-base Model; ``iterations``: at most that many Gauss–Newton steps."""
    contacts, rows = tuple(contacts), np.asarray(rows, dtype=int)
    frames = [c.frame for c in contacts]

    def held_error(state: State) -> np.ndarray:
        poses = frame_poses(model, state, frames)
        return np.concatenate([
            np.r_[poses[i, :3, 3] - anchors[i][:3, 3], so3_log(poses[i, :3, :3] @ anchors[i][:3, :3].T)]
            if c.kind == "6d" else poses[i, :3, 3] - anchors[i][:3, 3] for i, c in enumerate(contacts)])[rows]

    error = held_error(state)
    before = largest = float(np.abs(error).max()) if len(rows) else 0.0
    for _ in range(iterations):
        if largest <= tolerance:
            break
        X_up = body_transforms(model, state.joint_positions)
        J, _ = contact_kinematics(model, state, contacts, X_up, *bias_motion(model, state, X_up))
        J = J[rows]
        M_inv = inverse_mass_matrix(model, state.joint_positions)
        step = -M_inv @ J.T @ np.linalg.solve(J @ M_inv @ J.T, error)
        H, v = floating_base_of(state)
        state = State._given(H @ se3_exp(step[:6]), state.joint_positions + step[6:], v, state.joint_velocities)
        error = held_error(state)
        largest = float(np.abs(error).max())
    return state, before, largest


@dataclass(frozen=True)
class Violation:
    """time [s]; foot; what: "lets go" (a held foot whose rigid contact would have pulled, by
    ``amount`` [N]: it lifts), "slides" (one whose rigid contact would have needed ``amount`` [N]
    of friction beyond μ f_n: it slides; a sole: it is held all the same), "pulls" (a sole held
    although its contact pulls, by [N]), "tips" (a sole held although its centre of pressure lies
    beyond its rectangle, by [m]), "twists" (a sole held although the moment about its normal is
    beyond what friction at its corners gives, by [N m]), "below the ground" (a free foot under it by more than the
    tolerance) or "off the ground" (a held foot off it by more than the tolerance), amount [m]."""

    time: float
    foot: str
    what: str
    amount: float


class GroundSimulation:
    """``model`` walking ``gait`` on the plane z = ``height`` of the world (normal +z).

    feet: the frames that touch the ground (the gait's contacts: points, or soles held flat —
    :func:`sole_dynamics`, ``sole_size`` (length, width) [m] — world-aligned axes).  dt [s]: the
    step.  friction μ: of the cone the received forces are checked against.  restitution e of
    the touchdowns.  tolerance [m]: how close to the ground a foot closes its contact.
    ``state`` (rl.State), ``time`` [s] and ``held`` (the feet in contact over the last step)
    describe where it is (soles it starts on are laid flat first); ``touchdowns`` lists (time,
    feet) of every impact.  A held foot is held where it closed its contact, on the ground (a
    sliding one: on the ground): after each step the configuration is projected there
    (:func:`held_feet_projected`); ``correction`` [m]: how far the step had taken the held feet
    from there, ``drift`` [m]: how far they are after the projection,
    ``turned`` [rad]: the largest angle the projection turns a held sole by (a sole that lands
    tilted is laid flat: a landing that is not physical unless this is small);
    ``pressure_margins``: {sole: the margin [m] of its centre of pressure over the last step}
    (:func:`sole_dynamics`).
    """

    def __init__(self, model: Model, gait: Gait, state: State, *, feet, height: float = 0.0, dt: float = 0.002,
                 friction: float = 0.7, restitution: float = 0.0, tolerance: float = 1e-3, sole_size=None):
        self.model, self.gait, self.state = model, gait, state
        self.sole_size = sole_size
        self.feet = tuple(feet)
        self.height, self.dt, self.friction = height, dt, friction
        self.restitution, self.tolerance = restitution, tolerance
        self.time, self.steps = 0.0, 0
        self.held = tuple(f for f in self.feet if f in self._scheduled() and self.foot_heights()[f] <= tolerance)
        self.early: tuple = ()  # held feet the gait does not schedule (contacts_now)
        self.touchdowns: list[tuple[float, tuple]] = []
        self.violations: list[Violation] = []
        self.forces: dict = {}  # foot -> the force (3,) it received over the last step [N]
        self.pressure_margins: dict = {}  # sole -> its centre of pressure's margin over the last step [m]
        # foot -> where it is held (3,) [m], in the world: where it closed its contact, on the ground
        self.anchors = {foot: self._on_ground(foot) for foot in self.held}
        if self.held and gait.contact == "6d":  # the soles it stands on laid flat (a posture may tilt them)
            self.state = held_feet_projected(model, state, [Contact(f, "6d") for f in self.held],
                                             range(6 * len(self.held)), [self.anchors[f] for f in self.held])[0]
        self.correction, self.drift, self.turned = 0.0, 0.0, 0.0

    def _scheduled(self, time: float | None = None) -> set:
        return {c.frame for c in self.gait.contacts_at(self.time if time is None else time)}

    def foot_heights(self, state: State | None = None) -> dict:
        """{foot: its height above the ground [m]}.

        ``state``: a State of the model (None: the simulation's current one)."""
        return foot_heights(self.model, self.state if state is None else state, self.feet, self.height)

    def _on_ground(self, foot: str, state: State | None = None) -> np.ndarray:
        """Where ``foot`` is, moved along z onto the ground and turned flat about its heading (4, 4)."""
        pose = frame_poses(self.model, self.state if state is None else state, [foot])[0]
        flat = np.eye(4)
        heading = np.arctan2(pose[1, 0], pose[0, 0])
        flat[:2, :2] = [[np.cos(heading), -np.sin(heading)], [np.sin(heading), np.cos(heading)]]
        flat[:2, 3], flat[2, 3] = pose[:2, 3], self.height
        return flat

    def contacts_now(self) -> tuple:
        """The feet that hold over the next step: scheduled, and held already or on the ground; and a
        free foot the step would take below the floor, scheduled or not (an early or fast touchdown,
        after a push), held from then until its stance begins or it lets go."""
        scheduled, heights = self._scheduled(), self.foot_heights()
        standing = standing_feet(self.feet, scheduled, self.held, heights, self.tolerance)
        early = {f for f in self.feet if f not in scheduled and f in self.early}
        if any(f not in self.held and f not in standing for f in self.feet):
            # (where the step would take a free foot, at its velocities now: closed before it goes through
            # the floor, scheduled or not)
            state, dt = self.state, self.dt
            H, twist = floating_base_of(state)
            ahead = self.foot_heights(State._given(H @ se3_exp(dt * twist),
                                                   state.joint_positions + dt * state.joint_velocities,
                                                   twist, state.joint_velocities))
            early |= {f for f in self.feet if f not in self.held and ahead[f] < 0.0}
        return tuple(f for f in self.feet if f in standing or f in early)

    def step(self, torques: np.ndarray) -> None:
        """One step of dt with joint torques τ (n,) held over it (:func:`ground_dynamics`)."""
        model, state = self.model, self.state
        held = self.contacts_now()
        self.pressure_margins = {}
        soles = self.gait.contact == "6d"
        contacts = [Contact(f, self.gait.contact) for f in held]
        closing = tuple(f for f in held if f not in self.held)
        if closing:
            state = impact(model, state, contacts, self.restitution).state
            self.touchdowns.append((self.time, closing))
        if contacts and soles:
            nu_dot, forces, issues, self.pressure_margins = sole_dynamics(model, state, torques, held, self.friction,
                                                                          self.sole_size)
            modes, excess = {foot: "sticks" for foot in held}, {}
            self.violations += [Violation(self.time, foot, what, amount) for foot, what, amount in issues]
        elif contacts:
            nu_dot, forces, modes, excess = ground_dynamics(model, state, torques, held, self.friction)
        else:
            base, joints = forward_dynamics(model, state, torques)
            nu_dot, forces, modes, excess = np.concatenate([base, joints]), {}, {}, {}
        dt = self.dt
        r = state.joint_velocities + dt * nu_dot[6:]
        v = state.base_twist + dt * nu_dot[:6]
        state = State._given(state.base_pose @ se3_exp(dt * v), state.joint_positions + dt * r, v, r)
        rows = list(range(6 * len(held))) if soles else [
            3 * i + axis for i, foot in enumerate(held)
            for axis in {"sticks": (0, 1, 2), "slides": (2,), "lets go": ()}[modes[foot]]]
        self.correction = self.drift = self.turned = 0.0
        if rows:
            state = contact_velocities_zeroed(model, state, contacts, rows)
            # each held foot where it is held: a new or sliding one where the step put it, on the ground
            anchors = {foot: self.anchors[foot] if foot in self.anchors and modes[foot] == "sticks"
                       else self._on_ground(foot, state) for foot in held}
            if soles:  # how far the projection turns each sole (a new one: flat, about its heading)
                poses = frame_poses(model, state, list(held))
                self.turned = max(float(np.linalg.norm(so3_log(pose[:3, :3] @ anchors[foot][:3, :3].T)))
                                  for pose, foot in zip(poses, held))
            state, self.correction, self.drift = held_feet_projected(model, state, contacts, rows,
                                                                     [anchors[foot] for foot in held])
        self.state, self.held = state, tuple(f for f in held if modes[f] != "lets go")
        scheduled = self._scheduled()
        self.early = tuple(f for f in self.held if f not in scheduled)
        self.anchors = {foot: anchors[foot] for foot in self.held} if rows else {}
        self.forces = forces
        for foot, amount in excess.items():
            self.violations.append(Violation(self.time, foot, modes[foot], amount))
        self._check(self.held)
        self.steps += 1
        self.time = self.steps * dt

    def _check(self, held) -> None:
        for foot, h in self.foot_heights().items():
            if foot in held and abs(h) > self.tolerance:
                self.violations.append(Violation(self.time, foot, "off the ground", h))
            elif foot not in held and h < -self.tolerance:
                self.violations.append(Violation(self.time, foot, "below the ground", -h))
