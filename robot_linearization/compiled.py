"""Compilation of the hot loops.

Every recursive pass is one function, compiled by numba with an on-disk cache
(so a node pays the compile once per installation, not at its first control
cycle) and without the GIL (so several states can be linearized on several
cores).  A pass takes the model's arrays as one structure and its scratch as
another (workspace.py, as Pinocchio's algorithms take a Model and a Data), the
small ones plain arrays.  Set NUMBA_DISABLE_JIT=1 to step through them in Python.
"""

import functools
import hashlib
import logging
import os
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from numba import config, njit, types
from numba.core import caching
from numba.experimental import structref

FIRST_COMPILE_SECONDS = (40, 60)
"""How long the first calls compile with an empty cache (numba compiles on one core): to the
first A of the bundled quadruped, and with the contact kernels too.  Measured 2026-11-23 on
a 2-core machine (NUMBA_CACHE_DIR an empty directory): 38 s and 60 s."""

_checked: set = set()  # entry points whose cache was looked for
_said = False  # the announcement is made at most once per process


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


@functools.lru_cache(maxsize=None)
def kernel_sources_stamp(package_dir: str = _PACKAGE_DIR) -> bytes:
    """sha256 of every source file of the package that defines kernels (its text has ``@kernel``),
    with its path: the stamp of every kernel's on-disk cache.  numba stamps a kernel with its own
    file only, but the machine code it caches carries the passes it calls from other files, so
    after a change to one of those (an upgrade, an edit of the checkout) the old code would be
    loaded; with this stamp any change to a kernel source recompiles all of them."""
    paths = []
    for root, directories, files in os.walk(package_dir):
        directories[:] = [d for d in directories if d != "__pycache__"]
        paths += [os.path.join(root, name) for name in files if name.endswith(".py")]
    digest = hashlib.sha256()
    for path in sorted(paths):
        with open(path, "rb") as f:
            text = f.read()
        if b"@kernel" in text:
            digest.update(os.path.relpath(path, package_dir).encode() + b"\0" + text)
    return digest.digest()


class _PackageStamp:
    """A numba cache locator for this package's kernels, stamped by :func:`kernel_sources_stamp`."""

    def get_source_stamp(self):
        return kernel_sources_stamp()

    @classmethod
    def from_function(cls, py_func, py_file):
        if not os.path.abspath(py_file).startswith(_PACKAGE_DIR + os.sep):
            return None
        return super().from_function(py_func, py_file)


_LOCATORS = [type(f"Package{base.__name__}", (_PackageStamp, base), {}) for base in (
    getattr(caching, "UserProvidedCacheLocator", None), getattr(caching, "InTreeCacheLocator", None),
    getattr(caching, "UserWideCacheLocator", None)) if base is not None]
"""numba's own three file locators (its $NUMBA_CACHE_DIR, the package's __pycache__, the user's
cache directory), in numba's order, with the package's stamp; tried before numba's for this
package's files only (numba ≥ 0.61 names them as here; an older one keeps its per-file stamps)."""
if len(_LOCATORS) == 3 and hasattr(caching, "CacheImpl"):
    caching.CacheImpl._locator_classes[:0] = _LOCATORS  # type: ignore[assignment]  # (a list; numba types it Iterable)


def kernel(function=None, *, inline: bool = False):
    """Compile ``function`` in nopython mode: cached, GIL-free, numpy error model.

    inline=True inlines it into its callers at numba-IR level: for the small 6D
    operations, the call overhead otherwise rivals their 36 multiply-adds.
    """
    def compile_(f):
        KERNELS.add(f)
        return njit(cache=True, nogil=True, error_model="numpy", inline="always" if inline else "never")(f)
    return compile_ if function is None else compile_(function)


KERNELS: set = set()
"""The Python function of every kernel (what the generator, codegen/tracer.py, traces)."""


VECTOR, MATRIX, MATRICES = (types.Array(types.float64, ndim, "C") for ndim in (1, 2, 3))
INDICES, INDEX_TABLE = types.Array(types.int64, 1, "C"), types.Array(types.int64, 2, "C")
FLAGS = types.Array(types.boolean, 1, "C")
"""The field types of the compiled structures: C-contiguous float64 arrays of 1–3 axes, int64
index arrays of 1–2 axes, a boolean array."""


