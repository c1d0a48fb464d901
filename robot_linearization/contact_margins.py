"""Contact forces that are possible: friction-cone, unilateral and centre-of-pressure
margins of the rigid contacts' forces λ, with their Jacobians in z and τ
(docs/contact_margins.md).

A margin is ≥ 0 when the force is possible and < 0 when it is not; an MPC imposes
``margin + ∂margin/∂z · z + ∂margin/∂τ · w ≥ 0``.  Every margin is linear or
positively homogeneous in one contact's force expressed in that contact's *cone
axes* c = [f_t1, f_t2, f_n] (and, for a sole, its moment):

- point contact: the world-fixed ground ``normal`` n, with tangents t1, t2 = R_n e_x,
  R_n e_y (R_n the shortest rotation taking e_z to n); c = R_nᵀ f_world;
- 6d contact (a sole held flat on the ground): the sole's own axes, c = f_local,
  moment m_local about the frame's origin; the CoP rectangle lies in its x-y plane.

so that ∂margin = G ∂c with G the gradient in c, and ∂c follows from ∂λ/∂z, ∂λ/∂τ
(contact_linearization.py) plus, where λ's axes and the cone's differ, the
turning of the contact frame along z_q = [z_H; z_s]: the frame's local rotation
J_ω z_q (the angular rows of its body Jacobian, docs/contacts.md):

    local point contact:      f_world = A_R_c λ           ∂f_world = A_R_c (∂λ − λ^ J_ω z_q)
    world-aligned 6d contact: [f; m]_local = Rᵀ[f; m]     ∂[f; m]_local = Rᵀ ∂λ + [f_local^; m_local^] J_ω z_q

(a world-aligned point contact and a local 6d contact need no such term).  τ does
not move the frame: ∂c/∂τ is λ's alone.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .algorithms.constrained_dynamics import contact_frame_kinematics
from .compiled import announce_compilation, kernel
from .arguments import _given, check_linearization, positive_number, real_array
from .contacts import Contacts, as_contacts, format_contacts
from .coupling import AnyModel

if TYPE_CHECKING:
    from .linearization import Linearization
    from .linearizer import Linearizer

SMOOTH_TANGENT = 1e-12
"""The exact cone's ‖f_t‖ is taken as not differentiable when ‖f_t‖ ≤ this times ‖f‖
(or 1e-300): its gradient is then the minimal-norm subgradient, 0 (docs/contact_margins.md)."""


@dataclass(frozen=True)
class ContactMargins:
    """Margins of the contact forces (p,) at a linearization's (state, τ), ≥ 0 when possible.

    margins (p,) [N, or N·m for the CoP rows]; labels (p,) ``<frame>:friction`` (the exact
    cone) or ``<frame>:friction_0 … friction_{k-1}`` (the pyramid's facets, Crocoddyl's
    FrictionCone order), ``<frame>:unilateral``, and for 6d contacts ``<frame>:cop_x+``,
    ``:cop_x-``, ``:cop_y+``, ``:cop_y-`` and the moment about the sole's normal ``:yaw-_0 … yaw-_3``,
    ``:yaw+_0 … yaw+_3`` (docs/contact_margins.md), contact by contact in the linearization's order;
    state_jacobian ∂margin/∂z (p, 2N), the columns of lin.A; input_jacobian ∂margin/∂τ (p, n).
    friction, normal (unit, world), facets, inner, sole_sizes: the arguments they were made with.
    """

    margins: NDArray[np.float64]
    state_jacobian: NDArray[np.float64]
    input_jacobian: NDArray[np.float64]
    labels: tuple[str, ...]
    friction: float
    normal: NDArray[np.float64]
    facets: int | None
    inner: bool
    sole_sizes: dict

    def violated(self, tolerance: float = 0.0) -> tuple[str, ...]:
        """Labels of the margins below −tolerance."""
        return tuple(label for label, margin in zip(self.labels, self.margins) if margin < -tolerance)

    def __repr__(self) -> str:
        cone = ("exact cone" if self.facets is None
                else f"{self.facets}-facet {'inner' if self.inner else 'outer'} pyramid")
        return (f"<ContactMargins: {len(self.labels)} margins (μ = {self.friction:g}, {cone}), "
                f"smallest {self.margins.min():.4g} at {self.labels[int(np.argmin(self.margins))]}>")


def contact_margins(model: AnyModel, linearization: Linearization | Linearizer, *, friction: float,
                    normal: ArrayLike = (0.0, 0.0, 1.0), facets: int | None = None, inner: bool = True,
                    sole_size: ArrayLike | Mapping[str, ArrayLike] | None = None) -> ContactMargins:
    """Friction, unilateral and CoP margins of ``linearization``'s contact forces, and their
    Jacobians ∂/∂z (p, 2N) and ∂/∂τ (p, n) by the chain rule through ∂λ/∂z, ∂λ/∂τ.

    model: the model ``linearization`` (from rl.linearize(..., contacts=...)) was made of.
    friction: μ > 0.  normal (3,): the ground's normal in the world (point contacts; a 6d
    contact's normal is its own z axis).  facets: None for the exact cone μ f_n − ‖f_t‖, an
    even k ≥ 4 for Crocoddyl's linearized pyramid (rows −A f of crocoddyl.FrictionCone(R_n,
    μ, k, inner)); inner: the pyramid inside the cone (μ cos(π/k)) or around it (μ).
    sole_size: (length along the sole's x, width along its y) [m] of every 6d contact's
    rectangle, centred at its origin, or a mapping frame → (length, width); required
    when there are 6d contacts.
    Margin definitions and signs: docs/contact_margins.md.  A wrong argument is a
    ValueError of one line naming it.
    """
    lin = check_linearization(model, linearization)
    if lin.A.ndim != 2:
        raise ValueError("linearization: contact_margins takes one state's Linearization (rl.linearize); "
                         "for a horizon call it per step")
    if lin.contact_forces is None or not lin.contacts:
        raise ValueError("linearization: has no contacts (make it with rl.linearize(..., contacts=...))")
    return MarginEvaluator(model, lin.contacts, friction=friction, normal=normal, facets=facets, inner=inner,
                           sole_size=sole_size)(lin)


class MarginEvaluator:
    """:func:`contact_margins` of one model and contact set with the same friction, normal, cone and
    soles, its arguments checked once, for state after state (a controller's loop)::

        margins_of = MarginEvaluator(model, contacts, friction=0.6, facets=4)
        margins = margins_of(linearizer.linearize(state))  # a ContactMargins, as contact_margins gives

    The linearization must be of ``model`` (not checked again) with ``contacts`` (rl.linearize or a
    Linearizer): its contact set is checked per call (ValueError when it differs).
    """

    def __init__(self, model: AnyModel, contacts: Contacts, *, friction: float, normal: ArrayLike = (0.0, 0.0, 1.0),
                 facets: int | None = None, inner: bool = True,
                 sole_size: ArrayLike | Mapping[str, ArrayLike] | None = None) -> None:
        self.model = model
        self.friction = mu = positive_number(friction, "friction")
        n = real_array(normal, "normal", (3,), what="the ground's normal in the world")
        if not np.linalg.norm(n) > 1e-12:
            raise ValueError(f"normal: expected a nonzero vector, got {n.tolist()}")
        self.normal = n = n / np.linalg.norm(n)
        self.facets = k = _facets(facets)
        if not isinstance(inner, (bool, np.bool_)):
            raise ValueError(f"inner: expected True (inner pyramid) or False (outer), got {_given(inner)}")
        self.inner = bool(inner)
        self.contacts = as_contacts(contacts)
        self.sole_sizes = _sole_sizes(sole_size, [c.frame for c in self.contacts if c.kind == "6d"])
        self.layout = _layout(self.contacts, mu, tuple(n.tolist()), k, self.inner, tuple(self.sole_sizes.items()))
        self._turning = bool(self.layout.turning.any())

    def __call__(self, linearization: Linearization | Linearizer, frames: tuple | None = None) -> ContactMargins:
        """The ContactMargins of ``linearization`` (one state's, of this model and contact set).

        ``frames``: where the caller has them already (a horizon's kinematics in one call), (A_R_c (k, 3, 3),
        J_ω (k, 3, N)) of the k contacts' frames at the linearization's configuration: their rotations in the
        world and the angular rows of their body Jacobians in their own axes, columns z_q = [z_H; z_s]; read
        only where a contact's cone turns with its frame (a sole).  None: computed here."""
        lin, model, layout = linearization, self.model, self.layout
        if lin.contacts != self.contacts and as_contacts(lin.contacts) != self.contacts:
            raise ValueError(f"linearization: its contacts [{format_contacts(lin.contacts)}] are not the "
                             f"evaluator's [{format_contacts(self.contacts)}]")
        N = model.n_velocities
        if not self._turning:
            rotations, rotation_jacobians = _NO_ROTATIONS[0], _NO_ROTATIONS[1][:, :, :0]
        elif frames is None:
            rotations, rotation_jacobians = _frame_rotations(model, lin.state, self.contacts)
        else:
            k = len(self.contacts)
            rotations = real_array(frames[0], "frames", (k, 3, 3), what="the contacts' rotations A_R_c")
            rotation_jacobians = real_array(frames[1], "frames", (k, 3, N), what="the contacts' J_ω in their axes")
        p = len(layout.labels)
        margins, state_jacobian, input_jacobian = np.empty(p), np.empty((p, 2 * N)), np.empty((p, model.n_joints))
        announce_compilation(margins_into)
        margins_into((lin.contact_forces, lin.contact_forces_state_jacobian, lin.contact_forces_input_jacobian),
                     layout.arrays, (rotations, rotation_jacobians), (margins, state_jacobian, input_jacobian))
        return ContactMargins(margins, state_jacobian, input_jacobian, layout.labels, self.friction, self.normal,
                              self.facets, self.inner, self.sole_sizes)


_NO_ROTATIONS: tuple[NDArray[np.float64], NDArray[np.float64]] = (np.zeros((0, 3, 3)), np.zeros((0, 3, 0)))


@kernel
def margins_into(contact_forces: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]], layout: tuple,
                 frames: tuple[NDArray[np.float64], NDArray[np.float64]],
                 out: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]) -> None:
    """margins = G c, ∂margin = G ∂c contact by contact, c = B λ in its cone axes (module docstring),
    from contact_forces = (λ (m,), ∂λ/∂z (m, 2N), ∂λ/∂τ (m, n)), layout = _Layout.arrays and
    frames = (rotations (k, 3, 3), rotation_jacobians (k, 3, N)), into out = (margins (p,),
    ∂margins/∂z (p, 2N), ∂margins/∂τ (p, n)).

    Per contact j (rows starts[j] … of λ, dims[j] = 3 or 6, rows row_starts[j] … of the margins):
    B = R_nᵀ (point), R_nᵀ A_R_c (turning point), I (sole), blockdiag(A_R_cᵀ) (turning sole), with
    A_R_c = rotations[j] and J_ω = rotation_jacobians[j] (3, N) for turning contacts; gradient G (p, m)
    in c; with ``exact`` the first row of each contact holds μ f_n and gets − ‖f_t‖ here."""
    forces, d_forces, d_forces_dtau = contact_forces
    starts, dims, turning, row_starts, row_counts, gradient, cone_axes, exact = layout
    rotations, rotation_jacobians = frames
    margins, state_jacobian, input_jacobian = out
    N = rotation_jacobians.shape[2]
    B = np.empty((6, 6))
    S = np.empty((3, 3))
    c = np.empty(6)
    dc = np.empty((6, d_forces.shape[1]))
    dc_dtau = np.empty((6, d_forces_dtau.shape[1]))
    for j in range(starts.shape[0]):
        first, d = starts[j], dims[j]
        B[:] = 0.0
        if d == 3:
            for r in range(3):
                for q in range(3):
                    if turning[j]:
                        acc = 0.0
                        for e in range(3):
                            acc += cone_axes[e, r] * rotations[j, e, q]
                        B[r, q] = acc
                    else:
                        B[r, q] = cone_axes[q, r]
        else:
            for r in range(3):
                for q in range(3):
                    value = rotations[j, q, r] if turning[j] else (1.0 if r == q else 0.0)
                    B[r, q] = B[3 + r, 3 + q] = value
        # (the row operations as loops: an array expression would allocate its temporary on every use)
        for r in range(d):
            c[r] = 0.0
            dc[r] = 0.0
            dc_dtau[r] = 0.0
            for q in range(d):
                factor = B[r, q]
                if factor != 0.0:
                    c[r] += factor * forces[first + q]
                    for col in range(dc.shape[1]):
                        dc[r, col] += factor * d_forces[first + q, col]
                    for col in range(dc_dtau.shape[1]):
                        dc_dtau[r, col] += factor * d_forces_dtau[first + q, col]
        if turning[j] and d == 3:  # ∂c −= B λ^ J_ω z_q
            f = forces[first:first + 3]
            for r in range(3):
                S[r, 0] = B[r, 1] * f[2] - B[r, 2] * f[1]
                S[r, 1] = B[r, 2] * f[0] - B[r, 0] * f[2]
                S[r, 2] = B[r, 0] * f[1] - B[r, 1] * f[0]
                for col in range(N):
                    dc[r, col] -= (S[r, 0] * rotation_jacobians[j, 0, col] + S[r, 1] * rotation_jacobians[j, 1, col]
                                   + S[r, 2] * rotation_jacobians[j, 2, col])
        elif turning[j]:  # ∂c += [f_c^; m_c^] J_ω z_q
            for block in range(2):
                x = c[3 * block:3 * block + 3]
                for col in range(N):
                    w0, w1, w2 = rotation_jacobians[j, 0, col], rotation_jacobians[j, 1, col], \
                        rotation_jacobians[j, 2, col]
                    dc[3 * block, col] += x[1] * w2 - x[2] * w1
                    dc[3 * block + 1, col] += x[2] * w0 - x[0] * w2
                    dc[3 * block + 2, col] += x[0] * w1 - x[1] * w0
        for i in range(row_starts[j], row_starts[j] + row_counts[j]):
            margins[i] = 0.0
            state_jacobian[i] = 0.0
            input_jacobian[i] = 0.0
            for e in range(d):
                factor = gradient[i, first + e]
                if factor != 0.0:
                    margins[i] += factor * c[e]
                    for col in range(dc.shape[1]):
                        state_jacobian[i, col] += factor * dc[e, col]
                    for col in range(dc_dtau.shape[1]):
                        input_jacobian[i, col] += factor * dc_dtau[e, col]
        if exact:  # − ‖f_t‖; at f_t = 0 the minimal-norm subgradient, 0
            i = row_starts[j]
            norm = np.hypot(c[0], c[1])
            margins[i] -= norm
            if norm > max(SMOOTH_TANGENT * np.hypot(norm, c[2]), 1e-300):
                d1, d2 = c[0] / norm, c[1] / norm
                for col in range(dc.shape[1]):
                    state_jacobian[i, col] -= d1 * dc[0, col] + d2 * dc[1, col]
                for col in range(dc_dtau.shape[1]):
                    input_jacobian[i, col] -= d1 * dc_dtau[0, col] + d2 * dc_dtau[1, col]


