"""Pinocchio as the independent reference of the tests and benchmarks.

Nothing of the engine uses it: ``pin`` comes with the test extra (setup.py) and is
passed in, so importing this module needs no Pinocchio.
"""

from __future__ import annotations


def rigid_constraint_models(pin, pinocchio_model, contacts):
    """(StdVec_RigidConstraintModel, StdVec_RigidConstraintData) of our contacts:
    CONTACT_3D for a point, CONTACT_6D for a 6d contact, in LOCAL_WORLD_ALIGNED or
    LOCAL axes as the contact's reference says, at its frame (zero Baumgarte gains,
    Pinocchio's default)."""
    models = []
    for contact in contacts:
        frame = pinocchio_model.frames[pinocchio_model.getFrameId(contact.frame)]
        kind = pin.ContactType.CONTACT_3D if contact.kind == "point" else pin.ContactType.CONTACT_6D
        reference = (pin.ReferenceFrame.LOCAL_WORLD_ALIGNED if contact.reference == "world_aligned"
                     else pin.ReferenceFrame.LOCAL)
        models.append(pin.RigidConstraintModel(kind, pinocchio_model, frame.parentJoint, frame.placement, reference))
    return (pin.StdVec_RigidConstraintModel(models),
            pin.StdVec_RigidConstraintData([model.createData() for model in models]))
