"""A linear time-varying whole-body MPC of a legged robot on the step Jacobians (docs/mpc.md).

Every control cycle it linearizes the robot along its previous plan, shifted to now, at K knots
of ``knot_dt`` along the gait's schedule, and solves one QP for the perturbations δz_k (2N) of the
states and δτ_k (n) of the torques::

    min  Σ_k ½‖r_k + G_k [δz_k; δτ_k]‖²_W
    s.t. δz_0 = 0,  δz_{k+1} = A_d,k δz_k + B_d,k δτ_k + c_k              (the dynamics)
         m_k + ∂m/∂z δz_k + ∂m/∂τ δτ_k ≥ m_min                            (contact margins)
         −τ_max ≤ τ̄_k + δτ_k ≤ τ_max,  swing feet above the ground

with A_d, B_d the exact Jacobians of rl.step's semi-implicit Euler at (x̄_k, τ̄_k) (a touchdown's
knot: through its impact), c_k = step(x̄_k, τ̄_k) ⊖ x̄_{k+1} the defect of the shifted plan, and
m the friction pyramid and unilateral margins of λ (and a sole's centre of pressure,
rl.contact_margins).  The residuals r track a base pose and twist that follow the command, the
gait's posture, the swing feet's height profile and landing points (a sole's also at the knot it
lands, flat, turning to its landing heading over its swing), and small torques.  Each torque perturbation is held over
``torque_hold`` knots (δτ_k = y_m) and the dynamics are condensed (δz_k = Γ_k y + d_k), leaving a
dense QP in the M·n held torques y with the limits as a box (ProxSuite's dense solver; DAQP or OSQP
on request), solved first on the rows the linearization point does not keep strictly and then also on
those its solution breaks: the whole QP's solution, most rows being far from their bounds.  The new plan
is x̄_k·exp(δz_k), τ̄_k + δτ_k; the robot gets τ̄_0 + δτ_0.

A controller never stops commanding: the measured state can violate a margin already (a centre of
pressure on a sole's edge after a soft landing, a force past its cone), and then no plan satisfies
them all.  Where the plan's solver does not converge, DAQP's active set takes the same QP.  Where the QP
has no solution, the least violation is found first — each of the first
SOFT_KNOTS knots' rows of each kind (margins, swing feet above the ground) share a slack σ ≥ 0, and
min Σσ (by DAQP's active set, whatever the plan's solver) — then the plan is the QP's on the
constraints relaxed by that σ (and 1 % of it: the room the solver needs): it violates them as
little as it can, and the slack it used is reported (MPCResult.slack, .softened).  Where the hard
QP has a solution, it is the plan, untouched.  After a cycle whose QP had no solution, the next
finds the least violation first: the same plan, without first spending the solver's limits on a QP
that has none (where no slack is needed, the hard QP is solved as it is).  Where there is no plan
even so (a later knot's constraints, which the state cannot have broken, or the solver failing), the
previous plan, shifted to now, gives the torques (MPCResult.fallback says why); MPCError only where
there is no previous plan (the first).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import time as _time
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
import scipy.sparse as sp

from ..algorithms.constrained_dynamics import contact_frame_kinematics_many
from ..arguments import Settings, positive_number, real_array
from ..algorithms.kinematics import frame_poses
from ..contact_margins import MarginEvaluator
from ..contacts import Contact
from ..gait import Gait
from ..impacts import ImpactMap, touchdown
from ..linearizer import Linearizer
from ..model import Model, State, floating_base_of
from ..spatial import se3_exp_many
from . import pendulum
from .condensing import CondensedCost, condense_into, constraint_rows_into, perturbations_into
from .horizon_states import differences, perturbed, pose_logs_into, stacked, unstacked
from .knots import NO_FRAMES, KnotKernels
from .scale import RobotScale

FACETS = 4  # the friction pyramid's facets (and one unilateral row) per foot
ROWS_PER_FOOT = FACETS + 1
TOUCHDOWN_RESTITUTION = 0.0
"""e of the touchdowns' impact maps: a foot lands without bouncing."""
KNOT_SEQUENCES = 1024
"""The knots' contact sequences whose compiled call's inputs an MPC keeps (a gait meets a few dozen)."""


class _Unsolved(Exception):
    """The QP solver failed even with the constraints soft: the cycle falls back on the previous plan."""


SOFT_KNOTS = 3
"""The knots whose constraints may be soft: those the measured state can violate (knot 0: the state
itself; the next: what it can still reach).  A later knot's cannot be (a setting that cannot work)."""
SLACK_REGULARIZATION = 1e-6
"""δ of the least-violation QP's ½δ‖(y, σ)‖² (it is otherwise linear)."""
SLACK_ROOM = (0.01, 0.05)
"""The relative room over the least violation the plan's QP is given, tried in turn."""
PLAN_ITERATIONS = (20, 20)
"""ProxSuite's most outer and inner iterations on a plan's QP.  A solvable plan takes at most 17 outer
and 72 in all (the four walkers, pushed and turning, on both plants); a QP without a solution is said
after at most 420 (ProxSuite counts one more per outer iteration), not after ProxSuite's own limits of
10 000 × 1 500 (a Talos cycle that tries a QP without a solution: a median 0.2 s, 0.3 s with 50 outer;
docs/mpc.md)."""
PLAN_CHANGES = 500
"""DAQP's most changes of its active set on a plan's QP (a solvable one takes a few dozen from a cold
start, Talos's ill-conditioned QP in a turn 141)."""
LEAST_VIOLATION_CHANGES = 1000
"""DAQP's most changes of its active set on the least-violation QP (:meth:`WholeBodyMPC._solve_qp`)."""

SCREENING_ROUNDS = 2
"""The QPs on some of the rows a plan's QP solves before it takes them all (:meth:`WholeBodyMPC._run_solver`)."""
SCREENING_ROWS_PER_UNKNOWN = 4
"""A QP with fewer rows per unknown is solved whole at once.  Screened, the quadrupeds' QPs (2.4 rows per
unknown) took at most 0.1 ms less in the median but about twice the 99th percentile (a second and third QP where
the first breaks rows); Talos's (6–9 rows per unknown) a third of the median (docs/mpc.md)."""
SCREENED_VIOLATION = 1e-9
"""How far a row left out of the QP may be broken by its solution (the solvers' own tolerance, eps_abs)."""

RELATIVE_TOLERANCE = 1e-13
"""ProxSuite's eps_rel on a plan's QP (:meth:`WholeBodyMPC._proxsuite`)."""

SOLVERS = ("proxsuite", "daqp", "osqp")
"""The values of MPCSettings.solver."""


class MPCError(RuntimeError):
    """The QP has no solution: the message names the constraint and the knot."""


@dataclass
class MPCSettings(Settings):
    """How the MPC plans, the same for any legged robot: its forces, heights and weights are in the
    robot's own units (walking/scale.py), which the MPC takes from the model unless ``scale`` gives
    them.

    ``knot_dt`` [s] and ``knots`` K (the horizon is K·knot_dt); ``ground``: its height [m];
    ``base_height``: of the base above it [m] (None: as it stands in the gait's posture);
    ``friction`` μ of the planned forces' pyramid (inner) and ``min_normal_load``, the least normal
    force a held foot is planned to carry, in units of the robot's weight m g (both below the
    ground's, so that the forces the robot receives between knots stay inside the real cone);
    ``swing_lift``: a swinging foot's height at mid-swing, in units of the leg length ℓ;
    ``raibert``: the landing point's gain on the velocity error, in units of √(ℓ / g);
    ``torque_hold``: the knots each planned torque is held over (the QP's size: K·n / torque_hold);
    ``weights``: 1/σ² of each residual without units (scale.WEIGHTS; RobotScale.weights gives them
    units); ``scale``: the robot's size (scale.RobotScale; None: the model's, standing in the gait's
    posture); ``sole_size``: (length, width) [m] of the rectangle the centre of pressure of a sole
    held flat (a gait of "6d" contacts) is kept in, required for one, and ``sole_margin`` [m] how far
    inside its edges the planned centre of pressure stays (as the inner friction pyramid: the
    wrench a sole receives between knots moves it); ``blas_threads``: the
    threads numpy's BLAS may use within a cycle (1: the cycle's products are too small to share,
    and BLAS threads that wait for a core another process holds made a cycle 5–8× slower; None
    leaves numpy's setting alone).  WholeBodyMPC refuses, in one
    line naming it, a setting that cannot work; an attribute that is no setting is refused when it is
    set (arguments.Settings).

    ``solver``: the QP solver: "proxsuite" (the default: ProxSuite's dense solver), "daqp" (DAQP's dense dual
    active-set solver: faster on every walker's QPs, 3.8× on the bundled quadruped's and 4–5× on Talos's, and
    a walk with it repeats bit for bit, where ProxSuite's last bits vary from solve to solve; docs/mpc.md) or
    "osqp"."""

    knot_dt: float = 0.015
    knots: int = 20
    ground: float = 0.0
    base_height: float | None = None
    friction: float = 0.6
    min_normal_load: float = 0.04
    swing_lift: float = 0.2
    raibert: float = 0.85
    solver: str = "proxsuite"  # or "daqp", "osqp"
    torque_hold: int = 2
    blas_threads: int | None = 1
    scale: RobotScale | None = None
    sole_size: tuple | None = None
    sole_margin: float = 0.005
    weights: dict = field(default_factory=lambda: {
        "base_xy": 0.1, "base_z": 1000.0, "roll_pitch": 400.0, "yaw": 25.0,
        "velocity_xy": 300.0, "velocity_z": 75.0, "rate_xy": 400.0, "yaw_rate": 1600.0,
        "posture": 10.0, "joint_velocity": 3.0, "foot_height": 4000.0, "foot_xy": 250.0, "landing_sliding": 300.0,
        "lifting_sliding": 300.0, "torque": 30.0,
        "sole": 400.0, "terminal": 3.0})