@dataclass(frozen=True)
class _Layout:
    """What depends on the contact set and the arguments only, built once (k contacts, m = rows of
    λ, p margins): labels (p,); cone_axes R_n; starts, dims (k,) of λ's rows; turning (k,) local
    points and world-aligned soles; row_starts, row_counts (k,) of the margins' rows; gradient
    G (p, m) in c (the exact cone's rows holding μ f_n only); exact: the exact cone."""

    labels: tuple
    cone_axes: np.ndarray
    starts: np.ndarray
    dims: np.ndarray
    turning: np.ndarray
    row_starts: np.ndarray
    row_counts: np.ndarray
    gradient: np.ndarray
    exact: bool

    @property
    def arrays(self) -> tuple:
        """What :func:`margins_into` takes as its ``layout``."""
        return (self.starts, self.dims, self.turning, self.row_starts, self.row_counts, self.gradient,
                self.cone_axes, self.exact)


@functools.lru_cache(maxsize=256)
def _layout(contacts, mu, normal, facets, inner, soles) -> _Layout:
    soles = dict(soles)
    pyramid = _cone_rows(mu, facets, inner)
    dims = np.array([c.dimension for c in contacts], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(dims)[:-1]]).astype(np.int64)
    blocks, labels, counts = [], [], []
    for contact, start in zip(contacts, starts):
        G, names = _contact_rows(mu, pyramid, soles.get(contact.frame),
                                 mu if facets is None else _cone_friction(mu, facets, inner))
        block = np.zeros((G.shape[0], int(dims.sum())))
        block[:, start:start + G.shape[1]] = G
        blocks.append(block)
        counts.append(G.shape[0])
        labels += [f"{contact.frame}:{name}" for name in names]
    row_counts = np.array(counts, dtype=np.int64)
    turning = np.array([(c.kind == "point") == (c.reference == "local") for c in contacts], dtype=np.bool_)
    return _Layout(tuple(labels), _shortest_rotation(np.array(normal)), starts, dims, turning,
                   np.concatenate([[0], np.cumsum(row_counts)[:-1]]).astype(np.int64), row_counts, np.vstack(blocks),
                   pyramid is None)


