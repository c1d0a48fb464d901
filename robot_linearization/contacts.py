"""Rigid contacts: which frame is held, how many directions, in which axes.

A contact is an acceleration-level holonomic constraint on a frame of the robot
(thesis §6.2, eq. (2.62)): a ``"point"`` contact holds the frame's origin
(3 directions, the classical acceleration of the point is zero), a ``"6d"``
contact holds the whole frame (its body acceleration is zero).  The contact
force λ and the constraint are expressed in the frame's own axes
(``reference="local"``) or in the world's axes at the frame's origin
(``"world_aligned"``, what friction cones want) — Pinocchio's LOCAL and
LOCAL_WORLD_ALIGNED.  Conventions: docs/contacts.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .model import Model

KINDS = {"point": 3, "6d": 6}
REFERENCES = ("world_aligned", "local")


class ContactError(ValueError):
    """A contact set that cannot be used (unknown frame, redundant or degenerate
    constraints); the text names the contacts."""


@dataclass(frozen=True)
class Contact:
    """A frame of the robot rigidly held by the environment.

    frame: any link of the URDF, including links merged into their parent by
    fixed joints (feet usually are), or a frame added with ModelBuilder.add_frame.
    kind: "point" (3 force components, the point is held, the frame may turn) or
    "6d" (6 wrench components [force; moment], the frame is held).
    reference: "world_aligned" (λ and the constraint in the world's axes at the
    frame's origin) or "local" (in the frame's axes).
    """

    frame: str
    kind: str = "point"
    reference: str = "world_aligned"

    def __post_init__(self):
        if not isinstance(self.frame, str) or not self.frame:
            raise ContactError(f"contact frame must be a link name, got {self.frame!r}")
        if self.kind not in KINDS:
            raise ContactError(f"contact '{self.frame}': kind must be one of {tuple(KINDS)}, got {self.kind!r}")
        if self.reference not in REFERENCES:
            raise ContactError(f"contact '{self.frame}': reference must be one of {REFERENCES}, "
                               f"got {self.reference!r}")

    @property
    def dimension(self) -> int:
        """Number of constrained directions (rows of J, entries of λ): 3 or 6."""
        return KINDS[self.kind]

    @property
    def labels(self) -> tuple[str, ...]:
        """Names of this contact's entries of λ: <frame>:fx … (and :mx … for 6d)."""
        axes = ("fx", "fy", "fz", "mx", "my", "mz")[:self.dimension]
        return tuple(f"{self.frame}:{a}" for a in axes)


def as_contacts(contacts) -> tuple[Contact, ...]:
    """A contact set from Contacts or frame names (a name is a world-aligned point
    contact); duplicates are refused."""
    if contacts is None:
        return ()
    if isinstance(contacts, (str, Contact)):
        contacts = [contacts]
    out = tuple(c if isinstance(c, Contact) else Contact(c) for c in contacts)
    frames = [c.frame for c in out]
    duplicated = sorted({f for f in frames if frames.count(f) > 1})
    if duplicated:
        raise ContactError(f"frames in contact more than once: {duplicated}")
    return out


@dataclass(frozen=True)
class ResolvedContact:
    """A contact bound to a model: the body it moves with and c_X_b, the velocity
    transform from that body's frame to the contact frame (6, 6)."""

    contact: Contact
    body: int
    X_contact_body: np.ndarray


def resolve(model: Model, contacts: Sequence[Contact]) -> tuple[ResolvedContact, ...]:
    """Bind contacts to ``model``'s bodies; ContactError for an unknown frame."""
    from .spatial import inverse_transform, velocity_transform

    resolved = []
    for contact in as_contacts(contacts):
        if contact.frame not in model.frames:
            known = sorted(model.frames)
            raise ContactError(f"contact frame '{contact.frame}' is not a link of model '{model.name}' "
                               f"(links: {', '.join(known[:12])}{' …' if len(known) > 12 else ''})")
        body, body_H_frame = model.frames[contact.frame]
        resolved.append(ResolvedContact(contact, body, velocity_transform(inverse_transform(body_H_frame))))
    return tuple(resolved)


def contact_labels(contacts: Sequence[Contact]) -> tuple[str, ...]:
    """Names of the entries of λ, in order."""
    return tuple(label for c in as_contacts(contacts) for label in c.labels)


CONTACT_SYNTAX = "frame[:point|6d[:world_aligned|local]], comma-separated"


def parse_contacts(spec) -> tuple[Contact, ...]:
    """Contacts from text, as ROS parameters, topics and the command line give them:
    ``"FL_FOOT, FR_FOOT:point:local, left_sole_link:6d"`` (or a list of such
    entries, which may also be Contacts); empty (or "none") = no contacts.
    ContactError names a bad entry."""
    if isinstance(spec, Contact):
        spec = [spec]
    entries = spec if isinstance(spec, (list, tuple)) else str(spec).split(",")
    contacts = []
    for entry in entries:
        if isinstance(entry, Contact):
            contacts.append(entry)
            continue
        entry = str(entry).strip()
        if not entry or (entry.lower() == "none" and len(entries) == 1):
            continue
        parts = [p.strip() for p in entry.split(":")]
        if len(parts) > 3 or not parts[0]:
            raise ContactError(f"contact '{entry}' is not {CONTACT_SYNTAX}")
        contacts.append(Contact(*parts))
    return as_contacts(contacts)


def format_contacts(contacts) -> str:
    """The text :func:`parse_contacts` reads back."""
    return ", ".join(f"{c.frame}:{c.kind}:{c.reference}" for c in as_contacts(contacts))
