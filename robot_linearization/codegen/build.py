"""The build and the cache of the generated kernels: the C compiler, the shared libraries kept on
disk per robot, contact set, kind and machine, and what a process loads from them.

The cache is a directory (:func:`cache_directory`) of this package's own files, per kernel:
``<kind>-<robot>-<instructions>-<key>.so`` (the library), ``.json`` beside it (what it is: robot,
kind, operations, scratch size, its sha256 and size) and ``.lock``.  The key is a digest of what
the kernel is made from (:func:`request_key`): the model's arrays, the contact set, the kind, the
sources of the kernels and of the generator, the compiler and its flags.  So

- two processes that need the same kernel at once build it once: the second waits on the lock
  and loads what the first wrote;
- a library whose bytes are not the ones recorded (truncated, overwritten) is removed and built
  again, never loaded;
- a failed or interrupted compile leaves nothing (it writes under another name and renames);
- a kernel compiled anew (another version of the package) is kept beside the other versions of the
  same robot, contact set, kind and instruction set up to KEPT_VERSIONS of them, the ones built or
  loaded last: two installations of different versions on one machine (a checkout's venv and a ROS
  overlay) keep one each instead of removing each other's and compiling theirs again at every start.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import datetime
import fcntl
import functools
import hashlib
import json
import logging
import os
import platform
import re
import shutil
import signal
import subprocess
import time
import weakref
from dataclasses import dataclass

import numpy as np

from ..compiled import kernel_sources_stamp
from ..model import Model

COMPILE_FLAGS = ("-O2", "-fPIC", "-shared", "-ffp-contract=off")
"""No contraction of a multiply and an add into one FMA: it would round differently from the
generic kernel.  The instruction set comes from :func:`target_flags`."""

KEPT_VERSIONS = 3
"""The versions of one kernel (robot, contact set, kind, instruction set) the cache keeps: those built
or loaded last (the record's modification time, set at each load); an older one goes when another is
built."""

_log = logging.getLogger("robot_linearization")


class GenerationError(RuntimeError):
    """The generated kernel cannot be built here (no C compiler, a failed compile, a model too large)."""


def cache_directory() -> str:
    """Where generated libraries are kept: $ROBOT_LINEARIZATION_CACHE_DIR when set, else
    $NUMBA_CACHE_DIR/robot_linearization when numba's cache is redirected, else $XDG_CACHE_HOME
    (default ~/.cache)/robot_linearization.  (Read at every use: a background build's process,
    which inherits the environment, writes where its parent reads.)"""
    own = os.environ.get("ROBOT_LINEARIZATION_CACHE_DIR")
    if own:
        return own
    numba_cache = os.environ.get("NUMBA_CACHE_DIR")
    if numba_cache:
        return os.path.join(numba_cache, "robot_linearization")
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
                        "robot_linearization")


def c_compiler() -> str | None:
    """$CC, else cc or gcc on PATH, else None."""
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


def target_flags() -> tuple[str, tuple[str, ...]]:
    """("avx2", ("-mavx2",)) on an x86-64 CPU with AVX2, else ("baseline", ()): the instruction set
    the library is compiled for, that of the machine that loads it.  AVX2 vectorises the product
    −M⁻¹D and part of the straight-line code: solo12's kernel took 8.6–9.1 instead of 10.9–11.0 µs
    (2026-11-26), the same bits, since without contraction each lane does the same IEEE operations.
    The set is part of the library's name, so machines sharing a cache never load, or remove, each
    other's."""
    if platform.machine().lower() in ("x86_64", "amd64"):
        from llvmlite import binding  # (numba's, which reads the CPU's features)

        if binding.get_host_cpu_features().get("avx2"):
            return "avx2", ("-mavx2",)
    return "baseline", ()


@functools.lru_cache(maxsize=None)
def _generator_stamp() -> bytes:
    """sha256 of the generator's own files (this package's .py and .c) and of every kernel source."""
    directory = os.path.dirname(os.path.abspath(__file__))
    digest = hashlib.sha256(kernel_sources_stamp())
    for name in sorted(os.listdir(directory)):
        if name.endswith((".py", ".c")):
            with open(os.path.join(directory, name), "rb") as f:
                digest.update(name.encode() + b"\0" + f.read())
    return digest.digest()


_fingerprints: "weakref.WeakKeyDictionary[Model, bytes]" = weakref.WeakKeyDictionary()


def model_fingerprint(model: Model) -> bytes:
    """sha256 of what a kernel is made from in ``model``: its name, tree, joints, inertias, gravity and
    frames (not its per-thread workspaces)."""
    fingerprint = _fingerprints.get(model)
    if fingerprint is None:
        digest = hashlib.sha256()
        _digest(digest, (model.name, model.floating_base, model.joint_names, model.body_names, model.parent,
                         model.subtree_end, model.ancestors, model.depth, model.joints, model.motion_subspaces,
                         model.tree_transforms, model.inertias, model.gravity, sorted(model.frames.items())))
        fingerprint = _fingerprints[model] = digest.digest()
    return fingerprint


def _digest(digest, value) -> None:
    """Feed ``value`` (arrays, numbers, strings, containers, dataclasses of them) to ``digest`` by its
    contents, the same for a copy (as pickle's bytes are not: they record which objects are shared)."""
    if isinstance(value, np.ndarray):
        digest.update(f"array{value.dtype.str}{value.shape}".encode() + np.ascontiguousarray(value).tobytes())
    elif isinstance(value, (tuple, list)):
        digest.update(f"{type(value).__name__}{len(value)}".encode())
        for item in value:
            _digest(digest, item)
    elif dataclasses.is_dataclass(value):
        digest.update(type(value).__name__.encode())
        for f in dataclasses.fields(value):
            _digest(digest, getattr(value, f.name))
    else:
        digest.update(repr(value).encode() + b"\0")


def robot_name(model: Model) -> str:
    """The model's name as a file name's part (no '-', at most 40 characters)."""
    return re.sub(r"[^A-Za-z0-9_.]", "_", model.name)[:40]


def request_key(model: Model, contacts: tuple, kind: str) -> str:
    """The cache key of ``model``'s kernel of ``kind`` ("free", "impact", "constrained") on ``contacts``
    (a tuple of Contact) on this machine: a digest of everything it is made from."""
    compiler = c_compiler() or ""
    instructions, flags = target_flags()
    digest = hashlib.sha256(model_fingerprint(model) + _generator_stamp())
    digest.update("\0".join((repr(contacts), kind, compiler, *COMPILE_FLAGS, *flags, instructions)).encode())
    return digest.hexdigest()[:24]


def _prefix(model: Model, contacts: tuple, kind: str) -> str:
    """The file names' start shared by the versions of one kernel: kind, robot (its name and a digest of
    the model, so that two robots of one name, e.g. talos_reduced and talos_full, keep a kernel each; and
    the contact set), instruction set (no '-' within its parts: one prefix is no other's start)."""
    contact_set = f"_{hashlib.sha256(repr(contacts).encode()).hexdigest()[:8]}" if contacts else ""
    return f"{kind}-{robot_name(model)}_{model_fingerprint(model).hex()[:8]}{contact_set}-{target_flags()[0]}-"


@dataclass(frozen=True)
class Library:
    """A generated kernel's shared library in the cache, as its record (.json) describes it: ``path``,
    its C function ``symbol`` taking ``pointers`` pointers, the scratch doubles it needs
    (``scratch_size``), the trace's ``operations``; ``timing``: its call against the generic kernel's
    (timing.timings, {} where there was no verdict), None until measured."""

    path: str
    symbol: str
    pointers: int
    scratch_size: int
    operations: int
    timing: dict | None = None

    def function(self):
        """The ctypes function (int, of ``pointers`` pointers); GenerationError if it cannot be loaded."""
        try:
            function = getattr(ctypes.CDLL(self.path), self.symbol)
        except (OSError, AttributeError) as error:
            raise GenerationError(f"cannot load {self.path}: {error}") from None
        function.restype = ctypes.c_int
        function.argtypes = [ctypes.c_void_p] * self.pointers
        return function


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _remove(*paths: str) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def cached(model: Model, contacts: tuple, kind: str) -> Library | None:
    """The kernel's Library if the cache holds it intact, else None; a damaged one (its bytes not the
    recorded ones, a record that cannot be read) is removed."""
    base = os.path.join(cache_directory(), _prefix(model, contacts, kind) + request_key(model, contacts, kind))
    try:
        with open(base + ".json", encoding="utf-8") as f:
            record = json.load(f)
        path = base + ".so"
        if os.path.getsize(path) != record["size"] or _sha256(path) != record["sha256"]:
            raise ValueError("its bytes are not the recorded ones")
        with contextlib.suppress(OSError):  # (used now: kept before versions loaded longer ago; a read-only cache)
            os.utime(base + ".json")
        return Library(path, record["symbol"], record["pointers"], record["scratch_size"], record["operations"],
                       record.get("timing"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as error:
        _log.warning("the cached kernel %s is damaged (%s): building it again", base + ".so", error)
        _remove(base + ".so", base + ".json")
        return None


@contextlib.contextmanager
def file_lock(base: str):
    """An exclusive lock across processes: flock on ``base``.lock (one kernel's files)."""
    os.makedirs(os.path.dirname(base), exist_ok=True)
    with open(base + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextlib.contextmanager
def free_slot(base: str, slots: int, poll: float = 0.1):
    """One of ``slots`` exclusive locks across processes (flock on ``base``.lock, ``base``-1.lock, …): the
    first free one, else the first to come free (looked for every ``poll`` seconds)."""
    os.makedirs(os.path.dirname(base), exist_ok=True)
    paths = [base + ".lock"] + [f"{base}-{slot}.lock" for slot in range(1, slots)]
    while True:
        for path in paths:
            with open(path, "a") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                try:
                    yield
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)
                return
        time.sleep(poll)


def build(model: Model, contacts: tuple, kind: str, what: str, make_source) -> Library:
    """The kernel's Library, from the cache or compiled into it under the kernel's lock (a second process
    that needs it meanwhile waits, then loads it).  ``make_source()`` -> (C source, operations,
    scratch doubles, symbol, pointers) is called only to compile; ``what`` names the kernel in the one
    log line a compile says."""
    library = cached(model, contacts, kind)
    if library is not None:
        return library
    prefix = _prefix(model, contacts, kind)
    directory = cache_directory()
    base = os.path.join(directory, prefix + request_key(model, contacts, kind))
    if c_compiler() is None:
        raise GenerationError("no C compiler found (set CC, or install gcc)")
    with file_lock(base):
        library = cached(model, contacts, kind)  # (built by another process while this one waited)
        if library is not None:
            return library
        try:
            source, operations, scratch_size, symbol, pointers = make_source()
        except GenerationError:
            _remove(base + ".lock")  # (nothing of a kernel that cannot be made stays behind)
            raise
        _log.warning("compiling the generated kernel of %s (%d operations): about %d s, once per machine; "
                     "cached in %s", what, operations, 1 + operations // 1500, directory)
        try:
            _compile(source, base + ".so", target_flags()[1])
        except GenerationError:
            _remove(base + ".lock")
            raise
        _write_record(base, {"what": what, "robot": model.name, "kind": kind, "operations": operations,
                             "scratch_size": scratch_size, "symbol": symbol, "pointers": pointers,
                             "size": os.path.getsize(base + ".so"), "sha256": _sha256(base + ".so"),
                             "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")})
    _remove_unused_versions(directory, prefix)
    return Library(base + ".so", symbol, pointers, scratch_size, operations)


def _remove_unused_versions(directory: str, prefix: str) -> None:
    """Remove the versions of the kernel whose file names start with ``prefix`` beyond the KEPT_VERSIONS
    built or loaded last: by the latest modification time of their files (the record's, set at each
    load; a build under way has only its lock, as recent as the build)."""
    versions: dict = {}  # file name without its extension -> when it was last built or loaded
    for name in os.listdir(directory):
        stem, extension = os.path.splitext(name)
        if name.startswith(prefix) and extension in (".so", ".json", ".lock"):
            with contextlib.suppress(OSError):  # (removed meanwhile by another process)
                versions[stem] = max(versions.get(stem, float("-inf")), os.path.getmtime(os.path.join(directory, name)))
    for stem in sorted(versions, key=versions.__getitem__, reverse=True)[KEPT_VERSIONS:]:
        _remove(*(os.path.join(directory, stem + extension) for extension in (".so", ".json", ".lock")))


def _write_record(base: str, record: dict) -> None:
    """``record`` as the kernel's ``base``.json, written under another name and renamed into place."""
    partial = f"{base}.json.{os.getpid()}.partial"
    try:
        with open(partial, "w", encoding="utf-8") as f:
            json.dump(record, f)
        os.replace(partial, base + ".json")
    finally:
        _remove(partial)


def record_timing(model: Model, contacts: tuple, kind: str, timing: dict) -> None:
    """Keep ``timing`` (timing.timings') in the record of the cached kernel, under its lock (nothing
    where it is not in the cache)."""
    base = os.path.join(cache_directory(), _prefix(model, contacts, kind) + request_key(model, contacts, kind))
    with file_lock(base):
        try:
            with open(base + ".json", encoding="utf-8") as f:
                record = json.load(f)
        except (OSError, ValueError):
            return
        _write_record(base, {**record, "timing": timing})


def _compile(source: str, path: str, flags: tuple) -> None:
    """The shared library of ``source`` at ``path``, written under another name and renamed
    into place, so a failed or interrupted compile leaves nothing behind."""
    compiler = c_compiler()
    if compiler is None:
        raise GenerationError("no C compiler found (set CC, or install gcc)")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = f"{path}.{os.getpid()}.partial"
    try:
        # (a session of its own: stopped, the compiler goes with its cc1 and as, not only its driver)
        with subprocess.Popen([compiler, *COMPILE_FLAGS, *flags, "-x", "c", "-", "-o", partial, "-lm"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              start_new_session=True) as process:
            try:
                _, stderr = process.communicate(source.encode(), timeout=600)
            except BaseException:  # a timeout, Ctrl-C, a stop signal (background.py makes SIGTERM one)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                raise
        if process.returncode != 0:
            lines = stderr.decode(errors="replace").strip().splitlines()
            raise GenerationError(f"{compiler} failed: {lines[-1] if lines else f'exit status {process.returncode}'}")
        os.replace(partial, path)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise GenerationError(f"{compiler}: {error}") from None
    finally:
        _remove(partial)


@dataclass(frozen=True)
class CacheEntry:
    """One kernel in the cache, as ``robot-linearization cache list`` shows it."""

    name: str  # the library's file name
    robot: str
    what: str
    operations: int
    bytes: int  # of its files (library, record, lock)
    created: str
    timing: dict | None = None  # Library.timing's


_OURS = re.compile(r"^([a-z]+-[A-Za-z0-9_.]+-[a-z0-9]+-[0-9a-f]{24}\.(so|json|lock)|background(-[0-9]+)?\.lock)$")
"""The names of this package's files in the cache, the background builds' lock included (anything else
there is left alone)."""


def cache_entries(directory: str | None = None) -> list[CacheEntry]:
    """The kernels in the cache, by name; a library without a readable record shows as such."""
    directory = directory or cache_directory()
    if not os.path.isdir(directory):
        return []
    entries = []
    for name in sorted(os.listdir(directory)):
        if not (_OURS.match(name) and name.endswith(".so")):
            continue
        base = os.path.join(directory, name[:-3])
        size = sum(os.path.getsize(base + suffix) for suffix in (".so", ".json", ".lock")
                   if os.path.exists(base + suffix))
        try:
            with open(base + ".json", encoding="utf-8") as f:
                record = json.load(f)
            entries.append(CacheEntry(name, record["robot"], record["what"], record["operations"], size,
                                      record["created"], record.get("timing")))
        except (OSError, ValueError, KeyError):
            entries.append(CacheEntry(name, "?", "no readable record: rebuilt at its next use", 0, size, "?"))
    return entries


def clear_cache(directory: str | None = None) -> tuple[int, int]:
    """Remove this package's kernels from the cache (their libraries, records and locks; nothing else
    in it, and not a compile under way); (files removed, bytes)."""
    directory = directory or cache_directory()
    if not os.path.isdir(directory):
        return 0, 0
    count = size = 0
    for name in os.listdir(directory):
        if _OURS.match(name):
            path = os.path.join(directory, name)
            with contextlib.suppress(FileNotFoundError):
                size += os.path.getsize(path)
                os.remove(path)
                count += 1
    return count, size
