"""What a user passes, checked before a compiled kernel sees it.

The kernels index their arrays without bounds checks: a torque vector one entry
short would be read past its end (garbage at best, a crash at worst).  So every
public function converts its array arguments here, and a wrong length, ndim or
dtype, or a NaN, becomes one line naming the argument, what was expected and
what was given:

    joint_torques: expected shape (12,) (one per joint of model 'solo'), got shape (2, 12)

Integers are accepted (and converted to float64); booleans, complex numbers,
strings, None and objects are not.  Whatever the layout a caller's array has — the
other byte order (``np.fromfile(f, '>f8')``, a big-endian log), Fortran order,
strides, float32, read-only, unaligned, a memory map — the kernels get a copy that is
native-endian, C-contiguous, aligned, writeable float64 (:func:`kernel_ready`): numba
reads raw bytes (a big-endian array would be silently misread) and compiles another
version of a kernel for each other layout (tens of seconds in a control cycle).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TypeGuard

import numpy as np
from numpy.typing import NDArray


def _given(value) -> str:
    """A short description of what was given, for an error message."""
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} ({value.dtype})"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)} entries"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


FLOAT64 = np.dtype(np.float64)
"""numpy's own float64 dtype: the control cycle tests an array's dtype by identity with it."""


def kernel_ready(value: object) -> TypeGuard[NDArray[np.float64]]:
    """Whether ``value`` is an array exactly as the kernels take it: a plain ndarray of
    native-endian float64, C-contiguous, aligned and writeable (numpy's CARRAY flag)."""
    return type(value) is np.ndarray and (value.dtype is FLOAT64 or value.dtype.char == "d"
                                          and value.dtype.isnative) and value.flags.carray


def real_array(value: object, name: str, shape: tuple, *, what: str | Callable[[], str] = "", finite: bool = True,
               error: type[ValueError] = ValueError) -> NDArray[np.float64]:
    """``value`` as a :func:`kernel_ready` float64 array of ``shape`` (−1: any length there);
    ``error`` (a ValueError) naming ``name`` otherwise.  ``what`` explains the shape
    ("one per joint of model 'x'"), or is a function returning that text (called only for an
    error message: an f-string per call costs a control cycle ≈ 0.3 µs).  finite=False leaves
    NaN/inf to the caller (a kernel that checks them itself)."""
    if kernel_ready(value) \
            and (value.shape == shape or shape == (-1,) and value.ndim == 1) and (not finite or _all_finite(value)):
        return value  # the control cycle's case, in under a microsecond
    if isinstance(value, np.ndarray):
        array = value
    else:
        if value is None or isinstance(value, (str, bytes, Mapping)):
            raise error(f"{name}: expected {_expected(shape, what)}, got {_given(value)}")
        try:
            array = np.asarray(value)
        except (ValueError, TypeError):  # ragged nesting
            raise error(f"{name}: expected {_expected(shape, what)}, got a ragged {type(value).__name__}") from None
    if array.dtype.kind not in "iuf":
        kind = {"b": "booleans", "c": "complex numbers", "U": "strings", "S": "bytes", "O": "objects"}.get(
            array.dtype.kind, str(array.dtype))
        raise error(f"{name}: expected real numbers ({_expected(shape, what)}), got {kind}")
    if len(shape) != array.ndim or any(s not in (-1, a) for s, a in zip(shape, array.shape)):
        raise error(f"{name}: expected {_expected(shape, what)}, got shape {array.shape}")
    if not kernel_ready(array):
        array = np.array(array, dtype=np.float64, order="C")
    if finite and not _all_finite(array):
        if array.ndim == 0:
            raise error(f"{name}: is {float(array)}, expected a finite number")
        bad = np.unravel_index(int(np.flatnonzero(~np.isfinite(array))[0]), array.shape)
        index = bad[0] if len(bad) == 1 else tuple(int(i) for i in bad)
        raise error(f"{name}: contains NaN or inf (entry {index} is {array[bad]})")
    return array


def _all_finite(array: np.ndarray) -> bool:
    """Whether every entry is finite: a finite sum of squares says so at once (only an
    overflow beyond 1e154 sends it to the entry-wise check)."""
    flat = array.reshape(-1)
    return math.isfinite(flat.dot(flat)) or bool(np.isfinite(flat).all())


def _expected(shape, what) -> str:
    if shape == ():  # what names the number ("a positive number of seconds"), or it is any number
        return (what() if callable(what) else what) or "a number"
    elif shape == (-1,):
        text = "a 1-D array"
    else:
        text = "shape (" + ", ".join("any" if s == -1 else str(s) for s in shape) + ("," if len(shape) == 1 else "") \
            + ")"
    if callable(what):
        what = what()
    return text + (f" ({what})" if what else "")


def joint_vector(model, value, name: str, *, default_zero: bool = True, finite: bool = True) -> np.ndarray:
    """A per-joint vector (n,) in ``model.joint_names`` order; None gives zeros when
    ``default_zero``."""
    n = model.n_joints
    if value is None and default_zero:
        return np.zeros(n)
    return real_array(value, name, (n,), what=lambda: f"one per joint of model '{model.name}'", finite=finite)


def six_vector(value, name: str, what: str = "[linear; angular]") -> np.ndarray:
    return real_array(value, name, (6,), what=what)


def positive_number(value, name: str, unit: str = "") -> float:
    """A positive, finite number (a step in seconds, a finite-difference step): a Python or
    numpy number, or a 0-d array."""
    if type(value) is float and 0.0 < value < math.inf:
        return value  # the control cycle's case
    expected = f"a positive number{unit and ' of ' + unit}"
    number = float(real_array(value, name, (), what=expected, finite=False))
    if not 0 < number < math.inf:
        raise ValueError(f"{name}: expected {expected}, got {_given(value)}")
    return number


def choice(value, name: str, options: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name}: expected one of {', '.join(repr(o) for o in options)}, got {_given(value)}")
    return value


def check_model(model, name: str = "model"):
    """A Model or CoupledModel (duck-typed: both describe their state by these properties)."""
    if not (hasattr(type(model), "n_velocities") and hasattr(type(model), "state_labels")):
        raise ValueError(f"{name}: expected a robot_linearization Model (from rl.load_urdf or rl.ModelBuilder), "
                         f"got {_given(model)}")
    return model


class Settings:
    """The base of the settings dataclasses (walking.mpc.MPCSettings, ros.pipeline.PipelineConfig): an
    attribute that is not one of their fields is refused with an AttributeError of one line naming the
    nearest field (a name of an earlier release, a typo), instead of being kept where nothing reads it."""

    __slots__ = ()

    def __setattr__(self, name: str, value) -> None:
        fields = getattr(self, "__dataclass_fields__", {})
        if name not in fields:
            nearest = difflib.get_close_matches(name, list(fields), n=1, cutoff=0.0)
            raise AttributeError(f"{type(self).__name__} has no setting {name!r}"
                                 + (f": the nearest is {nearest[0]!r}" if nearest else ""))
        object.__setattr__(self, name, value)


def did_you_mean(name: str, options: Sequence[str]) -> str:
    """" (did you mean 'FL_FOOT'?)" for the closest of ``options`` (case-insensitive), or ""."""
    by_lower = {o.lower(): o for o in options}
    close = [f"'{by_lower[c]}'" for c in difflib.get_close_matches(str(name).lower(), list(by_lower), n=3,
                                                                       cutoff=0.6)]
    if not close:
        return ""
    return f" (did you mean {' or '.join(close) if len(close) < 3 else ', '.join(close[:-1]) + ' or ' + close[-1]}?)"


def check_tree(model, function: str):
    """A plain kinematic tree (:class:`~robot_linearization.Model`): the recursive
    algorithms do not take a CoupledModel's reduced coordinates."""
    check_model(model)
    if hasattr(model, "tree"):
        raise ValueError(f"{function} takes a Model, not a CoupledModel (mimic joints): use rl.linearize (A, B, "
                         f"M_inv), rl.constrained_forward_dynamics, or {function} on model.tree with "
                         "model.tree_state(state)")
    return model


def check_linearization(model, linearization, name: str = "linearization"):
    """A Linearization (rl.linearize / rl.linearize_trajectory) of ``model``."""
    check_model(model)
    if not all(hasattr(linearization, a) for a in ("A", "B", "M_inv", "state_labels", "state")):
        raise ValueError(f"{name}: expected a Linearization (from rl.linearize), got {_given(linearization)}")
    if tuple(linearization.state_labels) != tuple(model.state_labels):
        raise ValueError(f"{name}: not a linearization of model '{model.name}' (its state has "
                         f"{len(linearization.state_labels)} entries, the model's {len(model.state_labels)}, "
                         "or they name other joints)")
    return linearization
