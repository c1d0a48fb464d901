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

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence, TypeAlias

import numpy as np

from .arguments import did_you_mean
if TYPE_CHECKING:
    from .coupling import AnyModel

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
    _hash: int = field(init=False, repr=False, compare=False)  # (set in __post_init__)

    def __post_init__(self):
        if not isinstance(self.frame, str) or not self.frame:
            raise ContactError(f"contact frame must be a link name, got {self.frame!r}")
        if self.kind not in KINDS:
            raise ContactError(f"contact '{self.frame}': kind must be one of {tuple(KINDS)}, got {self.kind!r}")
        if self.reference not in REFERENCES:
            raise ContactError(f"contact '{self.frame}': reference must be one of {REFERENCES}, "
                               f"got {self.reference!r}")
        object.__setattr__(self, "_hash", hash((self.frame, self.kind, self.reference)))

    def __hash__(self) -> int:
        """The fields' hash, computed once: a contact set is looked up by its hash every control
        cycle (as_contacts, contact_arrays)."""
        return self._hash

    def __reduce__(self):
        return Contact, (self.frame, self.kind, self.reference)  # (the hash of str differs between processes)

    @property
    def dimension(self) -> int:
        """Number of constrained directions (rows of J, entries of λ): 3 or 6."""
        return KINDS[self.kind]

    @property
    def labels(self) -> tuple[str, ...]:
        """Names of this contact's entries of λ: <frame>:fx … (and :mx … for 6d)."""
        axes = ("fx", "fy", "fz", "mx", "my", "mz")[:self.dimension]
        return tuple(f"{self.frame}:{a}" for a in axes)


CONTACT_SYNTAX = "frame[:point|6d[:world_aligned|local]], comma-separated"

Contacts: TypeAlias = "Contact | str | Sequence[Contact | str] | None"  # what as_contacts reads


def as_contacts(contacts: Contacts) -> tuple[Contact, ...]:
    """A contact set from what the API, the node and the command line take: Contacts,
    text entries ``"frame[:point|6d[:world_aligned|local]]"`` (a bare name is a
    world-aligned point contact), one comma-separated string of them, or a list
    mixing both; None, "" or "none" = no contacts.  ContactError names a bad entry or
    a frame given twice.  A set seen before is not read again (it is called every cycle)."""
    if isinstance(contacts, list):
        contacts = tuple(contacts)
    try:
        return _as_contacts_seen(contacts)
    except TypeError:  # unhashable (an entry that is a list, an array): read it, to name what is wrong
        return _as_contacts(contacts)


def _as_contacts(contacts) -> tuple[Contact, ...]:
    if contacts is None:
        return ()
    if isinstance(contacts, str):
        contacts = [] if contacts.strip().lower() == "none" else contacts.split(",")
    elif isinstance(contacts, Contact):
        contacts = [contacts]
    elif not isinstance(contacts, (list, tuple)):
        raise ContactError(f"contacts: expected Contacts or frame names ({CONTACT_SYNTAX}), "
                           f"got {type(contacts).__name__}")
    out = []
    for entry in contacts:
        if isinstance(entry, Contact):
            out.append(entry)
            continue
        if not isinstance(entry, str):
            raise ContactError(f"contacts: expected Contacts or frame names ({CONTACT_SYNTAX}), got an entry "
                               f"{entry!r}")
        entry = entry.strip()
        if not entry:
            continue
        parts = [p.strip() for p in entry.split(":")]
        if len(parts) > 3 or not parts[0]:
            raise ContactError(f"contact '{entry}' is not {CONTACT_SYNTAX}")
        out.append(Contact(*parts))
    frames = [c.frame for c in out]
    duplicated = sorted({f for f in frames if frames.count(f) > 1})
    if duplicated:
        raise ContactError(f"frames in contact more than once: {duplicated}")
    return tuple(out)


_as_contacts_seen = functools.lru_cache(maxsize=1024)(_as_contacts)


@dataclass(frozen=True)
class ResolvedContact:
    """A contact bound to a model: the body it moves with and c_X_b, the velocity
    transform from that body's frame to the contact frame (6, 6)."""

    contact: Contact
    body: int
    X_contact_body: np.ndarray


def resolve(model: AnyModel, contacts: Sequence[Contact]) -> tuple[ResolvedContact, ...]:
    """Bind ``contacts`` (as :func:`as_contacts` returns them) to ``model``'s bodies; ContactError
    for an unknown frame."""
    from .spatial import inverse_transform, velocity_transform

    resolved = []
    for contact in contacts:
        if contact.frame not in model.frames:
            raise ContactError(f"contact frame '{contact.frame}' is not a link of model '{model.name}'"
                               f"{did_you_mean(contact.frame, list(model.frames))}")
        body, body_H_frame = model.frames[contact.frame]
        resolved.append(ResolvedContact(contact, body, velocity_transform(inverse_transform(body_H_frame))))
    return tuple(resolved)


def contact_labels(contacts: Sequence[Contact]) -> tuple[str, ...]:
    """Names of the entries of λ, in order, of ``contacts`` (as :func:`as_contacts` returns them)."""
    return tuple(label for c in contacts for label in c.labels)


def format_contacts(contacts: Contacts) -> str:
    """The text :func:`as_contacts` reads back."""
    return ", ".join(f"{c.frame}:{c.kind}:{c.reference}" for c in as_contacts(contacts))
