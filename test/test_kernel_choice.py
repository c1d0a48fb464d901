"""kernel="auto" (robot_linearization.kernel_choice): the generic kernel answers from the first call, the
generated one is built in another process and takes over with the same bits; and the cache that build
writes into (generated/build.py), shared by processes, checked before it is loaded."""

import json
import logging
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import robot_linearization as rl
from robot_linearization import codegen, kernel_choice
from robot_linearization.codegen.build import cached, record_timing
from robot_linearization.cli import main
from robot_linearization.contacts import as_contacts

from conftest import random_state, random_tree

needs_compiler = pytest.mark.skipif(codegen.c_compiler() is None,
                                    reason="no C compiler here (CC, cc, gcc): the generated kernel cannot be built")
FIELDS = ("A", "B", "M_inv", "base_acceleration", "joint_accelerations", "A_d", "B_d", "contact_forces",
          "contact_forces_state_jacobian", "contact_forces_input_jacobian")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache of this test's own (and of the processes it starts)."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("ROBOT_LINEARIZATION_CACHE_DIR", str(directory))
    return directory


def _equal(fast, generic):
    for name in FIELDS:
        a, b = getattr(fast, name), getattr(generic, name)
        assert (a is None) == (b is None), name
        if isinstance(a, tuple):  # (a horizon whose contact sets vary: one array per knot)
            assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b)), name
        else:
            assert a is None or np.array_equal(a, b), (name, np.abs(a - b).max())


def _libraries(directory):
    return sorted(name for name in os.listdir(directory) if name.endswith(".so"))