def _contact_rows(mu, pyramid, sole, mu_yaw):
    """(G (r, 3|6), names) of one contact: its margins are G c, c = [f_t1, f_t2, f_n(, m_x, m_y, m_z)]
    in its cone axes; for the exact cone, the first row is μ f_n only (− ‖f_t‖ is added per state).
    A sole's yaw rows take the friction ``mu_yaw`` (the pyramid's μ_k)."""
    if pyramid is None:
        G, names = [np.array([0.0, 0.0, mu])], ["friction"]
    else:
        G, names = list(pyramid), [f"friction_{i}" for i in range(len(pyramid))]
    G.append(np.array([0.0, 0.0, 1.0]))  # f_n ≥ 0
    names.append("unilateral")
    G = np.array(G)
    if sole is not None:  # the CoP (p_x, p_y) = (−m_y, m_x)/f_n inside [±L/2] × [±W/2], times f_n
        half_length, half_width = sole[0] / 2.0, sole[1] / 2.0
        cop = np.array([[0, 0, half_length, 0, 1, 0],     # cop_x+: p_x ≤ L/2
                        [0, 0, half_length, 0, -1, 0],    # cop_x-: p_x ≥ −L/2
                        [0, 0, half_width, -1, 0, 0],     # cop_y+: p_y ≤ W/2
                        [0, 0, half_width, 1, 0, 0]], dtype=float)  # cop_y-: p_y ≥ −W/2
        # the moment about the normal that friction at the rectangle's corners can give (Caron, Pham and
        # Nakamura, "Stability of surface contacts for humanoid robots: closed-form formulae of the contact
        # wrench cone for rectangular support areas", ICRA 2015, eq. 16; crocoddyl.WrenchCone's last rows):
        # τ_min = −μ(X+Y) f_n + |Y f_x − μ m_x| + |X f_y − μ m_y| ≤ m_z ≤ μ(X+Y) f_n − |Y f_x + μ m_x| − |X f_y + μ m_y|
        # = τ_max, X, Y the half length and width, each absolute value a pair of rows (signs s_x, s_y)
        X, Y, signs = half_length, half_width, ((1, 1), (1, -1), (-1, 1), (-1, -1))
        spin = mu_yaw * (X + Y)
        yaw = [[-sx * Y, -sy * X, spin, sx * mu_yaw, sy * mu_yaw, 1.0] for sx, sy in signs]  # m_z ≥ τ_min
        yaw += [[-sx * Y, -sy * X, spin, -sx * mu_yaw, -sy * mu_yaw, -1.0] for sx, sy in signs]  # m_z ≤ τ_max
        G = np.vstack([np.hstack([G, np.zeros((G.shape[0], 3))]), cop, yaw])
        names += ["cop_x+", "cop_x-", "cop_y+", "cop_y-"] + [f"yaw-_{i}" for i in range(4)] + [
            f"yaw+_{i}" for i in range(4)]
    return G, names


