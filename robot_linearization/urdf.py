"""URDF -> :class:`~robot_linearization.model.Model` (urdf-parser-py).

Fixed joints are merged: the child link's inertia is lumped into the body it is
welded to and its frame is kept in ``Model.frames``.  The URDF root link is the
base.  Everything a URDF can get wrong is reported as a ModelError naming the
link or joint.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .arguments import choice
from .joints import Joint, JointType
from .coupling import CoupledModel, couple
from .builder import ModelBuilder
from .model import STANDARD_GRAVITY, Model, ModelError
from .spatial import inverse_transform, spatial_inertia, velocity_transform

log = logging.getLogger(__name__)

MAX_DESCRIPTION_BYTES = 10 * 1024 * 1024
"""Larger descriptions are refused unread (real URDFs are well below 1 MB)."""

INERTIA_NOISE = 1e-6
"""kg m²: inertia errors below this (rounding in exported URDFs) only warn."""

INERTIA_RELATIVE_NOISE = 1e-6
"""Violations of the physical inertia conditions smaller than this fraction of the
largest principal moment are rounding, not a warning."""

_warned: set = set()  # warnings already given in this process: a model loaded twice warns once

_MOVABLE = {"revolute": JointType.REVOLUTE, "continuous": JointType.REVOLUTE, "prismatic": JointType.PRISMATIC}


MIMIC_MODES = ("coupled", "independent", "error")


def load_urdf(path_or_xml: str | bytes | os.PathLike, floating_base: bool = True, *,
              gravity: ArrayLike = STANDARD_GRAVITY, mimic_joints: str = "coupled") -> Model | CoupledModel:
    """Build a model from a URDF file path or an XML string.

    floating_base: True -> the root link is a free-floating base (state on
    SE(3)×ℝⁿ×ℝ⁶×ℝⁿ); False -> the root link is welded to the world frame.
    gravity (3,): in the world frame, default [0, 0, −9.81] m/s².
    mimic_joints: "coupled" (default): a mimic joint follows its source joint,
    s_m = multiplier·s_j + offset, and is not a state or input — a
    :class:`~robot_linearization.coupling.CoupledModel` (reduced coordinates, as
    Pinocchio's buildModelFromUrdf(..., mimic=True)); "independent" treats each
    as an ordinary actuated joint (Pinocchio's default); "error" refuses them.
    Without mimic joints the result is a plain Model whatever the mode.

    ``path_or_xml``: a URDF file's path, or its XML text (a string starting with '<').  ModelError,
    one line, for a malformed URDF.
    """
    if not isinstance(path_or_xml, (str, bytes, os.PathLike)):
        raise ModelError(f"path_or_xml: expected a URDF file path or URDF XML text, got {type(path_or_xml).__name__}")
    choice(mimic_joints, "mimic_joints", MIMIC_MODES)
    if not isinstance(floating_base, (bool, np.bool_)):  # "false" would be truthy
        raise ModelError(f"floating_base must be True or False, got {floating_base!r}")
    root = _parse_xml(_read_description(path_or_xml))
    robot = _parse_urdf(_dynamics_only(root))
    return _build(robot, root.get("name") or "robot", floating_base, gravity, mimic_joints)


def effort_limits(path_or_xml: str | bytes | os.PathLike, joint_names: Iterable[str]) -> NDArray[np.float64]:
    """The ``<limit effort=…>`` of each of ``joint_names`` (n,) [N m or N], from a URDF's path or
    text; inf where a joint has none.  Parsed as :func:`load_urdf` parses (quietly: the parser's
    complaints about tags the dynamics ignore are logged at DEBUG, never printed)."""
    robot = _parse_urdf(_dynamics_only(_parse_xml(_read_description(path_or_xml))))
    limits = {j.name: (j.limit.effort if j.limit is not None and j.limit.effort else np.inf) for j in robot.joints}
    return np.array([limits.get(name, np.inf) for name in joint_names], dtype=float)


def _read_description(path_or_xml) -> str:
    """The XML text of a description given as XML or as a file path (not xacro).  A
    byte-order mark and blank lines before ``<?xml`` are dropped, as urdfdom and Pinocchio do."""
    if isinstance(path_or_xml, bytes):
        path_or_xml = path_or_xml.decode("utf-8", errors="replace")
    path = None
    if isinstance(path_or_xml, str) and path_or_xml.lstrip("\ufeff \t\r\n").startswith("<"):
        text = path_or_xml
    else:
        path = os.fspath(path_or_xml)
        shown = path if len(path) <= 80 else path[:77] + "..."
        if os.path.isdir(path):
            raise ModelError(f"cannot read URDF file '{shown}': it is a directory")
        try:
            size = os.path.getsize(path)
        except (OSError, ValueError) as e:
            raise ModelError(f"cannot read URDF file '{shown}': {getattr(e, 'strerror', None) or e}") from None
        if size > MAX_DESCRIPTION_BYTES:
            raise ModelError(f"URDF file '{shown}' is {size} bytes, more than the {MAX_DESCRIPTION_BYTES} allowed")
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    if len(text) > MAX_DESCRIPTION_BYTES:
        raise ModelError(f"robot description is {len(text)} characters, more than the {MAX_DESCRIPTION_BYTES} allowed")
    _refuse_xacro(text, path)
    return text.lstrip("\ufeff \t\r\n")


XACRO = re.compile(r"<xacro:|\$\{|\$\(")
"""What only an unprocessed xacro file holds: xacro elements, ${expressions}, $(substitution args)."""


def _refuse_xacro(xml: str, path: str | None) -> None:
    """ModelError with the command to run when ``xml`` (read from ``path``, if a file)
    is xacro, not URDF.  xacro's output, which often keeps the xmlns:xacro declaration,
    is accepted."""
    if XACRO.search(re.sub(r"<!--.*?-->", "", xml, flags=re.DOTALL)):
        source = path if path and path.endswith(".xacro") else "robot.urdf.xacro"
        target = os.path.basename(source).removesuffix(".xacro").removesuffix(".urdf") + ".urdf"
        raise ModelError(f"this is xacro: run `xacro {source} > {target}` first")


def _parse_xml(xml: str) -> ET.Element:
    # A URDF never needs a DTD; refusing entity declarations rules out entity-
    # expansion attacks ("billion laughs") and external entities outright.
    if "<!ENTITY" in xml or "<!DOCTYPE" in xml:
        raise ModelError("robot description declares a DOCTYPE/ENTITY, which URDF does not use; refused")
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as e:
        raise ModelError(f"robot description is not well-formed XML: {e}") from None
    if root.tag != "robot":
        raise ModelError(f"not a URDF: the root element is <{root.tag}>, expected <robot>")
    return root


def _dynamics_only(root: ET.Element) -> bytes:
    """The description without what the dynamics ignore (geometry, materials,
    transmissions, simulator tags), whose quirks would otherwise fail parsing."""
    for child in list(root):
        if child.tag not in ("link", "joint"):
            root.remove(child)
        elif child.tag == "link":
            for part in list(child):
                if part.tag in ("visual", "collision"):
                    child.remove(part)
    return ET.tostring(root)


def _parse_urdf(xml: bytes):
    """urdf-parser-py's Robot; its complaints about parts that do not matter for
    the dynamics (transmissions, materials, gazebo tags) are logged, not fatal."""
    from urdf_parser_py import urdf as urdf_parser
    from urdf_parser_py.xml_reflection import core

    problems: list[str] = []
    previous = core.on_error
    core.on_error = problems.append  # the parser otherwise prints to stderr
    try:
        with contextlib.redirect_stdout(None):
            robot = urdf_parser.URDF.from_xml_string(xml)
    except Exception as e:  # the parser raises bare Exceptions/AssertionErrors
        text = " ".join(line.strip() for line in str(e).splitlines() if line.strip())  # (the parser's: 2 lines)
        raise ModelError(f"invalid URDF: {text}") from None
    finally:
        core.on_error = previous
    for problem in problems:  # unknown tags/attributes are common and harmless
        level = logging.DEBUG if "Unknown" in problem else logging.WARNING
        log.log(level, "URDF parser: %s", problem.strip().replace("\n", " "))
    return robot


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning("%s", message)


def _pose(origin) -> np.ndarray:
    """4×4 transform of a URDF <origin xyz rpy> (R = Rz(yaw) Ry(pitch) Rx(roll))."""
    H = np.eye(4)
    if origin is None:
        return H
    xyz = np.asarray(origin.xyz if origin.xyz is not None else (0, 0, 0), dtype=float)
    roll, pitch, yaw = (origin.rpy if origin.rpy is not None else (0, 0, 0))
    cr, sr, cp, sp, cy, sy = np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch), np.cos(yaw), np.sin(yaw)
    H[:3, :3] = [[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                 [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                 [-sp, cp * sr, cp * cr]]
    H[:3, 3] = xyz
    return H


def _link_inertia(link) -> np.ndarray:
    """Spatial inertia of a URDF link in its own frame; validated physically."""
    inertial = link.inertial
    if inertial is None:
        return np.zeros((6, 6))
    mass = float(inertial.mass if inertial.mass is not None else 0.0)
    i = inertial.inertia
    I_com = np.zeros((3, 3)) if i is None else np.array(
        [[i.ixx, i.ixy, i.ixz], [i.ixy, i.iyy, i.iyz], [i.ixz, i.iyz, i.izz]], dtype=float)
    H = _pose(inertial.origin)
    if not (np.isfinite(mass) and np.all(np.isfinite(I_com)) and np.all(np.isfinite(H))):
        raise ModelError(f"link '{link.name}': inertial contains NaN or inf")
    if mass < 0.0:
        raise ModelError(f"link '{link.name}': negative mass {mass}")
    principal = np.linalg.eigvalsh(0.5 * (I_com + I_com.T))
    if principal[0] < -INERTIA_NOISE:
        raise ModelError(f"link '{link.name}': rotational inertia is not positive semi-definite "
                         f"(principal moments {principal} kg m²)")
    noise = max(INERTIA_RELATIVE_NOISE * float(np.abs(principal).max()), 1e-12)  # 1e-12 kg m²: a massless link
    if principal[0] < -noise or principal[0] + principal[1] < principal[2] - max(noise, INERTIA_NOISE):
        _warn_once(f"link '{link.name}': principal moments {principal} kg m² are not those of a physical body "
                   "(negative or violating the triangle inequality); loaded as given")
    R = H[:3, :3]
    return spatial_inertia(mass, H[:3, 3], R @ I_com @ R.T)


def _build(robot, name: str, floating_base: bool, gravity, mimic_joints: str) -> Model | CoupledModel:
    links = {link.name: link for link in robot.links}
    if not links:
        raise ModelError("URDF has no links")
    if None in links:
        raise ModelError("a <link> has no name")
    for joint in robot.joints:
        for attribute in ("name", "type", "parent", "child"):
            if getattr(joint, attribute) is None:
                raise ModelError(f"joint '{joint.name}' has no {attribute}")
    children: dict[str, list] = {link: [] for link in links}
    parent_joint: dict[str, str] = {}
    for joint in robot.joints:
        for end in (joint.parent, joint.child):
            if end not in links:
                raise ModelError(f"joint '{joint.name}' refers to link '{end}', which does not exist")
        if joint.child in parent_joint:
            raise ModelError(f"link '{joint.child}' is the child of both joint '{parent_joint[joint.child]}' "
                             f"and joint '{joint.name}': a URDF must be a tree")
        parent_joint[joint.child] = joint.name
        children[joint.parent].append(joint)
    roots = [link for link in links if link not in parent_joint]
    if len(roots) != 1:
        raise ModelError(f"URDF must have exactly one root link, found {len(roots)}: {roots[:5]}"
                         + (" (the joints form a loop)" if not roots else ""))
    root = roots[0]

    # Lump inertias of links welded together by fixed joints, in each body's frame.
    body_of = {root: (root, np.eye(4))}  # link -> (body link, body_H_link)
    lumped = {root: _link_inertia(links[root])}
    movable = []  # (joint, parent body, placement) in depth-first order
    stack = [root]
    visited = set()
    while stack:
        link = stack.pop()
        visited.add(link)
        body, H_body_link = body_of[link]
        for joint in children[link]:
            H_body_joint = H_body_link @ _pose(joint.origin)
            child = joint.child
            if joint.type == "fixed":
                body_of[child] = (body, H_body_joint)
                X = velocity_transform(inverse_transform(H_body_joint))  # child_X_body
                lumped[body] = lumped[body] + X.T @ _link_inertia(links[child]) @ X
            elif joint.type in _MOVABLE:
                if joint.mimic is not None and mimic_joints == "error":
                    raise ModelError(
                        f"joint '{joint.name}' mimics joint '{joint.mimic.joint}' (mimic_joints='error'); use "
                        "mimic_joints='coupled' (it follows) or 'independent' (it is actuated)")
                body_of[child] = (child, np.eye(4))
                lumped[child] = _link_inertia(links[child])
                movable.append((joint, body, H_body_joint))
            elif joint.type in ("floating", "planar"):
                raise ModelError(
                    f"joint '{joint.name}' is {joint.type}: only the root link may move freely; remove the "
                    f"joint and load with floating_base=True so that '{child}' or the root is the base")
            else:
                raise ModelError(f"joint '{joint.name}' has unsupported type '{joint.type}'")
        stack.extend(reversed([j.child for j in children[link]]))

    builder = ModelBuilder(root, lumped[root], floating_base=floating_base, gravity=gravity, name=name)
    for joint, parent_body, placement in movable:
        axis = joint.axis if joint.axis is not None else (1.0, 0.0, 0.0)
        try:
            spec = Joint(joint.name, _MOVABLE[joint.type], tuple(axis))
        except ValueError as e:
            raise ModelError(str(e)) from None
        builder.add_body(joint.child, parent=parent_body, joint=spec, placement=placement,
                         inertia=lumped[joint.child])
    for link, (body, H) in body_of.items():
        if body != link:
            builder.add_frame(link, body=body, placement=H)
    tree = builder.build()
    mimics = [(joint.name, joint.mimic.joint, 1.0 if joint.mimic.multiplier is None else joint.mimic.multiplier,
               0.0 if joint.mimic.offset is None else joint.mimic.offset)
              for joint, _, _ in movable if joint.mimic is not None]
    if mimic_joints != "coupled" or not mimics:
        return tree
    return couple(tree, mimics)