class Structure(structref.StructRefProxy):
    """Python's handle on a compiled structure (numba structref): a fixed set of named arrays
    (and structures: a workspace holds its model, ``data.model``) that a kernel takes as one
    argument and reads as ``model.parent``, ``data.X_up`` — the way Pinocchio's algorithms take
    a Model and a Data.  Build with :func:`structure`."""


def structure(struct_type, constructor, *values):
    """The ``struct_type`` (a registered StructRef type with fields in the order of
    ``values``) holding ``values``, made by its compiled ``constructor``.  With
    NUMBA_DISABLE_JIT the kernels run as Python, where a namespace of the same names does."""
    if config.DISABLE_JIT:
        return SimpleNamespace(**dict(zip(struct_type.field_dict, values)))
    return constructor(*values)


def announce_compilation(entry_point) -> None:
    """Say once per process, on the 'robot_linearization' logger, that the kernels are
    about to be compiled because the on-disk cache of ``entry_point`` has none yet —
    the silent 40 s otherwise look like a hang.  Quiet when the cache is there."""
    global _said
    if _said or entry_point in _checked:
        return
    _checked.add(entry_point)
    try:
        cached = os.path.exists(entry_point._cache._cache_file._index_path)
    except AttributeError:  # NUMBA_DISABLE_JIT, or numba's internals moved: nothing to say
        return
    if not cached:
        _said = True
        checkout = _checkout_of(os.path.dirname(os.path.abspath(__file__)))
        logging.getLogger("robot_linearization").warning(
            "compiling the numba kernels: this happens once per installation and takes about %d s before the "
            "first result (%d s with contacts); later processes load them from the cache in under a second%s",
            *FIRST_COMPILE_SECONDS,
            "" if checkout is None or os.environ.get("NUMBA_CACHE_DIR") else
            f". This process imported the package from the source checkout {checkout}, not from its installation "
            "(whose kernels are compiled when it is installed), so they compile into the checkout's sources: "
            "run from outside the checkout to use the installed package")


class TypedCall:
    """A kernel called again and again with arguments of the same types (a control cycle's
    workspace, output arrays and state arrays): numba's dispatcher types every argument of
    every call to pick the compiled version (about 1.5 µs for a structure and 1 µs for a tuple
    of arrays, from Python), so after the first call, through the dispatcher, this calls that
    compiled version's entry directly.  Its caller guarantees the types: the same structures
    and :func:`~robot_linearization.arguments.kernel_ready` arrays of the same shapes (numba
    unboxes an array by its pointer and shape, so anything else would be misread).  ``dispatcher``
    may be a functools.partial of one, whose bound leading arguments go first (a generated
    kernel's address: codegen/kernels.py)."""

    def __init__(self, dispatcher) -> None:
        self._bound: tuple = ()
        if isinstance(dispatcher, functools.partial):  # (a generated kernel's entry with its address bound)
            dispatcher, self._bound = dispatcher.func, dispatcher.args
        self.dispatcher = dispatcher
        self.call: Callable[..., Any] = self._first_call
        """The call itself: after the first, the compiled entry with the bound arguments (a
        functools.partial: no Python frame of this class in between, ≈ 0.1 µs a call)."""

    def __call__(self, *args):
        return self.call(*args)

    def _first_call(self, *args):
        args = self._bound + args
        result = self.dispatcher(*args)
        overloads = getattr(self.dispatcher, "overloads", None)  # (None: NUMBA_DISABLE_JIT, a plain function)
        if overloads is not None:
            entry = overloads[tuple(self.dispatcher.typeof_pyval(a) for a in args)].entry_point
            self.call = functools.partial(entry, *self._bound)
        return result


def _checkout_of(package_dir: str) -> str | None:
    """The source checkout the package was imported from (setup.py beside it), or None: an installation."""
    root = os.path.dirname(package_dir)
    return root if os.path.isfile(os.path.join(root, "setup.py")) else None


@kernel(inline=True)
def finite_sum(x):
    """Sum of a contiguous array in four independent partial sums (a single running
    sum waits on each add's latency); inf/NaN anywhere makes it non-finite."""
    flat = x.ravel()
    s0 = s1 = s2 = s3 = 0.0
    end = flat.shape[0] - flat.shape[0] % 4
    for j in range(0, end, 4):
        s0 += flat[j]
        s1 += flat[j + 1]
        s2 += flat[j + 2]
        s3 += flat[j + 3]
    for j in range(end, flat.shape[0]):
        s0 += flat[j]
    return (s0 + s1) + (s2 + s3)