def _cone_friction(mu, facets, inner):
    """The pyramid's μ_k: μ cos(π/k) (inner) or μ (outer)."""
    return mu * math.cos(math.pi / facets) if inner else mu


def _cone_rows(mu, facets, inner):
    """The pyramid's rows in cone axes, −A of crocoddyl.FrictionCone (R = I): for θ_i = 2πi/k,
    i < k/2, the pair μ_k e_z + t_i, μ_k e_z − t_i with t_i = (cos θ_i, sin θ_i, 0) and μ_k = μ
    cos(π/k) (inner) or μ (outer).  None for the exact cone."""
    if facets is None:
        return None
    mu_k = _cone_friction(mu, facets, inner)
    rows = []
    for i in range(facets // 2):
        theta = 2.0 * math.pi * i / facets
        t = np.array([math.cos(theta), math.sin(theta), 0.0])
        rows += [mu_k * np.array([0.0, 0.0, 1.0]) - t, mu_k * np.array([0.0, 0.0, 1.0]) + t]
    return rows


def _facets(facets):
    if facets is None:
        return None
    if isinstance(facets, (bool, np.bool_)) or not isinstance(facets, (int, np.integer)) or facets < 4 \
            or facets % 2:
        raise ValueError(f"facets: expected None (the exact cone) or an even number ≥ 4, got {_given(facets)}")
    return int(facets)


def _sole_sizes(sole_size, soles) -> dict:
    """{frame: (length, width)} for the 6d contacts ``soles``; every size given is checked, also
    when no contact uses it."""
    if sole_size is None:
        if soles:
            raise ValueError(f"sole_size: required for the 6d contacts {soles}: (length along x, width along y) [m], "
                             "or a mapping frame → (length, width)")
        return {}
    given = sole_size.items() if isinstance(sole_size, Mapping) else [(frame, sole_size) for frame in soles or [""]]
    checked = {}
    for frame, size in given:
        size = real_array(size, "sole_size", (2,), what="length along the sole's x, width along its y, in m")
        if not (size > 0).all():
            raise ValueError(f"sole_size: expected positive lengths, got {size.tolist()}"
                             + (f" for '{frame}'" if frame else ""))
        checked[frame] = (float(size[0]), float(size[1]))
    missing = [f for f in soles if f not in checked]
    if missing:
        raise ValueError(f"sole_size: no size for the 6d contacts {missing}")
    return {f: checked[f] for f in soles}


def _shortest_rotation(n) -> np.ndarray:
    """R_n with R_n e_z = n, the shortest rotation (Rodrigues about e_z × n; π about x for n = −e_z)."""
    z = np.array([0.0, 0.0, 1.0])
    axis, cosine = np.cross(z, n), float(n @ z)
    if cosine < -1.0 + 1e-12:
        return np.diag([1.0, -1.0, -1.0])
    K = _skew(axis)
    return np.eye(3) + K + K @ K / (1.0 + cosine)


def _skew(x) -> np.ndarray:
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def _frame_rotations(model, state, contacts):
    """(A_R_c (k, 3, 3), J_ω (k, 3, N)) of each contact frame: its rotation in the world and
    the angular rows of its body Jacobian in its own axes, whose columns are z_q = [z_H; z_s]
    (a CoupledModel's: the tree's through Ĝ)."""
    tree = getattr(model, "tree", model)
    tree_state = model.tree_state(state) if tree is not model else state
    scratch, _ = contact_frame_kinematics(tree, tree_state, tuple(contacts))
    rotation, J_local = scratch.rotation.copy(), scratch.J_local.copy()
    J_omega = J_local[:, 3:]
    if tree is not model:
        J_omega = J_omega @ model.velocity_map
    return rotation, J_omega