@dataclass
class References:
    """What a cycle's cost tracks, knot by knot (k = 0 … K; knot 0 is the measured state and costs
    nothing): base_poses (K+1, 4, 4) in the world, at the base height, level, moving with the
    command; twists (K+1, 6) the base's twist [v; ω] at each knot, in its reference's axes (the commanded
    one, on soles with the pendulum's sway sideways); held: the feet holding at knot 0 (names); posture
    (n,); swings[k]: per foot, (the fraction of its swing done, seconds until it lands) or None in
    stance; feet[k]: (foot index,
    height [m], landing (2,) in the world or None) of each swinging foot (and of each sole landing at
    knot k, where its contact closes: on the ground, at its landing point, flat); landings[k]: the
    indices of the feet landing at knot k (their contact closes there: knot k's state is the one before
    the impact), lifts[k]: of those lifted over the step before it (k ≥ 2);
    scales (K+1,): each knot's weight (the terminal's); the weights (1/σ²) of each residual.

    The weights: ``pose_weights`` (6,) and ``twist_weights`` (6,) of the base's pose and twist
    residuals, ``posture_weight`` of the joints' positions, ``joint_velocity_weight`` of their
    velocities, ``foot_height_weight`` and ``foot_xy_weight`` of a swinging foot's height and
    landing point, ``landing_sliding_weight`` and ``lifting_sliding_weight`` of a foot's velocity along
    the ground (in the world) as it lands and as it lifts, ``torque_weight`` of the torques,
    ``sole_weight`` of a swinging sole's tilt and heading."""

    base_poses: np.ndarray
    twists: np.ndarray
    held: frozenset
    posture: np.ndarray
    swings: list
    feet: list
    landings: list
    lifts: list
    scales: np.ndarray
    pose_weights: np.ndarray
    twist_weights: np.ndarray
    posture_weight: float
    joint_velocity_weight: float
    foot_height_weight: float
    foot_xy_weight: float
    landing_sliding_weight: float
    lifting_sliding_weight: float
    torque_weight: float
    sole_weight: float


@dataclass
class MPCResult:
    """torques (n,): what the robot gets now; states, torques_plan: the plan (K+1 States, made from its
    stacked arrays ``stacked_states`` (horizon_states) when first read; (K, n)); timings [s]: linearization,
    assembly, solve; iterations of the solver; dynamics_residual:
    ``max |δz_{k+1} − A δz_k − B δτ_k − c_k|``; min_margin: the smallest planned margin beyond its bound
    (linearized; ≥ 0 up to the solver's tolerance, negative where the constraints were soft);
    slack: the largest slack the soft QP used (0: the constraints held; module docstring) and
    softened: the rows it was largest on, "kind what at knot k" (None: none); fallback: why the
    torques come from the previous plan, shifted, instead of a new one (None: a new plan)."""

    torques: np.ndarray
    stacked_states: tuple
    torques_plan: np.ndarray
    timings: dict
    iterations: int
    dynamics_residual: float
    min_margin: float
    slack: float = 0.0
    softened: str | None = None
    fallback: str | None = None

    @functools.cached_property
    def states(self) -> list:
        """The plan's K+1 States."""
        return unstacked(*self.stacked_states)


def _stacked_rows(blocks, width: int) -> tuple:
    """Row blocks [(k, F (r, ≤ width), f (r,))] on the perturbation δz_k of knot k (k: one knot, or each row's
    (r,)), stacked: (the knot of each row (R,), F (R, width), each block's zero-padded on the right, f (R,))."""
    count = sum(len(f) for _, _, f in blocks)
    knots, rows, values = np.empty(count, dtype=np.int64), np.zeros((count, width)), np.empty(count)
    row = 0
    for k, F, f in blocks:
        end = row + len(f)
        knots[row:end], rows[row:end, :F.shape[1]], values[row:end] = k, F, f
        row = end
    return knots, rows, values


def _state_residuals(ref: References, x: tuple) -> np.ndarray:
    """(K, 2N): of the states 1 … K of the K+1 states' stacked arrays ``x`` (horizon_states),
    [log(H_ref,k⁻¹ H_k), s − posture, v − twist, r]."""
    H, s, v, r = (a[1:] for a in x)
    n = s.shape[1]
    residuals = np.empty((len(s), 12 + 2 * n))
    pose_logs_into(ref.base_poses[1:], H, residuals[:, :6])
    residuals[:, 6:6 + n], residuals[:, 6 + n:12 + n], residuals[:, 12 + n:] = s - ref.posture, v - ref.twists[1:], r
    return residuals


def yaw_of(H: np.ndarray) -> float:
    """The yaw [rad] of the pose ``H`` (4, 4): the heading of its x axis in the world's xy plane, in
    (−π, π]."""
    return math.atan2(H[1, 0], H[0, 0])


def planar_pose(x: float, y: float, z: float, yaw: float) -> np.ndarray:
    """The pose H (4, 4) at position (``x``, ``y``, ``z``) [m] in the world, level, heading ``yaw``
    [rad] about the world's z."""
    H = np.eye(4)
    H[:3, :3] = [[math.cos(yaw), -math.sin(yaw), 0.0], [math.sin(yaw), math.cos(yaw), 0.0], [0.0, 0.0, 1.0]]
    H[:3, 3] = x, y, z
    return H


@dataclass
class _Held:
    """Per contact set: its Contacts, its Linearizer (with the knots' step), its ImpactMap (a
    touchdown onto it; None without contacts), the evaluator of its planned forces' margins and
    their lower bounds (min_normal_force on the unilateral rows, else 0), the indices of its feet
    in the MPC's, and its index in the MPC's knots.KnotKernels."""

    contacts: tuple
    linearizer: Linearizer
    impacts: ImpactMap | None
    margins: MarginEvaluator | None
    floor: np.ndarray | None
    indices: list
    index: int = -1  # (in the MPC's KnotKernels)


def mpc_contact_sets(gait: Gait, feet) -> tuple:
    """The sets of feet (tuples of names in the order of ``feet``) the MPC of ``gait`` holds: the gait's
    own (gait.Gait.contact_sets), and between two of its phases every set on the way from one to the
    next, where the measured contacts of a cycle's first knot can be (of a trot's pair one foot landing,
    or lifting, before the other: three feet), in the order met."""
    order = tuple(feet)
    stances = [set(phase.stance) for phase in gait.phases]
    found = dict.fromkeys(gait.contact_sets(order))
    for before, after in zip(stances, stances[1:] + stances[:1]):
        changing = [f for f in order if (f in before) != (f in after)]
        for chosen in itertools.product((False, True), repeat=len(changing)):
            if any(chosen) and not all(chosen):  # (neither the phase before nor after: a set on the way)
                moved = {f for f, moving in zip(changing, chosen) if moving}
                found.setdefault(tuple(f for f in order if (f in before) != (f in moved)))
    return tuple(found)


def mpc_kernels(gait: Gait, feet) -> list:
    """(contacts, kind) of each generated kernel the MPC of ``gait`` on ``feet`` (frame names) runs: every
    contact set it holds (:func:`mpc_contact_sets`; none for no foot), its constrained linearization and its impact map
    (robot_linearization.kernel_choice's kinds); what `robot-linearization cache build` builds ahead."""
    return [(tuple(Contact(f, gait.contact) for f in stance), kind) for stance in mpc_contact_sets(gait, feet)
            if stance for kind in ("constrained", "impact")]