@needs_compiler
@pytest.mark.parametrize("contacts", [None, ["b2", "b4"]])
def test_the_generated_kernel_takes_over_a_linearizer_without_a_call_missed_or_a_bit_changed(
        contacts, rng, cache, caplog):
    """A Linearizer (kernel="auto", with the Euler step) called again and again while its kernel is built
    in the background: every call answers, each equal bit for bit to the generic kernel's, before the
    takeover and after it; the takeover is said once, in one INFO line."""
    model = random_tree(rng, 5)
    states = [random_state(model, rng) for _ in range(3)]
    generic = rl.Linearizer(model, contacts=contacts, dt=2e-3, kernel="generic")
    with caplog.at_level(logging.INFO, logger="robot_linearization"):
        auto = rl.Linearizer(model, contacts=contacts, dt=2e-3, kernel="auto")
        kinds, k = [], 0
        takeover = kernel_choice.takeover(model, as_contacts(contacts) if contacts else (),
                                          "constrained" if contacts else "linearize")
        deadline = time.monotonic() + 900  # (the build runs at the lowest priority: slow on a busy machine)
        while kinds.count("generated") < 5 and time.monotonic() < deadline:  # (until it has taken over, and on)
            state = states[k % 3]
            _equal(auto.linearize(state), generic.linearize(state))
            kinds.append(auto.kernel)
            k += 1
            if k % 100 == 0:
                takeover.wait(0.05)
    assert kinds[0] == "generic" and kinds[-1] == "generated", kinds[-3:]
    assert kinds == sorted(kinds, key=lambda kind: kind == "generated")  # generic, then generated: no way back
    said = [r for r in caplog.records if "takes over" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.INFO and "\n" not in said[0].getMessage()
    assert len(_libraries(cache)) == 1


@needs_compiler
def test_the_one_line_api_impacts_and_horizons_get_the_generated_kernel_too(rng, cache):
    """rl.linearize, rl.impact, rl.ImpactMap and rl.linearize_trajectory with kernel="auto": the same bits
    as the generic kernel before and after the kernels of the model (free, on the contact set, its
    impact map) have taken over; an impact map's kernel serves every restitution."""
    model = random_tree(rng, 4)
    feet = as_contacts(["b3"])
    state = random_state(model, rng)
    states = [random_state(model, rng) for _ in range(4)]

    def compare():
        _equal(rl.linearize(model, state, dt=1e-3, kernel="auto"), rl.linearize(model, state, dt=1e-3,
                                                                                 kernel="generic"))
        _equal(rl.linearize(model, state, contacts=feet, kernel="auto"),
               rl.linearize(model, state, contacts=feet, kernel="generic"))
        for e in (0.0, 0.7):
            fast, slow = rl.impact(model, state, feet, e, kernel="auto"), rl.impact(model, state, feet, e,
                                                                                     kernel="generic")
            assert np.array_equal(fast.A, slow.A) and np.array_equal(fast.impulses, slow.impulses)
            mapped = rl.ImpactMap(model, feet, e, kernel="auto").impact(state)
            assert np.array_equal(mapped.A, slow.A)
        _equal(rl.linearize_trajectory(model, states, dt=1e-3, kernel="auto"),
               rl.linearize_trajectory(model, states, dt=1e-3, kernel="generic"))
        _equal(rl.linearize_trajectory(model, states, contacts=[feet, (), feet, feet], dt=1e-3, kernel="auto"),
               rl.linearize_trajectory(model, states, contacts=[feet, (), feet, feet], dt=1e-3, kernel="generic"))

    compare()  # (the generic kernels, while the generated ones are built)
    for contacts, kind in (((), "linearize"), (feet, "constrained"), (feet, "impact")):
        takeover = kernel_choice.takeover(model, contacts, kind)
        assert takeover.wait(600) and takeover.kernel is not None, takeover.problem
    compare()
    assert rl.ImpactMap(model, feet, 0.3, kernel="auto").kernel == "generic"  # (until its first call)
    assert len(_libraries(cache)) == 3  # (one impact map for both restitutions)


def test_auto_without_a_c_compiler_stays_generic_and_says_why_in_one_line(rng, cache, monkeypatch, caplog,
                                                                          tmp_path):
    monkeypatch.setenv("CC", "")
    monkeypatch.setenv("PATH", str(tmp_path))  # (no cc, no gcc)
    assert codegen.c_compiler() is None
    model = random_tree(rng, 3)
    state = random_state(model, rng)
    with caplog.at_level(logging.INFO, logger="robot_linearization"):
        auto = rl.Linearizer(model, kernel="auto")
        assert kernel_choice.takeover(model, (), "linearize").wait(60)
        _equal(auto.linearize(state), rl.Linearizer(model, kernel="generic").linearize(state))
    assert auto.kernel == "generic"
    said = [r.getMessage() for r in caplog.records if "generic kernel stays" in r.getMessage()]
    assert said == ["the generic kernel stays for the linearization of model 'random_tree': no C compiler found "
                    "(set CC, or install gcc)"]
    assert not cache.exists() or os.listdir(cache) == []


def test_a_robot_the_generator_does_not_cover_stays_generic_and_says_why(rng, cache, monkeypatch, caplog):
    """Beyond the compiler's budget (the limit lowered here, as a product-free tree of 100 joints is over
    it): said once, in the build's own words, from the background process."""
    monkeypatch.setattr(codegen.kernels, "GENERATED_OPERATIONS", 100)
    model = random_tree(rng, 3)
    with caplog.at_level(logging.INFO, logger="robot_linearization"):
        rl.Linearizer(model, kernel="auto")
        takeover = kernel_choice.takeover(model, (), "linearize")
        assert takeover.wait(300) and takeover.kernel is None
    assert "above the 100 a generated kernel is compiled for" in takeover.problem
    said = [r.getMessage() for r in caplog.records if "generic kernel stays" in r.getMessage()]
    assert len(said) == 1 and "\n" not in said[0]


def test_a_kernel_is_timed_when_built_and_one_slower_than_the_generic_stays_out_in_one_line(rng, cache, caplog):
    """The background build times the kernel against the generic one and keeps the figures in its record;
    a kernel whose record says it is slower by more than kernel_choice.TIMING_SCATTER (written here: on a real
    robot, talos's constrained kernel measured so) is not taken over, and the line says why with the figures;
    one slower by at most that, within one timing's scatter, takes over."""
    model = random_tree(rng, 3)
    with caplog.at_level(logging.INFO, logger="robot_linearization"):
        rl.Linearizer(model, kernel="auto")
        assert kernel_choice.takeover(model, (), "linearize").wait(300)
    figures = cached(model, (), "linearize").timing
    assert set(figures) == {"generated_us", "generic_us"} and min(figures.values()) > 0
    slower = random_tree(rng, 4)
    codegen.kernels.library(slower, (), "linearize")  # (built here, untimed)
    record_timing(slower, (), "linearize", {"generated_us": 9.5, "generic_us": 7.0})
    with caplog.at_level(logging.INFO, logger="robot_linearization"):
        auto = rl.Linearizer(slower, kernel="auto")
        takeover = kernel_choice.takeover(slower, (), "linearize")
        assert takeover.wait(300) and takeover.kernel is None
        state = random_state(slower, rng)
        _equal(auto.linearize(state), rl.Linearizer(slower, kernel="generic").linearize(state))
    said = [r.getMessage() for r in caplog.records if "generic kernel stays" in r.getMessage()
            and "random_tree" in r.getMessage() and "slower here" in r.getMessage()]
    assert said == ["the generic kernel stays for the linearization of model 'random_tree': the generated kernel "
                    "runs slower here (9.5 against 7.0 µs per call, timed when it was built)"]
    assert auto.kernel == "generic"
    # timed slower by one timing's scatter exactly (kernel_choice.TIMING_SCATTER), no more: it takes over, the same
    # bits
    close = random_tree(rng, 4)
    codegen.kernels.library(close, (), "linearize")
    record_timing(close, (), "linearize", {"generated_us": (1.0 + kernel_choice.TIMING_SCATTER) * 7.0,
                                           "generic_us": 7.0})
    auto = rl.Linearizer(close, kernel="auto")
    takeover = kernel_choice.takeover(close, (), "linearize")
    assert takeover.wait(300) and takeover.kernel is not None, takeover.problem
    state = random_state(close, rng)
    _equal(auto.linearize(state), rl.Linearizer(close, kernel="generic").linearize(state))
    assert auto.kernel == "generated"


def test_a_kernel_built_untimed_is_timed_at_its_first_auto_use(rng, cache):
    """kernel="generated" builds in the caller's process without timing; "auto" then has it timed in the
    background before it takes over."""
    model = random_tree(rng, 3)
    codegen.kernels.library(model, (), "linearize")
    assert cached(model, (), "linearize").timing is None
    rl.Linearizer(model, kernel="auto")
    takeover = kernel_choice.takeover(model, (), "linearize")
    assert takeover.wait(300) and takeover.kernel is not None, takeover.problem
    assert set(cached(model, (), "linearize").timing) == {"generated_us", "generic_us"}


@pytest.mark.parametrize("figures", [{"generated_us": 3.0}, {"generic_us": 3.0, "generated": 2.0},
                                     {"generated_us": None, "generic_us": 2.0},
                                     {"generated_us": "2", "generic_us": 2.0},
                                     {"generated_us": float("nan"), "generic_us": 2.0}, []],
                         ids=["one figure", "another key", "None", "a string", "NaN", "a list"])
def test_a_record_whose_timing_is_no_verdict_is_timed_again_and_takes_over(figures, rng, cache, caplog, capsys):
    """A record without both figures (cut short, or written by another version) is neither a reason to raise
    in the background nor a verdict: "auto" has the kernel timed again, then it takes over; `cache list`
    reads the record too."""
    model = random_tree(rng, 3)
    codegen.kernels.library(model, (), "linearize")
    record_timing(model, (), "linearize", figures)
    assert repr(cached(model, (), "linearize").timing) == repr(figures)  # (NaN included)
    assert main(["cache", "list"]) == 0 and "µs a call" not in capsys.readouterr().out
    with caplog.at_level(logging.INFO, logger="robot_linearization"):
        rl.Linearizer(model, kernel="auto")
        takeover = kernel_choice.takeover(model, (), "linearize")
        assert takeover.wait(300) and takeover.kernel is not None, takeover.problem
    timed = cached(model, (), "linearize").timing
    assert set(timed) == {"generated_us", "generic_us"} and min(timed.values()) > 0
    assert [r.getMessage() for r in caplog.records if "random_tree" in r.getMessage()][-1].startswith(
        "the generated kernel takes over the linearization of model 'random_tree'")


_DEFAULT = """
import numpy as np, robot_linearization as rl
model = rl.load_urdf(rl.robots.bundled_urdf_path())
state = rl.State(base_pose=np.eye(4), joint_positions=np.zeros(12), base_twist=np.zeros(6),
                 joint_velocities=np.zeros(12))
try:
    default = rl.kernel_choice.kernel_argument(None)
    print(default, rl.linearize(model, state) and rl.Linearizer(model).kernel if default == "generic" else "")
except ValueError as error:  # (auto: nothing run, so that no build outlives this process)
    print(error)
"""


@pytest.mark.parametrize("value, said", [
    ("generic", "generic generic"), ("", "auto"),
    ("fastest", "$ROBOT_LINEARIZATION_KERNEL: expected one of 'auto', 'generic', 'generated', got 'fastest'")])
def test_the_default_kernel_comes_from_the_environment_and_a_wrong_one_is_named(value, said, tmp_path):
    """$ROBOT_LINEARIZATION_KERNEL, read when the package is imported, is what kernel=None means."""
    done = subprocess.run([sys.executable, "-c", _DEFAULT], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env=dict(os.environ, ROBOT_LINEARIZATION_KERNEL=value))
    assert done.stdout.strip() == said, done.stderr[-2000:]


_BUILD = """
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
from conftest import random_tree
from robot_linearization.codegen.kernels import library
library(random_tree(np.random.default_rng(int(sys.argv[2])), 5), (), "linearize")
"""


@needs_compiler
def test_two_processes_that_need_one_kernel_at_once_build_it_once(cache):
    """Two processes start the same robot's build at the same moment: one compiles, the other waits on
    the kernel's lock and loads that library; both end with it, and one library is in the cache."""
    command = [sys.executable, "-c", _BUILD, os.path.dirname(__file__), "11"]
    runs = [subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=cache.parent) for _ in range(2)]
    outputs = [run.communicate(timeout=600)[1] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    assert sum(output.count("compiling the generated kernel") for output in outputs) == 1, outputs
    assert len(_libraries(cache)) == 1


@needs_compiler
@pytest.mark.parametrize("damage", ["truncated", "other bytes", "record unreadable"])
def test_a_damaged_library_is_never_loaded_and_is_built_again(damage, rng, cache, caplog):
    """A library cut short, overwritten in place (same size), or whose record cannot be read: found out
    before it is loaded (its size and sha256 against its record), removed, built again, and the
    results are the generic kernel's bits."""
    seed = int(rng.integers(1 << 30))
    # built by another process: a library this one has loaded must not be written over (its pages are mapped)
    subprocess.run([sys.executable, "-c", _BUILD, os.path.dirname(__file__), str(seed)], check=True, timeout=600,
                   cwd=cache.parent)
    (library,) = _libraries(cache)
    path = cache / library
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[:len(data) // 2])
    elif damage == "other bytes":
        path.write_bytes(data[:-64] + bytes(64))
    else:
        path.with_suffix(".json").write_text("{")
    model = random_tree(np.random.default_rng(seed), 5)
    with caplog.at_level(logging.WARNING, logger="robot_linearization"):
        fast = rl.Linearizer(model, kernel="generated")
    assert fast.kernel == "generated"
    assert any("is damaged" in r.getMessage() and "building it again" in r.getMessage() for r in caplog.records)
    assert path.read_bytes() == data  # (the same compiler and source: the same library again)
    assert json.loads(path.with_suffix(".json").read_text())["size"] == len(data)
    state = random_state(model, rng)
    _equal(fast.linearize(state), rl.Linearizer(model, kernel="generic").linearize(state))


@pytest.mark.parametrize("jobs", [1, 2])
def test_background_builds_run_as_many_at_once_from_a_process_as_build_jobs_says(rng, jobs, monkeypatch):
    """kernel="auto" on three contact sets (an MPC's) starts build_jobs() build processes at a time, not one
    per set."""
    running, most = [0], [0]

    def counting_build(model, contacts, kind):
        running[0] += 1
        most[0] = max(most[0], running[0])
        time.sleep(0.3)
        running[0] -= 1
        return "not built here (the test's stand-in)"

    model = random_tree(rng, 5)
    monkeypatch.setattr(kernel_choice, "build_elsewhere", counting_build)
    monkeypatch.setattr(kernel_choice, "_BUILDING", threading.BoundedSemaphore(jobs))
    takeovers = [kernel_choice.Takeover(model, contacts, "constrained")
                 for contacts in (as_contacts(["b2"]), as_contacts(["b3"]), as_contacts(["b2", "b4"]))]
    assert all(t.wait(30) for t in takeovers)
    assert most[0] == jobs and all(t.kernel is None and "stand-in" in t.problem for t in takeovers)


@pytest.mark.parametrize("given, expected", [(None, "cores"), ("3", 3), ("1", 1), ("0", "cores"), ("two", "cores"),
                                             ("", "cores")])
def test_build_jobs_are_the_cores_but_one_unless_the_variable_says(given, expected, monkeypatch, capsys):
    """build_jobs(): one per core this process may run on but one (at least one), or
    $ROBOT_LINEARIZATION_BUILD_JOBS; a value that is no whole number ≥ 1 is said in one line, the default taken."""
    from robot_linearization.codegen.background import JOBS_VARIABLE, build_jobs

    cores = max(len(os.sched_getaffinity(0)) - 1, 1)
    if given is None:
        monkeypatch.delenv(JOBS_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(JOBS_VARIABLE, given)
    assert build_jobs() == (cores if expected == "cores" else expected)
    said = capsys.readouterr().err
    if expected == "cores" and given is not None:
        assert said == f"robot_linearization: ${JOBS_VARIABLE}={given!r} is no whole number ≥ 1: {cores} build(s) " \
                       "at once\n"
    else:
        assert said == ""


@needs_compiler
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_build_process_waits_for_a_free_slot_of_the_machines(cache, jobs, monkeypatch):
    """A build process takes one of the machine's build_jobs() slots (background.lock, background-1.lock … in
    the cache): while another process holds the first, a build with one slot waits for it, a build with two
    takes the second at once; so that several robots' builds do not take every core at once."""
    from robot_linearization.codegen.build import file_lock

    monkeypatch.setenv("ROBOT_LINEARIZATION_BUILD_JOBS", str(jobs))
    cache.mkdir()
    with file_lock(str(cache / "background")):  # another process's build holds the machine's first slot
        started = time.monotonic()
        build = subprocess.Popen([sys.executable, "-c", "import sys; from robot_linearization.codegen.background "
                                  "import build_elsewhere; sys.path.insert(0, sys.argv[1]); from conftest import "
                                  "random_tree; import numpy as np; "
                                  "print(build_elsewhere(random_tree(np.random.default_rng(5), 4), (), 'linearize'))",
                                  os.path.dirname(__file__)], stdout=subprocess.PIPE, text=True, cwd=cache.parent)
        if jobs == 1:
            time.sleep(5)
            assert build.poll() is None and _libraries(cache) == []  # (it waits for the slot)
        else:
            assert build.communicate(timeout=600)[0] == "None\n" and len(_libraries(cache)) == 1
    if jobs == 1:
        assert build.communicate(timeout=600)[0] == "None\n" and len(_libraries(cache)) == 1
        assert time.monotonic() - started >= 5
    assert {p.name for p in cache.iterdir() if p.name.startswith("background")} == \
        {"background.lock"} | ({"background-1.lock"} if jobs == 2 else set())


@needs_compiler
def test_a_background_build_stopped_by_sigterm_leaves_no_compiler_and_no_partial_library(cache):
    """SIGTERM to a background build process (a user's pkill, a shutdown) while its compiler runs: the
    process ends, its compiler (driver, cc1, as) with it, and no library, whole or partial, is left."""
    import pickle
    import signal

    model = random_tree(np.random.default_rng(3), 14)  # (a few seconds of gcc)
    build = subprocess.Popen([sys.executable, "-m", "robot_linearization.codegen.background"], stdin=subprocess.PIPE,
                             stderr=subprocess.PIPE, cwd=cache.parent)
    build.stdin.write(pickle.dumps((model, (), "linearize", 10 ** 9), protocol=4))
    build.stdin.close()
    def compilers():  # (the compiler's processes name the library they write: X.so.<pid>.partial)
        return subprocess.run(["pgrep", "-f", str(cache)], capture_output=True, text=True).stdout.split()

    deadline = time.monotonic() + 300
    while not compilers():
        assert build.poll() is None and time.monotonic() < deadline, build.stderr.read()
        time.sleep(0.05)
    time.sleep(0.5)  # (cc1 under way)
    build.send_signal(signal.SIGTERM)
    assert build.wait(timeout=60) != 0
    time.sleep(0.5)
    left = [p.name for p in cache.iterdir() if p.name.endswith((".so", ".partial"))]
    assert left == [] and compilers() == [], (left, compilers())


def test_cache_build_makes_every_kernel_a_walkers_mpc_runs_and_the_mpc_takes_them_before_its_first_cycle(
        cache, capsys, monkeypatch):
    """`robot-linearization cache build --robot bundled --gait stand`: the MPC of the stand runs the
    constrained linearization and the impact map on the four feet; both are built and timed, a second run
    finds them; an MPC made then with kernel="auto" has both taken over before it plans anything."""
    from robot_linearization.gait import Gait
    from robot_linearization.robots import BUNDLED_FEET, bundled_urdf_path
    from robot_linearization.urdf import effort_limits
    from robot_linearization.walking.mpc import WholeBodyMPC, mpc_kernels

    model = rl.load_urdf(bundled_urdf_path())
    stand = Gait.stand(BUNDLED_FEET)
    assert [(len(contacts), kind) for contacts, kind in mpc_kernels(stand, BUNDLED_FEET)] == [
        (4, "constrained"), (4, "impact")]
    assert main(["cache", "build", "--robot", "bundled", "--gait", "stand"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in out[:2]] == [
        "constrained linearization of model 'rl_quadruped' on 4 contacts: in the cache",
        "impact map of model 'rl_quadruped' on 4 contacts: in the cache"]
    assert out[2].startswith("bundled's stand: 2 kernels in ")
    for contacts, kind in mpc_kernels(stand, BUNDLED_FEET):
        assert set(cached(model, contacts, kind).timing) == {"generated_us", "generic_us"}
    monkeypatch.setattr(kernel_choice, "_DEFAULT", "auto")
    mpc = WholeBodyMPC(model, stand, BUNDLED_FEET, effort_limits(bundled_urdf_path(), model.joint_names))
    held = mpc._contact_sets[tuple(BUNDLED_FEET)]
    for contacts, kind in mpc_kernels(stand, BUNDLED_FEET):
        assert kernel_choice.takeover(model, contacts, kind).wait(120)
    state = rl.State(base_pose=np.eye(4), joint_positions=mpc.posture, base_twist=np.zeros(6),
                     joint_velocities=np.zeros(model.n_joints))
    held.linearizer.linearize(state, np.zeros(model.n_joints))
    held.impacts.impact(state)
    assert held.linearizer.kernel == "generated" and held.impacts.kernel == "generated"


def test_cache_build_names_a_robot_it_does_not_know_in_one_line(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["cache", "build", "--robot", "atlas"])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("robot-linearization cache: error: argument --robot: invalid "
                                                   "choice: 'atlas'")
