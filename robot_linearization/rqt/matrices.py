"""Which matrices a linearization node publishes, and the names of their rows and columns.

The node publishes A, B, M⁻¹ (and A_d, B_d with a step, λ, ∂λ/∂z, ∂λ/∂τ and the contact
margins with contacts, A_impact and Λ at a touchdown) in one robot_linearization/msg/Linearization
per cycle on ``<namespace>/linearization`` (:func:`message_data`), with its label lists:
``state_labels`` (A's rows and columns, [z_H, z_s, z_v, z_r]: ``H:x … H:rz, s:<joint> …,
v:x … v:rz, r:<joint> …``), ``contact_labels`` (λ's entries, ``<frame>:fx … :mz``) and
``margin_labels``.  Every axis follows from those:

========  =====================================  ================================
axis      labels                                 blocks (the lines drawn between)
========  =====================================  ================================
state     state_labels                           z_H | z_s | z_v | z_r
velocity  the v: and r: entries (M⁻¹'s N)        v | r
input     ``τ:<joint>`` (B's columns)            —
contact   contact_labels                         one block per contact frame
margin    contact_margin_labels                  one block per contact frame
force     the single column ``λ`` (Λ, the margin) —
========  =====================================  ================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ros.interfaces import LINEARIZATION, linearization_matrices



@dataclass(frozen=True)
class MatrixKind:
    """A matrix the node publishes: its topic (under the node's namespace), the
    symbol shown, and the axes of its rows and columns (see the module's table)."""

    topic: str
    symbol: str
    rows: str
    cols: str
    meaning: str


MATRICES = (
    MatrixKind("A", "A", "state", "state", "ż = A z + B w, continuous time"),
    MatrixKind("B", "B", "state", "input", "input matrix: joint torques"),
    MatrixKind("M_inv", "M⁻¹", "velocity", "velocity", "inverse mass matrix"),
    MatrixKind("A_d", "A_d", "state", "state", "one step: z⁺ = A_d z + B_d w"),
    MatrixKind("B_d", "B_d", "state", "input", "one step's input matrix"),
    MatrixKind("contact_forces", "λ", "contact", "force", "contact forces on the robot"),
    MatrixKind("contact_forces_state_jacobian", "∂λ/∂z", "contact", "state", "contact forces against the state"),
    MatrixKind("contact_forces_input_jacobian", "∂λ/∂τ", "contact", "input", "contact forces against the torques"),
    MatrixKind("contact_margins", "margins", "margin", "force", "friction, unilateral, CoP margins (≥ 0: possible)"),
    MatrixKind("contact_margins_state_jacobian", "∂margin/∂z", "margin", "state", "margins against the state"),
    MatrixKind("contact_margins_input_jacobian", "∂margin/∂τ", "margin", "input", "margins against the torques"),
    MatrixKind("impact_map", "A_impact", "state", "state", "the last touchdown: z⁺ = A_impact z⁻"),
    MatrixKind("impulses", "Λ", "contact", "force", "the last touchdown's impulses"),
)
BY_TOPIC = {kind.topic: kind for kind in MATRICES}

BLOCK_NAMES = {"H": "z_H", "s": "z_s", "v": "z_v", "r": "z_r"}


@dataclass(frozen=True)
class Axis:
    """The labels of one axis of a matrix, and its blocks as (name, first, end) index ranges."""

    labels: tuple[str, ...]
    blocks: tuple[tuple[str, int, int], ...]

    @property
    def boundaries(self) -> tuple[int, ...]:
        """Indices where a block starts, after the first: where the lines go."""
        return tuple(first for _, first, _ in self.blocks[1:])


def _blocks(labels, group_of, name_of=lambda group: group) -> tuple:
    """Consecutive runs of labels with the same group, as (name, first, end)."""
    blocks, first = [], 0
    for i in range(1, len(labels) + 1):
        if i == len(labels) or group_of(labels[i]) != group_of(labels[first]):
            blocks.append((name_of(group_of(labels[first])), first, i))
            first = i
    return tuple(blocks)


def joint_names(state_labels) -> tuple[str, ...]:
    """The joints, in the model's order, read off the state labels' ``s:<joint>`` entries."""
    return tuple(label[2:] for label in state_labels if label.startswith("s:"))


def axis(kind: str, state_labels, contact_labels=(), margin_labels=()) -> Axis:
    """The labels and blocks of an axis of kind 'state', 'velocity', 'input',
    'contact', 'margin' or 'force', from the node's label lists."""
    state_labels, contact_labels = tuple(state_labels), tuple(contact_labels)
    prefix = lambda label: label.split(":", 1)[0]  # noqa: E731 - H, s, v, r
    if kind == "state":
        return Axis(state_labels, _blocks(state_labels, prefix, lambda p: BLOCK_NAMES.get(p, p)))
    if kind == "velocity":
        labels = tuple(label for label in state_labels if prefix(label) in ("v", "r"))
        return Axis(labels, _blocks(labels, prefix, lambda p: BLOCK_NAMES.get(p, p)))
    if kind == "input":
        labels = tuple(f"τ:{joint}" for joint in joint_names(state_labels))
        return Axis(labels, (("τ", 0, len(labels)),) if labels else ())
    if kind in ("contact", "margin"):
        labels = contact_labels if kind == "contact" else tuple(margin_labels)
        return Axis(labels, _blocks(labels, lambda label: label.rsplit(":", 1)[0]))
    if kind == "force":
        return Axis(("value",), (("value", 0, 1),))
    raise ValueError(f"axis kind must be state, velocity, input, contact, margin or force, got {kind!r}")


def matrix_axes(kind: MatrixKind, state_labels, contact_labels=(), margin_labels=()) -> tuple[Axis, Axis]:
    """(rows, cols) of one matrix kind."""
    return (axis(kind.rows, state_labels, contact_labels, margin_labels),
            axis(kind.cols, state_labels, contact_labels, margin_labels))


def axes_problem(shape, rows: Axis, cols: Axis) -> str | None:
    """Why a received matrix does not fit the labels received (a model swap half-way), or None."""
    if shape == (len(rows.labels), len(cols.labels)):
        return None
    return (f"matrix is {shape[0]}×{shape[1]} but its labels name {len(rows.labels)}×{len(cols.labels)} "
            f"(waiting for the labels of the new model or contact set)")


def linearization_nodes(topic_names_and_types) -> dict[str, tuple[str, ...]]:
    """The linearization nodes visible in the graph: {namespace: the matrices every cycle has (A, B,
    M⁻¹; the others show once a message has them: :func:`message_data`)}, from rclpy's
    ``get_topic_names_and_types()`` [(name, [types])].  A node is a namespace with
    ``<ns>/linearization`` of type robot_linearization/msg/Linearization."""
    nodes = {name[:-len("/linearization")]: ("A", "B", "M_inv") for name, kinds in topic_names_and_types
             if name.endswith("/linearization") and LINEARIZATION in kinds}
    return dict(sorted(nodes.items()))


FIELDS = {"A": "state_matrix", "B": "input_matrix", "M_inv": "inverse_mass_matrix", "A_d": "discrete_state_matrix",
          "B_d": "discrete_input_matrix", "contact_forces_state_jacobian": "contact_forces_state_jacobian",
          "contact_forces_input_jacobian": "contact_forces_input_jacobian",
          "contact_margins_state_jacobian": "margins_state_jacobian",
          "contact_margins_input_jacobian": "margins_input_jacobian", "impact_map": "impact_map"}
COLUMNS = {"contact_forces": "contact_forces", "contact_margins": "margins", "impulses": "impulses"}
"""The message's field of each matrix the view shows (:data:`MATRICES`), and of the vectors it shows
as one column."""


def message_data(msg) -> tuple[dict, tuple, tuple, tuple]:
    """({matrix: array} of the matrices a Linearization message holds, state_labels, contact_labels,
    margin_labels): what :meth:`LinearizationView.show_data` takes.  InputError for a field whose
    size does not match its labels."""
    fields = linearization_matrices(msg)
    matrices = {kind: fields[field] for kind, field in FIELDS.items() if fields[field] is not None}
    for kind, field in COLUMNS.items():
        values = np.asarray(getattr(msg, field), dtype=np.float64)
        if values.size:
            matrices[kind] = values[:, None]
    return matrices, tuple(msg.state_labels), tuple(msg.contact_labels), tuple(msg.margin_labels)


def topics_to_follow(available, shown: str) -> tuple[str, ...]:
    """The matrix topics the view subscribes to, of those a node has (``available``):
    the one shown, A_d (or A without a step) for the eigenvalues, λ for the forces."""
    eigen = "A_d" if "A_d" in available else "A"
    return tuple(sorted({shown, eigen, "contact_forces"} & set(available)))