class WholeBodyMPC:
    """The MPC of the module docstring for ``model`` (a floating base) walking ``gait`` (gait.Gait) on
    ``feet`` (frame names: point contacts, world-aligned), torques limited to ``effort_limits`` (n,)
    [N m or N], planned with ``settings`` (MPCSettings; None: the defaults).  command(): the base's
    velocity to follow; solve(): one control cycle.

    What a robot must be given: its feet, its posture (in the gait; the URDF's zero otherwise) and
    finite effort limits (rl.urdf.effort_limits reads the URDF's); its size comes from the model
    (``scale``: the RobotScale used).  ValueError in one line, naming it, for a gait that does not
    fit the model (gait.Gait.check), effort limits that are not one positive finite number per
    joint, or a setting that cannot work."""

    def __init__(self, model: Model, gait: Gait, feet, effort_limits, settings: MPCSettings | None = None):
        self.model, self.gait, self.feet = model, gait, tuple(feet)
        self.settings = settings or MPCSettings()
        gait.check(model, self.feet)
        self.effort_limits = np.asarray(effort_limits, dtype=float)
        if self.effort_limits.shape != (model.n_joints,) or not (self.effort_limits > 0).all():
            raise ValueError(f"effort_limits: expected {model.n_joints} positive limits, one per joint, got "
                             f"{self.effort_limits.tolist()}")
        if not np.isfinite(self.effort_limits).all():
            joint = model.joint_names[int(np.argmin(np.isfinite(self.effort_limits)))]
            raise ValueError(f"effort_limits: joint {joint!r} has no finite limit (its URDF gives none): give one "
                             "per joint")
        self._check_settings()
        # the rectangle the planned centre of pressure of a sole stays in
        sole_size = self.settings.sole_size
        self._planned_sole = None if sole_size is None else \
            tuple(float(side) - 2 * self.settings.sole_margin for side in sole_size)
        self.posture = gait.joint_posture(model.joint_names)
        stand = State(base_pose=np.eye(4), joint_positions=self.posture, base_twist=np.zeros(6),
                      joint_velocities=np.zeros(model.n_joints))
        self.foot_offsets = frame_poses(model, stand, list(self.feet))[:, :3, 3]  # in the base frame, standing
        settings = self.settings
        self.scale = settings.scale or RobotScale.of(model, self.posture, self.feet)
        # the settings in the robot's units
        self.weights = self.scale.weights(settings.weights)
        self.base_height = -float(self.foot_offsets[:, 2].mean()) if settings.base_height is None \
            else settings.base_height
        self.min_normal_force = settings.min_normal_load * self.scale.weight  # [N]
        self.swing_height = settings.swing_lift * self.scale.leg_length  # [m]
        self.raibert = settings.raibert * self.scale.time  # [s]
        # each phase's feet standing, each weighing 1/their number (their middle: sides @ weights) (P, f)
        stances = np.array([[foot in phase.stance for foot in self.feet] for phase in gait.phases], dtype=float)
        self._stance_weights = stances / np.maximum(stances.sum(axis=1, keepdims=True), 1.0)
        self._one_sole = stances.sum(axis=1) == 1  # (the phases on one foot) (P,)
        # the times of the soles' sway after a cycle's [s]: its knots', then every 4 knots over a gait period beyond,
        # and the steps from each to the next (the last held for ever)
        h, K = settings.knot_dt, settings.knots
        ahead = 4 * h * np.arange(1, int(gait.period / (4 * h)) + 1)
        self._sway_times = np.concatenate([np.arange(K + 1) * h, K * h + ahead])
        self._sway_steps = np.diff(self._sway_times, append=self._sway_times[-1] + 4 * h)
        # how long each foot stands in a cycle [s]
        self._stance_durations = np.array([gait.period - gait.swing_duration(f) for f in self.feet])
        self._foot_contacts = tuple(Contact(f) for f in self.feet)
        self._sole_contacts = tuple(Contact(f, "6d") for f in self.feet) if gait.contact == "6d" else None
        # each foot's frame in its body's axes
        self._foot_frames = np.array([np.reshape(model.frames[f][1], (4, 4)) for f in self.feet])
        # the command: forward, lateral [m/s], yaw rate [rad/s], in the base's heading
        self.velocity: NDArray[np.float64] = np.zeros(3)
        self._contact_sets: dict = {}  # feet -> _Held
        self._knot_kernels = KnotKernels(model, self.settings.knot_dt)  # (every set: the knots' compiled call)
        self._touchdowns: dict = {}  # (feet held before, feet held) -> a touchdown?
        self._margin_labels: dict = {}  # (knot, a contact set's margin labels) -> the QP's labels of its rows
        self._compiled_knots: dict = {}  # the knots' (contacts, previous) -> their compiled call's inputs (generated)
        self._scheduled: tuple = (None, ())  # (the time of a cycle, _schedule's)
        self._knot_times = np.arange(settings.knots + 1) * settings.knot_dt  # (after a cycle's time) [s]
        self._stances = [tuple(f for f in self.feet if f in phase.stance) for phase in gait.phases]  # (in feet's order)
        self._knot_sequences: dict = {}  # (the knots' phases, contacts now, held now) -> :meth:`_knot_contacts`'
        self._plan: tuple | None = None  # (time, the states' stacked arrays, torques)
        self._held_before = True  # whether the last cycle's QP kept its constraints (:meth:`_solve_qp`)
        N, n, K = model.n_velocities, model.n_joints, self.settings.knots
        self.sizes = (2 * N, n, K)
        # the QP's unknowns: y_m (n), the torque perturbation held over knots starts[m] … starts[m+1]−1
        self._starts = np.arange(0, K, self.settings.torque_hold)
        self._groups = np.repeat(np.arange(len(self._starts)), np.diff(np.append(self._starts, K)))  # knot -> m
        self._reach = np.array([self._reached(k) for k in range(K + 1)])
        self._cost = CondensedCost(self._reach, 2 * N)
        # what each contact set the MPC holds needs (mpc_contact_sets), made and run once now (at the standing
        # posture), so that the first control cycle does not pay for making them and loading their kernels; with
        # kernel="auto" their generated kernels (mpc_kernels) are built in the background from here on
        x = stacked([stand])
        for feet in mpc_contact_sets(gait, self.feet):
            self._linearize(x, 0, np.zeros(n), feet, feet, np.empty((2 * N, 2 * N)), np.empty((2 * N, n)), np.empty(N))
            impacts = self._held(feet).impacts
            if impacts is not None:
                impacts.impact_arrays(x[1][0], x[3][0], base_pose=x[0][0], base_twist=x[2][0])
        self._foot_kinematics(stacked([stand]))
        self._knot_kernels.load()
        # the assembly's compiled calls loaded now too (tens of ms each in a new process), on zero rows
        Gamma, d = self._condense(np.zeros((K, 2 * N, 2 * N)), np.zeros((K, 2 * N, n)), np.zeros((K, 2 * N)))
        self._condensed_cost(Gamma, d, np.zeros((K, 2 * N)), np.zeros((K, 2 * N)), [(1, np.zeros((1, N)), np.zeros(1))])
        self._constraints(Gamma, d, [(0, np.zeros((1, 2 * N)), np.zeros((1, n)), np.zeros(1))])

    def _check_settings(self) -> None:
        """ValueError in one line, naming it, for a setting that cannot work; the solver imported."""
        settings = self.settings
        for name in ("knots", "torque_hold", "blas_threads"):
            value = getattr(settings, name)
            if value is None and name == "blas_threads":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                what = " of threads or None" if name == "blas_threads" else ""
                raise ValueError(f"{name}: expected a positive number{what}, got {value!r}")
        for name, unit in (("knot_dt", "s"), ("friction", ""), ("swing_lift", "leg lengths")):
            positive_number(getattr(settings, name), name, unit)
        for name in ("min_normal_load", "raibert", "ground", "sole_margin"):
            value = real_array(getattr(settings, name), name, (), what="a finite number")
            if value < 0 and name != "ground":
                raise ValueError(f"{name}: expected a non-negative number, got {getattr(settings, name)!r}")
        if settings.base_height is not None:
            positive_number(settings.base_height, "base_height", "m")
        if settings.sole_size is not None and not np.all(2 * settings.sole_margin < real_array(
                settings.sole_size, "sole_size", (2,), what="(length, width) in m")):
            raise ValueError(f"sole_margin: {settings.sole_margin:g} m leaves no room for the centre of pressure in a "
                             f"sole of {settings.sole_size} m")
        if settings.scale is not None and not isinstance(settings.scale, RobotScale):
            raise ValueError(f"scale: expected a walking.scale.RobotScale or None, got {type(settings.scale).__name__}")
        threads = settings.blas_threads
        self._blas = contextlib.nullcontext if threads is None else functools.partial(
            _solver_module("threadpoolctl").ThreadpoolController().limit, limits=int(threads), user_api="blas")
        if settings.solver not in SOLVERS:
            raise ValueError(f"solver: expected one of {', '.join(map(repr, SOLVERS))}, got {settings.solver!r}")
        _solver_module(settings.solver)  # (imported now: a missing solver is said here, and the first cycle
        # does not pay for the import)

    def command(self, forward: float = 0.0, lateral: float = 0.0, yaw_rate: float = 0.0) -> None:
        """The base velocity to follow: [m/s] along its heading and to its left, [rad/s] about z.
        ValueError in one line for a value that is not a finite number.

        ``forward`` [m/s], ``lateral`` [m/s] and ``yaw_rate`` [rad/s]: the body's commanded
        velocity."""
        self.velocity = np.array([real_array(value, name, (), what="a finite number")
                                  for name, value in (("forward", forward), ("lateral", lateral),
                                                      ("yaw_rate", yaw_rate))], dtype=float)

    def reset(self) -> None:
        """Forget the plan: the next cycle plans from the measured state at rest, as the first does."""
        self._plan = None
        self._held_before = True

    # ---- the knots -----------------------------------------------------------------------------
    def _knot_contacts(self, time: float, contacts_now, held_now) -> tuple:
        """The feet held over each knot's step (the first: what the simulation holds now) and the
        set before it, made once per (the knots' phases, contacts_now, held_now) (KNOT_SEQUENCES of them)."""
        key = (self._schedule(time)[1], tuple(contacts_now), tuple(held_now))
        found = self._knot_sequences.get(key)
        if found is None:
            sets = [key[1]] + [self._stances[p] for p in key[0][1:]]
            found = tuple((sets[k], key[2] if k == 0 else sets[k - 1]) for k in range(len(sets)))
            if len(self._knot_sequences) >= KNOT_SEQUENCES:
                self._knot_sequences.clear()
            self._knot_sequences[key] = found
        return found

    def _schedule(self, time: float) -> tuple:
        """The gait's (phase, fraction) (gait.Gait.phase_at) at each knot k = 0 … K of the cycle at ``time``, and
        the phases' indices in the gait (a tuple), kept for the last time asked."""
        if self._scheduled[0] != time:
            indices, fraction = self.gait.phases_at(time + self._knot_times + 1e-9)
            index = tuple(indices.tolist())
            phases = self.gait.phases
            self._scheduled = (time, ([(phases[i], f) for i, f in zip(index, fraction.tolist())], index))
        return self._scheduled[1]

    def _shifted_plan(self, time: float, state: State):
        """x̄_k, τ̄_k: the previous plan at this cycle's knot times (on the group, between its
        knots), the measured state first, as the K+1 states' stacked arrays (horizon_states), and the
        torques (K, n); at the start the measured state throughout and zero torques."""
        _, n, K = self.sizes
        h = self.settings.knot_dt
        pose, twist = floating_base_of(state)
        measured = (pose, state.joint_positions, twist, state.joint_velocities)
        if self._plan is None:
            return tuple(np.repeat(a[None], K + 1, axis=0) for a in measured), np.zeros((K, n))
        start, states, torques = self._plan  # (states: their stacked arrays)
        position = (time + np.arange(K + 1) * h - start) / h
        i = np.minimum(np.floor(position).astype(int), K - 1)
        fraction = np.clip(position - i, 0.0, 1.0)
        before, after = (tuple(x[i[1:]] for x in states), tuple(x[i[1:] + 1] for x in states))
        x = tuple(np.empty_like(a, shape=(K + 1,) + a.shape[1:]) for a in states)
        for a, value in zip(x, measured):
            a[0] = value
        perturbed(before, fraction[1:, None] * differences(before, after), tuple(a[1:] for a in x))
        return x, torques[np.minimum(i[:K] + (fraction[:K] > 0.5), K - 1)]

    def _steps(self, x: tuple, torques, knots: tuple, soles=None) -> tuple:
        """The steps from the states k of the stacked arrays (horizon_states) ``x`` with torques[k], per knot k of
        the tuple ``knots`` ((contacts, previous) of each, as :meth:`_knot_contacts` gives them): A_d (K, 2N,
        2N), B_d (K, 2N, n), the knots' margins as rows (:meth:`_margin_rows`), and the next states' stacked
        arrays.  ``soles``: :meth:`_foot_kinematics`' at these states (their margins' frames), or None.  In one
        compiled call where every knot's kernels run generated (:meth:`_compiled_steps`), else knot by knot
        (:meth:`_linearize`)."""
        h, (two_N, n, _), K = self.settings.knot_dt, self.sizes, len(knots)
        A_d, B_d, nu_dot = np.empty((K, two_N, two_N)), np.empty((K, two_N, n)), np.empty((K, two_N // 2))
        start = (x[0], x[1], x[2].copy(), x[3].copy())  # (the velocities a touchdown's impact changes: copies)
        frames = None
        if soles is not None:  # (the soles' rotations, and their J_ω in their own axes: R_cᵀ J_ω)
            rotations, J_w = soles[0][:K], soles[1][:K]
            frames = (rotations, np.einsum("kfji,kfjn->kfin", rotations, J_w.reshape(K, len(self.feet), 3, -1)))
        rows = self._compiled_steps(start, torques, knots, frames, (A_d, B_d, nu_dot))
        if rows is None:
            start = (x[0], x[1], x[2].copy(), x[3].copy())  # (afresh: a compiled call that stopped changed some)
            rows = self._margin_rows([self._linearize(start, k, torques[k], contacts, previous, A_d[k], B_d[k],
                                                      nu_dot[k], frames)
                                      for k, (contacts, previous) in enumerate(knots)])
        # the steps themselves (rl.step's semi-implicit Euler) from the accelerations, all at once
        v, r = start[2] + h * nu_dot[:, :6], start[3] + h * nu_dot[:, 6:]
        following = (start[0] @ se3_exp_many(h * v), start[1] + h * r, v, r)
        return A_d, B_d, rows, following

    def _compiled_steps(self, x: tuple, torques, knots: tuple, frames, out: tuple) -> tuple | None:
        """:meth:`_steps`' linearizations in one compiled call (knots.knot_steps_into) into out = (A_d, B_d, ν̇),
        and at a touchdown the post-impact velocities into x's; the margin rows (:meth:`_margin_rows`).  None
        where a knot's kernels do not run generated (yet) or a generated kernel has no result at its state
        (then knot by knot: the generic kernel says why)."""
        found = self._compiled_knots.get(knots) or self._knots_compiled(knots)
        if found is None or (frames is None and found[3]):  # (a turning cone reads the frames)
            return None
        addresses, sets, touchdowns, _, labels = found
        rows = self._knot_kernels.steps_into(addresses, sets, touchdowns, TOUCHDOWN_RESTITUTION, x, torques,
                                             frames or NO_FRAMES, out)
        return None if rows is None else rows[:4] + (labels, rows[4])

    def _knots_compiled(self, knots: tuple) -> tuple | None:
        """What :meth:`_compiled_steps` hands the compiled call for ``knots`` ((contacts, previous) of each):
        (their kernels' addresses (K, 2), contact sets (K,), touchdowns (K,), whether a set's margins read the
        frames, the margin rows' labels), kept once every kernel runs generated (KNOT_SEQUENCES of them); None
        before."""
        K, kernels = len(knots), self._knot_kernels
        addresses, sets, touchdowns = np.empty((K, 2), dtype=np.int64), np.empty(K, dtype=np.int64), np.empty(K, bool)
        for k, (contacts, previous) in enumerate(knots):
            held = self._held(contacts)
            landing = self._landing(previous, contacts)
            found = kernels.addresses(held.index, held.linearizer, held.impacts if landing else None)
            if found is None:
                return None
            addresses[k], sets[k], touchdowns[k] = found, held.index, landing
        margins = (self._contact_sets[contacts].margins for contacts, _ in knots)
        labels = self._labels((k, m.layout.labels) for k, m in enumerate(margins) if m is not None)
        if len(self._compiled_knots) >= KNOT_SEQUENCES:
            self._compiled_knots.clear()
        entry = self._compiled_knots[knots] = (addresses, sets, touchdowns, bool(kernels.turning[sets].any()), labels)
        return entry

    def _margin_rows(self, margins: list) -> tuple:
        """The knots' margins [(ContactMargins or None, their lower bounds) per knot] as rows m + F δz_k + T δτ_k:
        (each row's knot k (R,), F (R, 2N), T (R, n), its lower bound less m (R,), its QP label, m (R,))."""
        two_N, n, _ = self.sizes
        held = [(k, margins_k, floor) for k, (margins_k, floor) in enumerate(margins) if margins_k is not None]
        if not held:
            return np.empty(0, dtype=np.int64), np.empty((0, two_N)), np.empty((0, n)), np.empty(0), [], np.empty(0)
        labels = self._labels((k, margins_k.labels) for k, margins_k, _ in held)
        return (np.repeat([k for k, _, _ in held], [len(m.labels) for _, m, _ in held]),
                np.concatenate([m.state_jacobian for _, m, _ in held]),
                np.concatenate([m.input_jacobian for _, m, _ in held]),
                np.concatenate([floor - m.margins for _, m, floor in held]), labels,
                np.concatenate([m.margins for _, m, _ in held]))

    def _landing(self, previous: tuple, contacts: tuple) -> bool:
        """Whether a knot holding ``contacts`` after ``previous`` starts with a touchdown's impact (a foot
        lands: rl.impacts.touchdown), made once per pair."""
        landing = self._touchdowns.get((previous, contacts))
        if landing is None:
            landing = self._touchdowns[previous, contacts] = touchdown(previous, contacts)
        return landing

    def _linearize(self, x: tuple, k: int, torques, contacts, previous, A_d, B_d, nu_dot, frames=None):
        """(the margins (ContactMargins, or None without contacts), their lower bounds) of knot k at the state
        k of the stacked arrays (horizon_states) x = (H, s, v, r); its step's A_d (2N, 2N), B_d (2N, n) and ν̇ (N,) into
        those given, and at a touchdown the post-impact velocities, which the step starts from, into v[k], r[k].
        ``frames``: every foot's rotation (K, f, 3, 3) and J_ω in its own axes (K, f, 3, N) (soles), or None."""
        H, s, v, r = x[0][k], x[1][k], x[2][k], x[3][k]
        held = self._held(contacts)
        jump = None
        if self._landing(previous, contacts) and held.impacts is not None:  # (a set a foot lands in holds it)
            # a touchdown: the step starts from the post-impact state, A_d = A_d(x⁺)·A_impact (rl.linearize's
            # with previous_contacts, docs/impacts.md)
            jump = held.impacts.impact_arrays(s, r, base_pose=H, base_twist=v)
            v[:], r[:] = jump.base_twist, jump.joint_velocities
        lin = held.linearizer.linearize_arrays(s, r, torques, base_pose=H, base_twist=v)
        assert lin.A_d is not None and lin.B_d is not None  # (the knots' Linearizer has their step)
        if jump is not None:
            np.matmul(lin.A_d, jump.A, out=A_d)
        else:
            A_d[...] = lin.A_d
        B_d[...] = lin.B_d
        nu_dot[:6], nu_dot[6:] = lin.base_acceleration, lin.joint_accelerations
        if held.margins is None:
            return None, held.floor
        if frames is None:
            return held.margins(lin), held.floor
        return held.margins(lin, (frames[0][k, held.indices], frames[1][k, held.indices])), held.floor

    def _held(self, feet) -> _Held:
        """What the MPC keeps for the contact set ``feet`` (a tuple of foot names), made once."""
        held = self._contact_sets.get(feet)
        if held is None:
            contacts = tuple(Contact(f, self.gait.contact) for f in feet)
            margins = (MarginEvaluator(self.model, contacts, friction=self.settings.friction, facets=FACETS,
                                       sole_size=self._planned_sole) if contacts else None)
            floor = None if margins is None else np.array(
                [self.min_normal_force if label.endswith(":unilateral") else 0.0
                 for label in margins.layout.labels])
            held = self._contact_sets[feet] = _Held(
                contacts, Linearizer(self.model, contacts=contacts or None, dt=self.settings.knot_dt),
                ImpactMap(self.model, contacts, TOUCHDOWN_RESTITUTION) if contacts else None, margins, floor,
                [self.feet.index(f) for f in feet])
            held.index = self._knot_kernels.add(held.linearizer, margins, floor, held.indices)
        return held

    def _foot_kinematics(self, x: tuple) -> tuple:
        """At the K states of the stacked arrays (horizon_states) x, in one compiled call: the feet's (positions
        (K, f, 3), J (K, 3f, N)) in the world, and for soles (a gait of "6d" contacts) their (rotations (K, f, 3,
        3) in the world, J_ω (K, 3f, N) of their angular velocities in the world), None for point feet (a
        sole's rows are [v; ω]: its point's J and its J_ω both)."""
        if self._sole_contacts is None:
            positions, J, _ = contact_frame_kinematics_many(self.model, self._foot_contacts, x[0], x[1],
                                                            self._foot_frames)
            return (positions, J), None
        positions, J, rotations = contact_frame_kinematics_many(self.model, self._sole_contacts, x[0], x[1],
                                                                self._foot_frames)
        K, f = J.shape[0], len(self.feet)
        rows = J.reshape(K, f, 2, 3, -1)
        return (positions, rows[:, :, 0].reshape(K, 3 * f, -1)), (rotations, rows[:, :, 1].reshape(K, 3 * f, -1))

    def _sole_rows(self, ref: References, soles):
        """The rows of every sole swinging at a knot k = 1 … K (or landing there), all knots at once: each row's
        knot (3s,), the residuals (3s,) and their Jacobian (3s, N), three rows per sole and knot: its tilt, the
        horizontal components of its z axis a = R e_z (d a = −[a]× J_ω δz), and φ (ψ − ψ*), φ the fraction
        of its swing done, ψ = atan2(R₁₀, R₀₀) its heading (dψ = ω_z − R₂₀ (R₀₀ ω_x + R₁₀ ω_y) / (R₀₀² + R₁₀²),
        ω = J_ω δz) and ψ* the base reference's heading when it lands (a sole turns over its swing, not as it
        lifts), [rad].  ``soles``: :meth:`_foot_kinematics`' at the K+1 knots.  None for point feet or no sole
        swinging."""
        pairs = [] if soles is None else [(k, i) for k in range(1, len(ref.feet)) for i, _, _ in ref.feet[k]]
        if not pairs:
            return None
        knots, indices = np.array(pairs).T
        R = soles[0][knots, indices]  # (P, 3, 3)
        J = soles[1].reshape(len(soles[1]), len(self.feet), 3, -1)[knots, indices]  # (P, 3, N)
        a, yaw, rate, h = R[:, :, 2], yaw_of(ref.base_poses[0]), ref.twists[0, 5], self.settings.knot_dt
        fractions, turned = [], []
        for (k, i), cosine, sine in zip(pairs, R[:, 0, 0].tolist(), R[:, 1, 0].tolist()):
            fraction, remaining = ref.swings[k][i] or (1.0, 0.0)  # (landing at knot k)
            fractions.append(fraction)
            turned.append(fraction * math.remainder(math.atan2(sine, cosine) - (yaw + rate * (k * h + remaining)),
                                                    2 * math.pi))
        phi, c, s = np.array(fractions)[:, None], R[:, 0, 0, None], R[:, 1, 0, None]
        rows = np.stack([a[:, 2, None] * J[:, 1] - a[:, 1, None] * J[:, 2],  # −[a]× J, rows x, y
                         a[:, 0, None] * J[:, 2] - a[:, 2, None] * J[:, 0],
                         phi * (J[:, 2] - R[:, 2, 0, None] * (c * J[:, 0] + s * J[:, 1]) / (c ** 2 + s ** 2))], axis=1)
        return (np.repeat(knots, 3), np.column_stack([a[:, 0], a[:, 1], turned]).ravel(),
                rows.reshape(3 * len(pairs), -1))

    def _sliding_rows(self, ref: References, x: tuple, feet, k: int) -> list:
        """[(weight, v, F)] of the feet landing at knot k (ref.landings) and of those lifted over the step
        before it (ref.lifts), each group that has one: v (2t,) the velocities along the ground, in the world,
        of its t feet, v = J ν_k, and F (2t, 2N) their Jacobian in δz_k: J on the velocity (the positions' J of
        :meth:`_foot_kinematics` is the velocities' in ν, the base twist in the base frame), nothing on the
        configuration (a Gauss-Newton row: the cost drives v to zero, where what moving the configuration changes
        of v vanishes with v)."""
        N = self.sizes[0] // 2
        groups = []
        for weight, indices in ((ref.landing_sliding_weight, ref.landings[k]), (ref.lifting_sliding_weight,
                                                                                 ref.lifts[k])):
            if not indices or weight == 0.0:
                continue
            rows = [3 * i + axis for i in indices for axis in (0, 1)]
            J = feet[1][k][rows]
            F = np.zeros((len(rows), 2 * N))
            F[:, N:] = J
            groups.append((weight, J @ np.concatenate([x[2][k], x[3][k]]), F))
        return groups

    # ---- one cycle -----------------------------------------------------------------------------
    def solve(self, time: float, state: State, contacts_now, held_now) -> MPCResult:
        """One control cycle at ``time`` [s] from the measured ``state``; contacts_now: the feet
        that hold over the next step, held_now: those that held over the last (a touchdown now
        when contacts_now has more).  Where the QP has no solution its constraints are made soft, and
        where the solver fails the previous plan gives the torques (the module docstring; MPCResult
        says which); MPCError (naming the constraint and knot) only where there is no previous plan."""
        with self._blas():
            return self._cycle(time, state, contacts_now, held_now)

    def _cycle(self, time: float, state: State, contacts_now, held_now) -> MPCResult:
        two_N, n, K = self.sizes
        clock = _time.perf_counter()
        x, torques = self._shifted_plan(time, state)
        knots = self._knot_contacts(time, contacts_now, held_now)
        feet, soles = self._foot_kinematics(x)  # (the swing feet's cost and the ground's rows; the soles' margins)
        A_d, B_d, margins, following = self._steps(tuple(a[:K] for a in x), torques, knots[:K], soles)
        defects = differences(tuple(a[1:] for a in x), following)
        ref = self.references(time, state, contacts_now)
        linearized = _time.perf_counter()
        Gamma, d = self._condense(A_d, B_d, defects)
        H, g, C, lower, labels = self._qp(ref, x, torques, margins, feet, Gamma, d, soles)
        assembled = _time.perf_counter()
        try:
            y, iterations, slack, softened = self._solve_qp(H, g, C, lower, torques, labels)
        except _Unsolved as unsolved:
            return self._fallback(time, state, str(unsolved), clock, linearized, assembled)
        solved = _time.perf_counter()
        dz = np.empty_like(d)
        perturbations_into(Gamma.transpose(0, 2, 1), d, self._reach, y, dz)
        dtau = y.reshape(-1, n)[self._groups]
        residual = float(np.abs(dz[1:] - (A_d @ dz[:-1, :, None])[:, :, 0] - (B_d @ dtau[:, :, None])[:, :, 0]
                                - defects).max())
        rows = len(margins[3])
        min_margin = float((C[:rows] @ y - lower[:rows]).min()) if rows else math.inf  # (_qp's rows: margins first)
        plan = perturbed(x, dz)
        plan_torques = torques + dtau
        self._plan = (time, plan, plan_torques)
        return MPCResult(torques=plan_torques[0].copy(), stacked_states=plan, torques_plan=plan_torques,
                         timings={"linearization": linearized - clock, "assembly": assembled - linearized,
                                  "solve": solved - assembled},
                         iterations=iterations, dynamics_residual=residual, min_margin=min_margin, slack=slack,
                         softened=softened)

    def _fallback(self, time: float, state: State, reason: str, clock: float, linearized: float,
                  assembled: float) -> MPCResult:
        """The previous plan, shifted to ``time`` (its torques held), as the cycle's result, where the
        solver failed: MPCError where there is none (the first plan)."""
        if self._plan is None:
            raise MPCError(f"the MPC's QP has no solution: {reason}")
        x, torques = self._shifted_plan(time, state)
        solved = _time.perf_counter()
        return MPCResult(torques=torques[0].copy(), stacked_states=x, torques_plan=torques,
                         timings={"linearization": linearized - clock, "assembly": assembled - linearized,
                                  "solve": solved - assembled},
                         iterations=0, dynamics_residual=math.nan, min_margin=math.nan, slack=math.nan,
                         fallback=reason)

    def _condense(self, A_d, B_d, defects):
        """δz_k = Γ_k y + d_k (y: the held torque perturbations y_m stacked, δτ_k = y_m of knot k's
        group): Γ (K+1, 2N, M·n) (a transposed view of :func:`condense_into`'s), d (K+1, 2N), from δz_0 = 0
        and the knots' steps A_d (K, 2N, 2N), B_d (K, 2N, n) and defects (K, 2N)."""
        two_N, n, K = self.sizes
        Gamma_T, d = np.empty((K + 1, len(self._starts) * n, two_N)), np.empty((K + 1, two_N))
        condense_into(A_d, B_d, defects, self._reach, Gamma_T, d)
        return Gamma_T.transpose(0, 2, 1), d

    def _condensed_cost(self, Gamma, d, weights, residuals, foot_rows):
        """The cost Σ_k ½‖e_k + E_k δz_k‖² of knots 1 … K in the held torques y (δz_k = Γ_k y + d_k), as
        ½ yᵀHy + gᵀy + const: (H, g) = (RᵀR, Rᵀρ) of the stacked least-squares rows R = [E_k Γ_k] and
        ρ = [e_k + E_k d_k].  Each knot's rows: √w_k (r_k + δz_k) on every coordinate of z (weights,
        residuals: (K, 2N), the weights w_k ≥ 0) and, in foot_rows, (k, F (rows, r), f (rows,)):
        f + F δz_k[:r], r = N (the swing feet, on the configuration) or 2N (the feet's sliding velocities).
        (:class:`condensing.CondensedCost`: products over the columns each Γ_k reaches, the rest being zero.)"""
        return self._cost(Gamma.transpose(0, 2, 1), d, weights, residuals, *_stacked_rows(foot_rows, Gamma.shape[1]))

    def references(self, time: float, state: State, contacts_now=None) -> References:
        """What the cost of the cycle at ``time`` from ``state`` tracks (References), the feet
        ``contacts_now`` holding now (None: those the gait schedules; a sole the gait schedules that
        does not hold yet lands at knot 1)."""
        settings, K = self.settings, self.sizes[2]
        held = {c.frame for c in self.gait.contacts_at(time)} if contacts_now is None else set(contacts_now)
        h, w = settings.knot_dt, self.weights
        # the base's reference: the measured position and heading at the base height, moving with the command
        H0, base_twist = floating_base_of(state)
        yaw = yaw_of(H0)
        reference0 = planar_pose(H0[0, 3], H0[1, 3], settings.ground + self.base_height, yaw)
        twist = np.array([self.velocity[0], self.velocity[1], 0.0, 0.0, 0.0, self.velocity[2]])
        world_velocity = H0[:3, :3] @ base_twist[:3]
        command_world = planar_pose(0, 0, 0, yaw)[:3, :3] @ np.array([self.velocity[0], self.velocity[1], 0.0])
        base_poses = reference0 @ se3_exp_many(np.arange(K + 1)[:, None] * h * twist)
        twists = np.tile(twist, (K + 1, 1))
        if self._sole_contacts is not None:  # on soles, the base sways over the soles that stand
            self._sway_over_soles(time, state, held, base_poses, twists)
        swings: list[tuple] = []
        feet: list[list[tuple]] = []
        landings_at: list[tuple] = [()]  # (landings: the swing feet's landing points, below)
        lifts: list[tuple] = [()]
        landings: list[tuple] = []  # landings: (k, its entry in feet[k], foot, seconds until it lands)
        for k, (phase, fraction) in enumerate(self._schedule(time)[0]):
            swings.append(tuple(None if foot in phase.stance else (fraction, (1.0 - fraction) * phase.duration)
                                for foot in self.feet))
            if k > 0:  # the feet landing at knot k, and those lifted over the step before it
                landings_at.append(tuple(i for i, swing in enumerate(swings[k]) if swing is None and (
                    self.feet[i] not in held if k == 1 else swings[k - 1][i] is not None)))
                lifts.append(tuple(i for i, swing in enumerate(swings[k]) if k >= 2 and swing is not None
                                   and swings[k - 1][i] is not None and swings[k - 2][i] is None))
            swinging: list[tuple] = []
            for i, swing in enumerate(swings[k]):
                if k == 0 or swing is None and (self._sole_contacts is None or (
                        self.feet[i] in held if k == 1 else swings[k - 1][i] is None)):
                    continue
                # (a sole landing at knot k, where its contact closes: the end of its swing, flat on the ground;
                # point feet have no such cost: with it the quadrupeds' feet let go 1.1-3 times as often)
                fraction, remaining = (1.0, 0.0) if swing is None else swing
                if fraction >= 0.5:  # it aims at its landing point (below)
                    landings.append((k, len(swinging), i, k * h + remaining))
                swinging.append((i, settings.ground + self.swing_height * math.sin(math.pi * fraction), None))
            feet.append(swinging)
        if landings:  # under the hip in the middle of its stance, with Raibert's correction
            knots, entries, landing_feet, seconds = (np.array(column) for column in zip(*landings))
            # (where the base's reference will be half the foot's stance later, as it turns too)
            poses = reference0 @ se3_exp_many((seconds + 0.5 * self._stance_durations[landing_feet])[:, None] * twist)
            points = (poses[:, :3, :3] @ self.foot_offsets[landing_feet][:, :, None])[:, :2, 0] + poses[:, :2, 3] \
                + self.raibert * (world_velocity - command_world)[:2]
            for knot, j, point in zip(knots, entries, points):
                feet[knot][j] = feet[knot][j][:2] + (point,)
        scales = np.ones(K + 1)
        scales[K] = w["terminal"]
        return References(
            base_poses=base_poses, twists=twists, held=frozenset(held), posture=self.posture, swings=swings,
            feet=feet, landings=landings_at, lifts=lifts, scales=scales,
            pose_weights=np.array([w["base_xy"], w["base_xy"], w["base_z"], w["roll_pitch"], w["roll_pitch"],
                                   w["yaw"]]),
            twist_weights=np.array([w["velocity_xy"], w["velocity_xy"], w["velocity_z"], w["rate_xy"],
                                    w["rate_xy"], w["yaw_rate"]]),
            posture_weight=w["posture"], joint_velocity_weight=w["joint_velocity"], foot_height_weight=w["foot_height"],
            foot_xy_weight=w["foot_xy"], landing_sliding_weight=w["landing_sliding"],
            lifting_sliding_weight=w["lifting_sliding"], torque_weight=w["torque"],
            sole_weight=w["sole"])

    def _sway_over_soles(self, time: float, state: State, held: set, base_poses: np.ndarray,
                         twists: np.ndarray) -> None:
        """On soles: the base's reference poses (K+1, 4, 4) and twists (K+1, 6), which start at the measured
        base, moved sideways (along the heading's y axis) to the pendulum's bounded sway from there
        (pendulum.sway): its centre of pressure planned in the middle of the one sole that stands, moved
        across each double support from the soles it leaves to those that stand next, over the horizon
        and a gait period beyond.  A sole ``held`` (names) stands where it is measured in ``state`` until
        it lifts; one that lands later, its standing offset from the base beside the soles held."""
        K, gait = self.sizes[2], self.gait
        side = base_poses[0, :2, 1]  # (the reference is level: its y axis, in the plane)
        measured = frame_poses(self.model, state, list(self.feet))[:, :2, 3] @ side
        offsets = self.foot_offsets[:, 1]
        standing = [i for i, foot in enumerate(self.feet) if foot in held]
        base = float(base_poses[0, :2, 3] @ side)
        middle = sum(float(measured[i] - offsets[i]) for i in standing) / len(standing) if standing else base
        times, steps = time + self._sway_times, self._sway_steps
        # each sole's sideways place at each time: where it is measured while it stands, beside the others after
        sides = np.tile(middle + offsets, (len(times), 1))
        for i in standing:
            still = times < self._lift_after(self.feet[i], time)
            sides[still, i] = measured[i]
        middles = sides @ self._stance_weights.T  # (each phase's soles' middle at each time)
        phase, fraction = gait.phases_at(times + 1e-9)
        rows, count = np.arange(len(times)), len(gait.phases)
        # one sole: its middle; two: from the middle of the soles it leaves to that of those that stand next
        leaving, coming = middles[rows, (phase - 1) % count], middles[rows, (phase + 1) % count]
        pressure = np.where(self._one_sole[phase], middles[rows, phase],
                            leaving + fraction * (coming - leaving))
        x, velocity = pendulum.sway(base, pressure, steps, pendulum.frequency(self.base_height, self.scale.gravity))
        base_poses[:, :2, 3] += np.outer(x[:K + 1] - base_poses[:, :2, 3] @ side, side)
        twists[:, 1] = velocity[:K + 1]

    def _lift_after(self, foot: str, time: float) -> float:
        """When ``foot`` next lifts in the gait after ``time`` [s] (infinity: it never does)."""
        t = time
        for _ in range(len(self.gait.phases) + 1):
            phase, fraction = self.gait.phase_at(t + 1e-9)
            if foot not in phase.stance:
                return t
            t += (1.0 - fraction) * phase.duration
        return math.inf

    def cost(self, time: float, state: State, states, torques, contacts_now=None) -> float:
        """The cost the cycle at ``time`` from ``state`` (the feet ``contacts_now`` holding, as
        :meth:`references` takes them) gives the plan ``states`` (K+1) and ``torques`` (K, n):
        Σ_k ½‖r_k‖²_W of the residuals the QP linearizes (References)."""
        ref, K = self.references(time, state, contacts_now), self.sizes[2]
        diagonal = np.concatenate([ref.pose_weights, np.full(self.sizes[1], ref.posture_weight), ref.twist_weights,
                                   np.full(self.sizes[1], ref.joint_velocity_weight)])
        total = 0.5 * ref.torque_weight * float(np.sum(np.square(torques)))
        x = stacked(states)
        residuals, ((feet, jacobians), soles) = _state_residuals(ref, x), self._foot_kinematics(x)
        for k in range(1, K + 1):
            total += 0.5 * ref.scales[k] * float(diagonal @ np.square(residuals[k - 1]))
            for weight, velocities, _ in self._sliding_rows(ref, x, (feet, jacobians), k):
                total += 0.5 * ref.scales[k] * weight * float(np.sum(np.square(velocities)))
            for i, height, landing in ref.feet[k]:
                total += 0.5 * ref.scales[k] * ref.foot_height_weight * (feet[k, i, 2] - height) ** 2
                if landing is not None:
                    total += 0.5 * ref.scales[k] * ref.foot_xy_weight * float(np.sum(np.square(feet[k, i, :2]
                                                                                                - landing)))
        sole_rows = self._sole_rows(ref, soles)
        if sole_rows is not None:
            total += 0.5 * ref.sole_weight * float(ref.scales[sole_rows[0]] @ np.square(sole_rows[1]))
        return total

    def _qp(self, ref: References, x: tuple, torques, margins, feet, Gamma, d, soles=None):
        """The condensed QP of the cycle tracking ``ref`` in the held torques y, at the knots' states
        (their stacked arrays (horizon_states) x; ``margins``: :meth:`_steps`' rows, ``feet``, ``soles``:
        :meth:`_foot_kinematics`'):
        H (M·n, M·n), g, the
        inequality rows C y ≥ lower, and a label (kind, knot, what) per row; the torque limits are the
        solver's box."""
        settings = self.settings
        _, n, K = self.sizes
        scales = ref.scales
        # the residuals on each coordinate of z: the base's pose and twist, the posture, the joint velocities
        diagonal = np.concatenate([ref.pose_weights, np.full(n, ref.posture_weight), ref.twist_weights,
                                   np.full(n, ref.joint_velocity_weight)])
        # the swing feet's ½‖p + J δz_k − target‖²_w of every knot, rows 3i + axis of p (f, 3) and J (3f, N) at knot k
        knots, rows, targets, weights = [], [], [], []
        for k in range(1, K + 1):
            for i, height, landing in ref.feet[k]:
                knots.append(k)
                rows.append(3 * i + 2)
                targets.append(height)
                weights.append(ref.foot_height_weight)
                if landing is not None:
                    knots += [k, k]
                    rows += [3 * i, 3 * i + 1]
                    targets += [landing[0], landing[1]]
                    weights += [ref.foot_xy_weight] * 2
        foot_rows: list[tuple] = []  # (k or each row's knots, F, f)
        if knots:
            knots_of_rows = np.array(knots)
            root = np.sqrt(np.array(weights) * scales[knots_of_rows])
            foot_rows.append((knots_of_rows, root[:, None] * feet[1][knots_of_rows, rows],
                              root * (feet[0].reshape(K + 1, -1)[knots_of_rows, rows] - np.array(targets))))
        for k in range(1, K + 1):
            for weight, velocities, F in self._sliding_rows(ref, x, feet, k):  # landing, lifting: ½‖v + F δz_k‖²_w
                root = math.sqrt(weight * scales[k])
                foot_rows.append((k, root * F, root * velocities))
        sole_rows = self._sole_rows(ref, soles)
        if sole_rows is not None:
            knots_of_rows, residuals, rows = sole_rows
            root = np.sqrt(ref.sole_weight * scales[knots_of_rows])
            foot_rows.append((knots_of_rows, root[:, None] * rows, root * residuals))
        H, g = self._condensed_cost(Gamma, d, scales[1:, None] * diagonal, _state_residuals(ref, x), foot_rows)
        # ½ w Σ_k ‖τ̄_k + δτ_k‖², δτ_k = y_m over the knots of group m
        H[np.diag_indices(len(g))] += ref.torque_weight * np.repeat(np.bincount(self._groups), n)
        g += ref.torque_weight * np.add.reduceat(torques, self._starts, axis=0).ravel()
        # the rows, per knot k: (k, their Jacobian in δz_k[:r] (rows, r), in τ_k (rows, n) or None, their lower
        # bound less their value at δz_k = 0)
        margin_knots, F, T, bounds, labels, _ = margins
        blocks = [(margin_knots, F, T, bounds)] if len(bounds) else []
        labels = list(labels)
        lifted = 2 * settings.knot_dt - 1e-9  # (from rest a foot needs two steps to rise: a velocity, then a height)
        # the swinging feet above the ground (lifting and landing: the height's cost instead), once they have swung
        # two knots: the step a foot leaves the ground on starts it from rest, on the ground (a foot still held now,
        # late to lift, is held over the first step too); all knots' rows in one indexing
        above = [(k, i) for k in range(1, K + 1) for i, swing in enumerate(ref.swings[k])
                 if swing is not None and 0.1 <= swing[0] <= 0.9 and swing[0] * swing[1] / (1.0 - swing[0]) >= lifted
                 and (k >= 3 or self.feet[i] not in ref.held)]
        if above:
            knots, indices = np.array(above).T
            blocks.append((knots, feet[1][knots, 3 * indices + 2], None, settings.ground - feet[0][knots, indices, 2]))
            labels += [("above the ground", k, self.feet[i]) for k, i in above]
        return (H, g) + self._constraints(Gamma, d, blocks) + (labels,)

    def _constraints(self, Gamma, d, blocks) -> tuple:
        """The rows F δz_k[:r] + T δτ_k ≥ b of ``blocks`` [(k, F (rows, r), T (rows, n) or None, b (rows,))] (k:
        their knot, or each row's (rows,)) as C y ≥ lower in the held torques y (δz_k = Γ_k y + d_k, δτ_k = y_m of
        knot k's group; Γ (K+1, 2N, M·n) and d (K+1, 2N) as :meth:`_condense` gives them): (C (rows, M·n), lower
        (rows,)), in one compiled call (:func:`constraint_rows_into`)."""
        two_N, n, _ = self.sizes
        knots, rows, bounds = _stacked_rows([(k, F, b) for k, F, _, b in blocks], two_N)
        torque_rows = _stacked_rows([(k, np.empty((len(b), 0)) if T is None else T, b) for k, _, T, b in blocks], n)[1]
        C, lower = np.empty((len(bounds), Gamma.shape[2])), np.empty(len(bounds))
        constraint_rows_into(Gamma.transpose(0, 2, 1), d, self._reach, self._groups, knots, rows, torque_rows, bounds,
                             C, lower)
        return C, lower

    def _labels(self, knots) -> list:
        """The QP's labels ("margin", k, label) of the knots' margin rows, ``knots`` [(k, its margins' labels)] in
        the rows' order (each knot's made once)."""
        labels: list = []
        for k, margin_labels in knots:
            found = self._margin_labels.get((k, margin_labels))
            if found is None:
                found = self._margin_labels[k, margin_labels] = [("margin", k, label) for label in margin_labels]
            labels += found
        return labels

    def _reached(self, k: int) -> int:
        """The columns of y that δz_k depends on: those of the groups of knots 0 … k−1 (Γ_k is zero
        beyond them)."""
        return (self._groups[k - 1] + 1) * self.sizes[1] if k else 0

    def _solve_qp(self, H, g, C, lower, torques, labels):
        """min ½ yᵀHy + gᵀy s.t. C y ≥ lower and the torque limits of every knot of each y_m (τ̄ the
        plan's ``torques`` (K, n)), with ProxSuite (dense, the limits as its box) or OSQP
        (settings.solver); where that has no solution, with the rows of C soft (the module docstring):
        (y, iterations, the largest slack, the rows it is on or None).  _Unsolved, saying why, where
        the solver fails even so.  After a cycle whose QP had no solution (its plan soft, or none), the least
        violation comes first: in a run of such cycles the hard QP's solver spent most of each failing
        cycle (Talos: 150 of 200 ms) on a QP the least violation shows has no solution in 1–3 ms; where
        the least violation needs no slack, the hard QP is solved as it is, as the cycle would otherwise."""
        held_before, self._held_before = self._held_before, False  # (False where it raises)
        y, iterations, slack, softened = self._solved_or_softened(H, g, C, lower, torques, labels, held_before)
        self._held_before = slack == 0.0
        return y, iterations, slack, softened

    def _solved_or_softened(self, H, g, C, lower, torques, labels, held_before: bool):
        """:meth:`_solve_qp`'s work, the hard QP first where the cycle before kept its constraints
        (``held_before``)."""
        limits = self.effort_limits
        box_lower = np.maximum.reduceat(-limits - torques, self._starts, axis=0).ravel()
        box_upper = np.minimum.reduceat(limits - torques, self._starts, axis=0).ravel()
        groups: dict = {} if held_before else self._soft_groups(labels)
        hard_first = not groups  # (after a cycle that kept its constraints, or with nothing to make soft)
        iterations, hard = 0, ""
        if hard_first:
            y, solved, iterations = self._run_solver(H, g, C, lower, box_lower, box_upper)
            if solved and np.isfinite(y).all():
                return y, iterations, 0.0, None
            hard = self._culprit(y, C, lower, torques, labels)
            groups = self._soft_groups(labels)
        size, count = len(g), len(groups)
        if not count:
            raise _Unsolved(self._unsolved(hard, iterations, f"; none of the first {SOFT_KNOTS} knots' to make soft"))
        # the least violation: a slack σ ≥ 0 per (kind, knot) of the rows, min Σσ (+ a small ½δ‖·‖²)
        S = np.zeros((len(lower), count))
        for column, rows in enumerate(groups.values()):
            S[rows, column] = 1.0
        # by DAQP whatever the plan's solver: on this nearly linear program a proximal method (ProxSuite) took
        # 30 000 iterations and 3–25 s to give up where the pushed robot's later knots had no plan either;
        # an active set settles it in ≤ 1000 changes (≤ 30 ms), either way
        x, solved, more = self._daqp(SLACK_REGULARIZATION * np.eye(size + count), np.r_[np.zeros(size), np.ones(count)],
                                     np.hstack([C, S]), lower, np.r_[box_lower, np.zeros(count)],
                                     np.r_[box_upper, np.full(count, np.inf)], changes=LEAST_VIOLATION_CHANGES)
        iterations += more
        if not solved or not np.isfinite(x).all():
            if not hard_first:  # (the hard QP not tried: what it breaks is not known, only that it is broken)
                hard = ": no plan keeps the constraints, as in the cycle before"
            raise _Unsolved(self._unsolved(hard, iterations, f"; also with the first {SOFT_KNOTS} knots' constraints "
                                                             "soft"))
        sigma = np.maximum(x[size:], 0.0)
        worst = int(np.argmax(sigma))
        if not hard_first and sigma[worst] <= 1e-9:  # (the hard QP has a solution again: solved as it is)
            y, solved, more = self._run_solver(H, g, C, lower, box_lower, box_upper)
            iterations += more
            if solved and np.isfinite(y).all():
                return y, iterations, 0.0, None
        # then the plan on the constraints relaxed by that much (and a little room: at the least violation
        # exactly, the feasible set is a point the solver does not converge to)
        for room in SLACK_ROOM:
            relaxed = sigma * (1.0 + room) + 1e-6 * (sigma > 1e-9)
            y, solved, more = self._run_solver(H, g, C, lower - S @ relaxed, box_lower, box_upper)
            iterations += more
            if solved and np.isfinite(y).all():
                break
        else:
            raise _Unsolved(self._unsolved(hard, iterations, f"; also on the least violation of the first {SOFT_KNOTS} "
                                                             "knots' constraints"))
        if sigma[worst] <= 1e-9:  # (the hard QP was feasible after all: its first solve did not converge)
            return y, iterations, 0.0, None
        kind, knot = list(groups)[worst]
        rows = groups[kind, knot]
        what = labels[rows[int(np.argmax(lower[rows] - C[rows] @ y))]][2]
        return y, iterations, float(sigma[worst]), f"{kind} {what} at knot {knot}"

    @staticmethod
    def _soft_groups(labels) -> dict:
        """{(kind, knot): the QP's rows of that kind at that knot} of the first SOFT_KNOTS knots: the rows
        that share a slack where the QP has no solution."""
        groups: dict = {}
        for row, (kind, knot, _) in enumerate(labels):
            if knot < SOFT_KNOTS:
                groups.setdefault((kind, knot), []).append(row)
        return groups

    @staticmethod
    def _unsolved(hard: str, iterations: int, tried: str) -> str:
        """Why the QP has no solution: the constraint ``hard`` names (:meth:`_culprit`), or the solver's
        failure to converge; what was ``tried`` besides."""
        return f"{hard[2:] if hard else 'the solver did not converge'} ({iterations} iterations{tried})"

    def _culprit(self, y, C, lower, torques, labels) -> str:
        """": <the row most violated by y, or the torque limit y breaks>", or "" (none: the solver did
        not converge)."""
        n, limits = self.sizes[1], self.effort_limits
        violation = lower - C @ y if len(lower) else np.zeros(0)
        if len(violation) and np.isfinite(violation).all() and violation.max() > 1e-6:
            kind, knot, what = labels[int(np.argmax(violation))]
            return f": {kind} {what} at knot {knot} violated by {violation.max():.3g}"
        x = y.reshape(-1, n)[self._groups].ravel()
        box_lower, box_upper = (-limits - torques).ravel(), (limits - torques).ravel()
        if np.any(x < box_lower - 1e-6) or np.any(x > box_upper + 1e-6):
            worst = int(np.argmax(np.maximum(box_lower - x, x - box_upper)))
            return f": torque limit of {self.model.joint_names[worst % n]} at knot {worst // n}"
        return ""

    def _run_solver(self, H, g, C, lower, box_lower, box_upper):
        """(x, solved, iterations) of min ½ xᵀHx + gᵀx s.t. C x ≥ lower, box_lower ≤ x ≤ box_upper (H positive
        definite), by :meth:`_solver_on`, with many rows (SCREENING_ROWS_PER_UNKNOWN) screened.  Most rows are far
        from their bounds (Talos's median QP has none at them at its solution) and the solvers' time grows with the
        rows they are given (ProxSuite on Talos's 1 360 rows 1.5 ms, on none of them 0.4).  So the QP is solved first
        on the rows x = 0 (the plan the cycle linearizes at) does not keep strictly: a relaxation of it.  Where
        that solution keeps every other row (to SCREENED_VIOLATION), it is the QP's (its one minimizer), else the
        rows it breaks are added, for at most SCREENING_ROUNDS QPs, then the whole QP is solved.  Where the solver
        finds no solution of a relaxation, that is the cycle's answer (it has none of the QP either)."""
        kept = ~(lower < 0.0)  # (a row that is not a number kept: the solver says what it makes of it)
        iterations = 0
        for _ in range(SCREENING_ROUNDS if len(lower) >= SCREENING_ROWS_PER_UNKNOWN * len(g) else 0):
            if kept.all():
                break
            x, solved, count = self._solver_on(H, g, C[kept], lower[kept], box_lower, box_upper)
            iterations += count
            if not solved:
                return x, False, iterations
            broken = ~(C @ x >= lower - SCREENED_VIOLATION)
            if not broken.any():
                return x, True, iterations
            kept |= broken
        x, solved, count = self._solver_on(H, g, C, lower, box_lower, box_upper)
        return x, solved, iterations + count

    def _solver_on(self, H, g, C, lower, box_lower, box_upper):
        """(x, solved, iterations) of min ½ xᵀHx + gᵀx s.t. C x ≥ lower, box_lower ≤ x ≤ box_upper, by
        settings.solver (ProxSuite: within PLAN_ITERATIONS, DAQP: PLAN_CHANGES).  Where ProxSuite or OSQP does
        not converge, DAQP's active set takes the same QP: a QP of Talos's in a turn, a sole caught on the floor
        1 ms after it lifted (a Hessian of condition 10¹⁰), kept ProxSuite's primal residual at 10⁻⁵ after
        1 400 iterations, where DAQP solved it in 141 changes of its active set (docs/mpc.md)."""
        if self.settings.solver == "daqp":
            return self._daqp(H, g, C, lower, box_lower, box_upper)
        if self.settings.solver == "osqp":
            x, solved, count = self._osqp(H, g, C, lower, box_lower, box_upper)
        else:
            x, solved, count = self._proxsuite(H, g, C, lower, box_lower, box_upper)
        if solved and np.isfinite(x).all():
            return x, True, count
        y, found, more = self._daqp(H, g, C, lower, box_lower, box_upper)
        return (y, True, count + more) if found and np.isfinite(y).all() else (x, False, count + more)

    def _proxsuite(self, H, g, C, lower, box_lower, box_upper):
        """ProxSuite's dense solver, in at most PLAN_ITERATIONS (outer, inner)."""
        proxqp = _solver_module("proxsuite").proxqp

        size, rows = len(g), len(lower)
        # the primal-dual factorization: with a few times more inequality rows than unknowns, ProxSuite's
        # automatic choice (the primal one) took ≈ 3× longer on the trot's QPs, in 4× the iterations
        dense = proxqp.dense
        qp = dense.QP(size, 0, rows, True, dense.HessianType.Dense, dense.DenseBackend.PrimalDualLDLT)
        # stop at a residual of 1e-9 plus 10⁻¹³ of the QP's largest term (ProxSuite's relative criterion): after a
        # hard landing ‖g‖ reaches 10⁷, where the dual residual's rounding floor (≈ 10⁻⁸) lies above 10⁻⁹ and an
        # absolute criterion alone never stops, though the solution is found; 10⁻¹³ is 10³ units of roundoff
        qp.settings.eps_abs, qp.settings.eps_rel = 1e-9, RELATIVE_TOLERANCE
        # a QP without a solution must not take seconds to say so (PLAN_ITERATIONS)
        qp.settings.max_iter, qp.settings.max_iter_in = PLAN_ITERATIONS
        qp.settings.initial_guess = proxqp.InitialGuess.WARM_START
        qp.init(H, g, None, None, C, lower, np.full(rows, 1e20), box_lower, box_upper, compute_preconditioner=False)
        qp.solve(np.zeros(size), None, None)  # warm: δτ = 0 is the previous plan, shifted (the linearization point)
        status = qp.results.info.status
        return qp.results.x, status == proxqp.QPSolverOutput.PROXQP_SOLVED, qp.results.info.iter

    @staticmethod
    def _daqp(H, g, C, lower, box_lower, box_upper, changes=PLAN_CHANGES):
        """DAQP's dense dual active-set solver, in at most ``changes`` of its active set; the limits as its
        simple bounds, the rows of C below."""
        daqp = _solver_module("daqp")

        x, _, flag, info = daqp.solve(H, g, C, np.concatenate([box_upper, np.full(len(lower), np.inf)]),
                                      np.concatenate([box_lower, lower]), primal_tol=1e-9,
                                      iter_limit=changes)
        return x, flag == 1, info["iterations"]

    def _osqp(self, H, g, C, lower, box_lower, box_upper):
        osqp = _solver_module("osqp")

        size = len(g)
        A = sp.vstack([sp.csc_matrix(C), sp.identity(size, format="csc")], format="csc")
        solver = osqp.OSQP()
        solver.setup(sp.csc_matrix(np.triu(H)), g, A, np.concatenate([lower, box_lower]),
                     np.concatenate([np.full(len(lower), 1e30), box_upper]), verbose=False, eps_abs=1e-9,
                     eps_rel=1e-9, max_iter=20000)
        result = solver.solve(raise_error=False)  # (the status is read below)
        return result.x, result.info.status == "solved", result.info.iter


def _solver_module(name: str):
    """The module of a QP solver (or threadpoolctl), or an ImportError of one line saying how to
    install it."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        what = "QP solver " if name != "threadpoolctl" else ""
        raise ImportError(f"the MPC's {what}{name} is not installed: pip install 'robot_linearization[mpc]'") from None
