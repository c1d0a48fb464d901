"""Benchmark: our A, B, M⁻¹ against Pinocchio's pipeline and finite differences.

    .venv/bin/python bench/benchmark.py [--states 20] [--robots solo12 talos ...]

Needs the test extra (pin, example-robot-data).  For every robot, on the same
random states, prints the median time per linearization of: ours; Pinocchio's
computeABADerivatives (+ its M⁻¹ and numpy assembly of A, B); central geometric
finite differences over our own forward dynamics; the breakdown of ours; and
checks that the matrices agree, so speed is never bought with wrong numbers.
Then the same with rigid contacts (solo12 on 4 point feet, talos on 2 6d soles)
against Pinocchio's constraintDynamics + computeConstraintDynamicsDerivatives; the
discrete step Jacobians (dt=) against our continuous call and Crocoddyl's
IntegratedActionModelEuler calc + calcDiff, by rl.linearize and by an rl.Linearizer (its
arrays allocated once, as Crocoddyl's ActionData); the impact map of a touchdown (rl.impact)
against Pinocchio's impulseDynamics + computeImpulseDynamicsDerivatives; coupled mimic
joints against the same robot with them independent; the contact margins' cost against the
linearization; the MPC-horizon API, the first-call cost and
the memory per model.  ``--scaling``: how the cost grows — A, B, M⁻¹ of chains and
branched random trees of 25, 50, 100 and 200 revolute joints on a floating base, ours
and Pinocchio, same run, with the exponent of time ∝ nv^p fitted over them.
``--codegen-floor``: below the free rows against Pinocchio's bare call, the code-generation
floor of bench/casadi_floor.py (CasADi-generated C for ∂ν̇/∂z and M⁻¹, timed in C; needs casadi).

Every Pinocchio column is the test extra's Pinocchio (4.0.0, which Crocoddyl 3.2.1
needs) in this process; with ``--newest-pinocchio PYTHON`` (a Python that has the
newest pin, e.g. a venv with pin 4.1) every free, contact, impact and scaling row and
the horizon line also time that one, in a subprocess running bench/pinocchio_pipelines.py
(the same Pinocchio calls) on the same inputs, and say how far its first result is
from this process's Pinocchio.  Each column names its version.

Every timed path runs on one thread, so numpy's BLAS is held to one thread too:
its idle pool otherwise spins on the second core after each call (the finite
differences, scipy's expm) and slowed every timing taken after them, Pinocchio's
and Crocoddyl's alike, by up to 2× on 2 cores.
"""

from __future__ import annotations

import argparse
import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # before numpy is imported (module docstring)
import functools
import json
import subprocess
import sys
import tempfile
import time

import numpy as np

import robot_linearization as rl
from robot_linearization.algorithms.base_frame_derivatives import base_frame_derivatives_into
from robot_linearization.algorithms.constrained_dynamics import tree_multiply_add_into
from robot_linearization.algorithms.forward_dynamics import forward_dynamics_into
from robot_linearization.algorithms.inverse_mass_matrix import inverse_mass_matrix_into
from robot_linearization.algorithms.kinematics import base_frame_poses_into, body_transforms_into
from robot_linearization import kernel_choice
from robot_linearization.contacts import as_contacts as _as_contacts
from robot_linearization.codegen import GenerationError, generated_contact_kernel, generated_kernel
from robot_linearization.codegen.build import target_flags
from robot_linearization.spatial import pose_quaternion
from robot_linearization.contacts import as_contacts
from robot_linearization.free_linearization import _assemble_into
from robot_linearization.linearization import linearize_trajectory
from robot_linearization.workspace import Workspace
from robot_linearization.validation import compare, finite_difference_linearization, finite_difference_step

# (bench/, the script's directory, is first on sys.path)
from pinocchio_pipelines import interleaved_times, median_time
from benchmark_robots import ROBOTS, PinocchioPipeline, random_states

PIPELINES_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pinocchio_pipelines.py")

def newest_pinocchio(python, path, model, contacts, call, inputs, repeat):
    """(version, median seconds, the first input's arrays) of pinocchio_pipelines.Pipeline's
    ``call`` under another Python (the newest Pinocchio), on the same Pinocchio inputs."""
    job = {"urdf": path, "floating": model.floating_base, "call": call, "repeat": repeat,
           "contacts": [(c.frame, c.kind, c.reference) for c in contacts],
           "inputs": [[np.asarray(x).tolist() for x in entry] for entry in inputs]}
    environment = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    done = subprocess.run([python, PIPELINES_SCRIPT], input=json.dumps(job), capture_output=True, text=True,
                          env=environment, timeout=1800)
    if done.returncode:
        raise RuntimeError(f"{python}: {(done.stderr.strip().splitlines() or ['failed'])[-1]}")
    result = json.loads(done.stdout)
    return result["version"], result["median"], [np.array(x) for x in result["first"]]


class NewestColumn:
    """The newest Pinocchio's column of a table: '—' without --newest-pinocchio."""

    def __init__(self, python):
        self.python = python

    def header(self) -> str:
        return "newest pin" if self.python else "(--newest-pinocchio)"

    def cells(self, ours, path, model, contacts, call, inputs, repeat, reference):
        """(time text, ours/newest text, error of its first result against ``reference``, the
        in-process Pinocchio's arrays at the same input)."""
        if not self.python:
            return "—", "—", float("nan")
        version, median, first = newest_pinocchio(self.python, path, model, contacts, call, inputs, repeat)
        error = max(float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)) for a, b in zip(first, reference))
        return f"{median * 1e6:.0f} (pin {version})", f"{ours / median:.2f}", error


CONTACT_CASES = {  # robot -> contacts of the constrained rows (issue: solo12 4 point, talos 2 × 6d)
    "solo12": [rl.Contact(f) for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")],
    "talos": [rl.Contact(f, "6d") for f in ("left_sole_link", "right_sole_link")],
}


def contact_rows(details, rng, repeat, newest: NewestColumn):
    """Constrained rows: ours vs Pinocchio's constrained pipeline (both versions) vs finite differences."""
    us = 1e6
    print(f"\nwith rigid contacts: median time per A, B, λ, ∂λ/∂z, ∂λ/∂τ in µs; pin {ours_pin_version()} in this "
          "process")
    print(f"{'robot, contacts':<24}{'ours':>8}{'pin':>8}{newest.header():>22}{'FD (ours)':>11}{'ours/pin':>10}"
          f"{'ours/newest':>13}{'FD/ours':>9}{'err vs pin':>12}{'newest vs pin':>15}{'err vs FD':>11}")
    for name, contacts in CONTACT_CASES.items():
        if name not in details:
            continue
        model, path, *_ = details[name]
        pin = PinocchioPipeline(path, model, contacts)
        ours_t, pin_t, err_pin, inputs = [], [], 0.0, []
        P = np.concatenate([pin.perm, pin.perm + len(pin.perm)])
        for state in random_states(model, rng, 5):
            tau = rng.normal(size=model.n_joints)
            ours_t.append(median_time(lambda: rl.linearize(model, state, tau, contacts=contacts), repeat))
            q, v, tau_pin = pin.inputs(state, tau)
            inputs.append((q, v, tau_pin))
            pin_t.append(median_time(lambda: pin.pipeline.constrained(q, v, tau_pin), repeat))
            lin = rl.linearize(model, state, tau, contacts=contacts)
            A_p, B_p, forces, d_forces, d_forces_dtau = pin.pipeline.constrained(q, v, tau_pin)
            for ours, theirs in [(lin.A, A_p[np.ix_(P, P)]), (lin.B, B_p[P][:, pin._joint_order()]),
                                 (lin.contact_forces, forces), (lin.contact_forces_state_jacobian, d_forces[:, P]),
                                 (lin.contact_forces_input_jacobian, d_forces_dtau[:, pin._joint_order()])]:
                err_pin = max(err_pin, float(np.abs(ours - theirs).max() / np.abs(theirs).max()))
        fd_t = median_time(lambda: finite_difference_linearization(model, state, tau, contacts=contacts), 3)
        err_fd = rl.validate(model, state, lin, tau).max_rel
        ours, pin_med = float(np.median(ours_t)), float(np.median(pin_t))
        newest_text, ratio, newest_err = newest.cells(ours, path, model, contacts, "constrained", inputs, repeat,
                                                      pin.pipeline.constrained(*inputs[0]))
        label = f"{name} {len(contacts)}×{contacts[0].kind}"
        print(f"{label:<24}{ours * us:>8.0f}{pin_med * us:>8.0f}{newest_text:>22}{fd_t * us:>11.0f}"
              f"{ours / pin_med:>10.2f}{ratio:>13}{fd_t / ours:>9.1f}{err_pin:>12.1e}{newest_err:>15.1e}"
              f"{err_fd:>11.1e}")


SOLE_SIZE = (0.2, 0.1)  # m, length × width of talos's soles (the margins' CoP rows)


def coupled_rows(details, rng, repeat):
    """Mimic joints coupled (CoupledModel, the reduced map) against the same robot with them
    independent: the cost of the coupling (issue target: at most 1.2×)."""
    us = 1e6
    rows = [name for name in ("talos_full", "panda") if name in details]
    if rows:
        print("\nmimic joints coupled (the URDF's default) against independent: median µs per A, B, M^-1")
        print(f"{'robot':<13}{'coupled':>9}{'independent':>13}{'ratio':>8}")
    for name in rows:
        path, floating, _ = ROBOTS[name]
        times = []
        for options in ({}, {"mimic_joints": "independent"}):
            model = rl.load_urdf(path, floating_base=floating, **options)
            states = random_states(model, rng, 5)
            times.append(float(np.median([median_time(lambda: rl.linearize(model, state), repeat)
                                          for state in states])))
        print(f"{name:<13}{times[0] * us:>9.0f}{times[1] * us:>13.0f}{times[0] / times[1]:>8.2f}")


def impact_rows(details, rng, repeat, newest: NewestColumn):
    """The impact map (ours vs Pinocchio's impulse dynamics + derivatives, both versions) and the
    contact margins' cost."""
    us = 1e6
    print(f"\nimpact map of a touchdown (e = 0): median time per ν⁺, A_impact, Λ, ∂Λ/∂z in µs; "
          f"pin {ours_pin_version()} in this process")
    print(f"{'robot, contacts':<24}{'ours':>8}{'pin':>8}{newest.header():>22}{'ours/pin':>10}{'ours/newest':>13}"
          f"{'err vs pin':>12}{'newest vs pin':>15}")
    margin_lines = []
    for name, contacts in CONTACT_CASES.items():
        if name not in details:
            continue
        model, path, *_ = details[name]
        pin = PinocchioPipeline(path, model, contacts)
        P = np.concatenate([pin.perm, pin.perm + len(pin.perm)])
        ours_t, pin_t, err, inputs = [], [], 0.0, []
        for state in random_states(model, rng, 5):
            q, v, _ = pin.inputs(state, np.zeros(model.n_joints))
            inputs.append((q, v))
            ours_t.append(median_time(lambda: rl.impact(model, state, contacts), repeat))
            pin_t.append(median_time(lambda: pin.pipeline.impact(q, v), repeat))
            pin.pipeline.fresh_data()
            v_plus, A_p, d_impulses = pin.pipeline.impact(q, v)
            jump = rl.impact(model, state, contacts)
            for ours, theirs in [(jump.A, A_p[np.ix_(P, P)]), (jump.impulses_state_jacobian, d_impulses[:, P]),
                                 (jump.impulses, np.asarray(pin.pipeline.data.impulse_c))]:
                err = max(err, float(np.abs(ours - theirs).max() / np.abs(theirs).max()))
            lin = rl.linearize(model, state, contacts=contacts)
            margin_lines.append((name, median_time(lambda: rl.linearize(model, state, contacts=contacts), repeat),
                                 median_time(lambda: rl.contact_margins(model, lin, friction=0.7, facets=4,
                                                                        sole_size=SOLE_SIZE), repeat)))
        ours, pin_med = float(np.median(ours_t)), float(np.median(pin_t))
        pin.pipeline.fresh_data()
        newest_text, ratio, newest_err = newest.cells(ours, path, model, contacts, "impact", inputs, repeat,
                                                      pin.pipeline.impact(*inputs[0]))
        label = f"{name} {len(contacts)}×{contacts[0].kind}"
        print(f"{label:<24}{ours * us:>8.0f}{pin_med * us:>8.0f}{newest_text:>22}{ours / pin_med:>10.2f}"
              f"{ratio:>13}{err:>12.1e}{newest_err:>15.1e}")
    print("\ncontact margins (friction pyramid, 4 facets; unilateral; CoP for soles) with their Jacobians, "
          "median µs, against the constrained linearization they are taken from")
    for name in dict.fromkeys(line[0] for line in margin_lines):
        linearize_t = float(np.median([t for n, t, _ in margin_lines if n == name]))
        margins_t = float(np.median([m for n, _, m in margin_lines if n == name]))
        print(f"  {name:<10} linearize {linearize_t * us:>6.0f}   margins {margins_t * us:>5.0f}   "
              f"({margins_t / linearize_t:.2f} of it)")


class NewestServer:
    """Pinocchio's ``call`` under another Python (the newest Pinocchio), timed in its own process
    on request (bench/pinocchio_pipelines.py's "serve"): one of interleaved_times' functions,
    whose rounds then alternate with ours.  ``at(k)``: the same served at input k."""

    def __init__(self, python, path, model, contacts, call, inputs):
        job = {"urdf": path, "floating": model.floating_base, "call": call, "repeat": 0, "serve": True,
               "contacts": [(c.frame, c.kind, c.reference) for c in contacts],
               "inputs": [[np.asarray(x).tolist() for x in entry] for entry in inputs]}
        environment = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        self.process = subprocess.Popen([python, PIPELINES_SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, env=environment)
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"{python}: {(self.process.stderr.read().strip().splitlines() or ['failed'])[-1]}")
        answer = json.loads(line)
        self.version, self.first = answer["version"], [np.array(x) for x in answer["first"]]
        self.input = 0

    def at(self, k: int) -> "NewestServer":
        self.input = k
        return self

    def per_call(self, burst: int) -> float:
        self.process.stdin.write(f"{self.input} {burst}\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


def bare_call_rows(details, rng, repeat, newest: NewestColumn, floor: bool = False):
    """The control cycle against Pinocchio's own C++ calls (issue targets: every row ≤ the bare
    call): ours as rl.linearize, an rl.Linearizer given a State, and one given the robot's arrays
    (linearize_arrays), and that with the robot's generated kernel (kernel="generated"; "—" where it
    is not built: a robot too large for it to pay); the fastest of those two given the base pose as
    the 7 numbers [x, y, z, qx, qy, qz, qw] odometry gives instead of H, and how much longer that
    takes than the same call with H ("7 − H", µs); Pinocchio's tightest Python
    pipeline (arrays allocated once, filled in place; free rows) and its bare calls —
    computeABADerivatives; constraintDynamics + computeConstraintDynamicsDerivatives;
    impulseDynamics + computeImpulseDynamicsDerivatives — in this process and, with
    --newest-pinocchio, the newest one in a process of its own (NewestServer).  All of a row's
    columns are timed in the same interleaved rounds.  The impact rows' "Linearizer" and "arrays"
    are an rl.ImpactMap's impact and impact_arrays.  The ratios are of our fastest: the generated
    kernel where it is built, else the arrays' call.  This process and the newest
    Pinocchio's share one core for it (their rounds alternate), so neither has a core or caches
    the other lacks.  floor: below each free row, the code-generation floor (bench/casadi_floor.py)
    timed in rounds with our arrays' call and Pinocchio's bare call."""
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})  # (the newest Pinocchio's process inherits it)
    try:
        _bare_call_rows(details, rng, repeat, newest, floor)
    finally:
        os.sched_setaffinity(0, cores)


def _bare_call_rows(details, rng, repeat, newest: NewestColumn, floor: bool):
    us = 1e6
    print(f"\nthe control cycle against Pinocchio's bare C++ call: median µs over interleaved rounds; pin "
          f"{ours_pin_version()} in this process, the newest in its own; Linearizer: arrays allocated once; arrays: "
          "Linearizer.linearize_arrays (no State per call); generated: the same (ImpactMap.impact_arrays) with "
          f"kernel='generated' (compiled for {target_flags()[0]}); pose as 7: the faster of those two given the "
          "base pose as [x, y, z, qx, qy, qz, qw], and 7 − H: how much longer than with H")
    print(f"{'robot, row':<24}{'linearize':>10}{'Linearizer':>11}{'arrays':>8}{'generated':>10}{'pose as 7':>10}"
          f"{'7 − H':>7}{'pin in place':>13}"
          f"{'pin bare':>10}{'newest in place':>16}{'newest bare':>12}{'ours/bare':>10}{'ours/newest bare':>18}")
    for name in details:
        model, path, *_ = details[name]
        cases = [("free", None, "free_in_place", "free_bare")]
        if name in CONTACT_CASES:
            cases += [("contacts", CONTACT_CASES[name], None, "constrained_bare"),
                      ("impact", CONTACT_CASES[name], None, "impact_bare")]
        for row, contacts, in_place_call, bare_call in cases:
            pin = PinocchioPipeline(path, model, contacts or ())
            linearizer = rl.Linearizer(model, contacts=contacts) if row != "impact" else None
            held = rl.ImpactMap(model, contacts) if row == "impact" else None
            fast = rl.ImpactMap(model, contacts, kernel="generated") if row == "impact" else \
                rl.Linearizer(model, contacts=contacts, kernel="generated")
            fast = fast if fast.kernel == "generated" else None
            states = random_states(model, rng, 5)
            torques = [rng.normal(size=model.n_joints) for _ in states]
            inputs = [pin.inputs(state, tau) for state, tau in zip(states, torques)]
            servers = {f"newest {key}": NewestServer(newest.python, path, model, contacts or (), call, inputs)
                       for key, call in (("in place", in_place_call), ("bare", bare_call)) if call and newest.python}
            times = {}
            for k, (state, tau) in enumerate(zip(states, torques)):
                q, v, tau_pin = inputs[k]
                s, r = state.joint_positions.copy(), state.joint_velocities.copy()
                base = dict(base_pose=state.base_pose.copy(), base_twist=state.base_twist.copy()) \
                    if model.floating_base else {}
                if model.floating_base:  # the pose as odometry gives it: position, then quaternion (x, y, z, w)
                    w, x, y, z = pose_quaternion(state.base_pose)
                    seven = dict(base_pose=np.r_[state.base_pose[:3, 3], x, y, z, w], base_twist=base["base_twist"])
                # (every call bound by functools.partial, as Pinocchio's are: no Python frame of the benchmark's
                # own in what is timed)
                if row == "impact":
                    calls = {"linearize": functools.partial(rl.impact, model, state, contacts),
                             "Linearizer": functools.partial(held.impact, state),
                             "arrays": functools.partial(held.impact_arrays, s, r, **base)}
                    if fast is not None:
                        calls["generated"] = functools.partial(fast.impact_arrays, s, r, **base)
                    if model.floating_base:
                        calls["pose as 7"] = functools.partial((fast or held).impact_arrays, s, r, **seven)
                else:
                    calls = {"linearize": functools.partial(rl.linearize, model, state, tau, contacts=contacts),
                             "Linearizer": functools.partial(linearizer.linearize, state, tau),
                             "arrays": functools.partial(linearizer.linearize_arrays, s, r, tau, **base)}
                    if fast is not None:
                        calls["generated"] = functools.partial(fast.linearize_arrays, s, r, tau, **base)
                    if model.floating_base:
                        calls["pose as 7"] = functools.partial((fast or linearizer).linearize_arrays, s, r, tau,
                                                               **seven)
                if in_place_call:
                    calls["in place"] = functools.partial(getattr(pin.pipeline, in_place_call), q, v, tau_pin)
                calls["bare"] = functools.partial(getattr(pin.pipeline, bare_call), q, v, tau_pin)
                calls.update({key: server.at(k) for key, server in servers.items()})
                for key, seconds in interleaved_times(calls, repeat).items():
                    times.setdefault(key, []).append(seconds)
                if held is not None and not np.array_equal(held.impact_arrays(s, r, **base).A,
                                                           rl.impact(model, state, contacts).A):
                    raise AssertionError(f"{name} {row}: ImpactMap differs from rl.impact")
                if held is not None and fast is not None and not np.array_equal(fast.impact_arrays(s, r, **base).A,
                                                                                held.A):
                    raise AssertionError(f"{name} {row}: the generated impact map differs from the generic one")
                if linearizer is not None:
                    linearizer.linearize_arrays(s, r, tau, **base)
                    if not np.array_equal(linearizer.A, rl.linearize(model, state, tau, contacts=contacts).A):
                        raise AssertionError(f"{name} {row}: linearize_arrays differs from rl.linearize")
                    if fast is not None and not np.array_equal(fast.linearize_arrays(s, r, tau, **base).A,
                                                               linearizer.A):
                        raise AssertionError(f"{name} {row}: the generated kernel differs from the generic one")
                if model.floating_base:  # (H rebuilt from the quaternion: equal to rounding)
                    given = (lambda pose: held.impact_arrays(s, r, **pose).A.copy()) if held else \
                        (lambda pose: linearizer.linearize_arrays(s, r, tau, **pose).A.copy())
                    with_h, with_7 = given(base), given(seven)
                    if not np.allclose(with_7, with_h, rtol=0.0, atol=1e-12 * np.abs(with_h).max()):
                        raise AssertionError(f"{name} {row}: the pose as 7 numbers gives another A than as H")
            pin.pipeline.fresh_data()
            for key, server in servers.items():
                reference = getattr(pin.pipeline, in_place_call if key == "newest in place" else bare_call)(*inputs[0])
                server.close()
                if any(not np.allclose(a, b, rtol=1e-9, atol=1e-9) for a, b in zip(server.first, reference)):
                    raise AssertionError(f"{name} {row}: pin {server.version}'s {key} differs from pin "
                                         f"{ours_pin_version()}'s")
            median = {key: float(np.median(times[key])) if key in times else float("nan") for key in (
                "linearize", "Linearizer", "arrays", "generated", "pose as 7", "in place", "bare", "newest in place",
                "newest bare")}
            fastest = np.nanmin([median["arrays"], median["generated"]])
            label = f"{name}, {row}" + (f" {len(contacts)}×{contacts[0].kind}" if contacts else "")
            cell = lambda t: "—" if np.isnan(t) else f"{t * us:.1f}"  # noqa: E731
            version = f" (pin {servers['newest bare'].version})" if servers else ""
            over_h = median["pose as 7"] - (median["arrays"] if fast is None else median["generated"])
            print(f"{label:<24}{cell(median['linearize']):>10}{cell(median['Linearizer']):>11}"
                  f"{cell(median['arrays']):>8}{cell(median['generated']):>10}{cell(median['pose as 7']):>10}"
                  f"{'—' if np.isnan(over_h) else f'{over_h * us:.2f}':>7}{cell(median['in place']):>13}"
                  f"{cell(median['bare']):>10}{cell(median['newest in place']):>16}{cell(median['newest bare']):>12}"
                  f"{fastest / median['bare']:>10.2f}{fastest / median['newest bare']:>18.2f}{version}")
            if floor and row == "free":
                floor_row(model, states, torques, inputs, fast or linearizer, pin)


def floor_row(model, states, torques, inputs, linearizer, pin) -> None:
    """The code-generation floor of ``model``'s free row (bench/casadi_floor.py: its ∂ν̇/∂z and M⁻¹ as
    CasADi-generated C, gcc -O3, the compute alone), and in the same rounds our fastest call
    (``linearizer``'s linearize_arrays: the generated kernel where the robot has one) and
    Pinocchio's bare call; ours against it.  Raises when its results differ from ours by over 1e-9."""
    from casadi_floor import CFLAGS, codegen_floor

    arrays = [(state.joint_positions.copy(), state.joint_velocities.copy(), tau,
               dict(base_pose=state.base_pose.copy(), base_twist=state.base_twist.copy())
               if model.floating_base else {}) for state, tau in zip(states, torques)]
    beside = {"ours": lambda k: functools.partial(linearizer.linearize_arrays, *arrays[k][:3], **arrays[k][3]),
              "bare": lambda k: functools.partial(pin.pipeline.free_bare, *inputs[k])}
    result = codegen_floor(model, states, torques, beside=beside)
    if result.seconds is None:
        print(f"  codegen floor: none ({result.reason})")
        return
    if not result.max_error < 1e-9:
        raise AssertionError(f"{model.name}: the codegen floor differs from rl.linearize by {result.max_error:.1e}")
    us = 1e6
    print(f"  codegen floor (CasADi, gcc {' '.join(CFLAGS[:-2])}, the compute alone): {result.seconds * us:.1f} µs; in "
          f"the same rounds ours ({linearizer.kernel} arrays) {result.beside['ours'] * us:.1f}, pin bare "
          f"{result.beside['bare'] * us:.1f}: ours/floor {result.beside['ours'] / result.seconds:.2f}, pin bare/floor "
          f"{result.beside['bare'] / result.seconds:.2f} ({result.operations} operations, "
          f"{result.compile_seconds:.0f} s of gcc, {result.library_bytes / 1024:.0f} KiB)")


def ours_pin_version() -> str:
    import pinocchio

    return pinocchio.__version__


STEP_DT = 1e-3  # s


class CrocoddylStep:
    """IntegratedActionModelEuler(DifferentialActionModelFreeFwdDynamics), or with ``contacts``
    DifferentialActionModelContactFwdDynamics (ContactModel3D / 6D, zero Baumgarte gains, no
    damping): calc + calcDiff give x⁺ and F_x, F_u of the same semi-implicit Euler step (what a
    Crocoddyl user calls)."""

    def __init__(self, pinocchio: PinocchioPipeline, dt: float, contacts=()):
        import crocoddyl

        pin, pm = pinocchio.pin, pinocchio.pmodel
        multibody = crocoddyl.StateMultibody(pm)
        actuation = (crocoddyl.ActuationModelFloatingBase(multibody) if pinocchio.model.floating_base
                     else crocoddyl.ActuationModelFull(multibody))
        costs = crocoddyl.CostModelSum(multibody, actuation.nu)
        if contacts:
            rigid = crocoddyl.ContactModelMultiple(multibody, actuation.nu)
            for c in contacts:
                frame = pm.getFrameId(c.frame)
                axes = pin.LOCAL_WORLD_ALIGNED if c.reference == "world_aligned" else pin.LOCAL
                rigid.addContact(c.frame, crocoddyl.ContactModel3D(multibody, frame, np.zeros(3), axes, actuation.nu,
                                                                   np.zeros(2)) if c.kind == "point"
                                 else crocoddyl.ContactModel6D(multibody, frame, pin.SE3.Identity(), axes,
                                                               actuation.nu, np.zeros(2)))
            dynamics = crocoddyl.DifferentialActionModelContactFwdDynamics(multibody, actuation, rigid, costs, 0.0,
                                                                           True)
        else:
            dynamics = crocoddyl.DifferentialActionModelFreeFwdDynamics(multibody, actuation, costs)
        self.action = crocoddyl.IntegratedActionModelEuler(dynamics, dt)
        self.data = self.action.createData()
        self.pinocchio = pinocchio

    def inputs(self, state, torques):
        q, v, tau = self.pinocchio.inputs(state, torques)
        off = 6 if self.pinocchio.model.floating_base else 0
        return np.concatenate([q, v]), tau[off:].copy()

    def jacobians(self, x, u):
        self.action.calc(self.data, x, u)
        self.action.calcDiff(self.data, x, u)
        return self.data.Fx, self.data.Fu


def step_rows(details, rng, repeat):
    """The one-step Jacobians: ours (dt=) vs our continuous call vs Crocoddyl vs differences of
    rl.step, free and on the contact rows' contacts."""
    us = 1e6
    print(f"\ndiscrete step Jacobians A_d, B_d (semi-implicit Euler, dt = {STEP_DT * 1e3:g} ms): median µs; Crocoddyl "
          f"{crocoddyl_version()} with pin {ours_pin_version()}")
    print("(Linearizer: rl.Linearizer(model, contacts=, dt=).linearize(state, τ), its arrays allocated once and "
          "filled in place, as Crocoddyl's calc/calcDiff fill the ActionData that createData allocated once; "
          "generated: the same with kernel='generated', — where the robot is too large for it)")
    print(f"{'robot':<18}{'continuous':>11}{'dt=':>8}{'dt=/cont':>10}{'zoh':>8}{'crocoddyl':>11}{'dt=/croco':>11}"
          f"{'Linearizer':>12}{'/croco':>8}{'generated':>11}{'/croco':>8}{'err vs croco':>14}{'err vs FD':>11}")
    for name in ("solo12", "talos"):
        if name not in details:
            continue
        model, path, floating, options, states, torques, _ = details[name]
        for contacts in ((), CONTACT_CASES[name]):
            try:
                croco = CrocoddylStep(PinocchioPipeline(path, model), STEP_DT, contacts)
            except Exception as e:  # noqa: BLE001 - an oracle missing or incompatible: say so, go on
                print(f"{name:<18}crocoddyl unavailable ({e!r}); see setup.py's test extra")
                break
            P = np.concatenate([croco.pinocchio.perm, croco.pinocchio.perm + len(croco.pinocchio.perm)])
            joints = croco.pinocchio._joint_order()
            times = {"continuous": [], "dt": [], "zoh": [], "croco": [], "linearizer": [], "generated": []}
            linearizer = rl.Linearizer(model, contacts=contacts, dt=STEP_DT)
            generated = rl.Linearizer(model, contacts=contacts, dt=STEP_DT, kernel="generated")
            generated = generated if generated.kernel == "generated" else None
            err_croco = 0.0
            for state, tau in list(zip(states, torques))[:5]:
                times["continuous"].append(median_time(lambda: rl.linearize(model, state, tau, contacts=contacts),
                                                       repeat))
                times["dt"].append(median_time(lambda: rl.linearize(model, state, tau, contacts=contacts,
                                                                    dt=STEP_DT), repeat))
                times["linearizer"].append(median_time(lambda: linearizer.linearize(state, tau), repeat))
                if generated is not None:
                    times["generated"].append(median_time(lambda: generated.linearize(state, tau), repeat))
                x, u = croco.inputs(state, tau)
                times["croco"].append(median_time(lambda: croco.jacobians(x, u), repeat))
                lin = rl.linearize(model, state, tau, contacts=contacts, dt=STEP_DT)
                F_x, F_u = croco.jacobians(x, u)
                linearizer.linearize(state, tau)
                if not (np.array_equal(linearizer.A_d, lin.A_d) and np.array_equal(linearizer.B_d, lin.B_d)):
                    raise AssertionError(f"{name}: the Linearizer's A_d, B_d differ from rl.linearize's")
                if generated is not None and not (np.array_equal(generated.linearize(state, tau).A_d, lin.A_d)
                                                  and np.array_equal(generated.B_d, lin.B_d)):
                    raise AssertionError(f"{name}: the generated kernel's A_d, B_d differ from rl.linearize's")
                for ours, theirs in ((lin.A_d, F_x[np.ix_(P, P)]), (lin.B_d, F_u[P][:, joints])):
                    err_croco = max(err_croco, float(np.abs(ours - theirs).max() / np.abs(theirs).max()))
            # zoh last: scipy's expm runs threaded BLAS, whose threads spin on the other core for a while
            # after each call and would slow every timing beside them (2 cores)
            for state, tau in list(zip(states, torques))[:5]:
                times["zoh"].append(median_time(lambda: rl.linearize(model, state, tau, contacts=contacts,
                                                                     dt=STEP_DT, discretization="zoh"), repeat // 4))
            time.sleep(1.0)
            A_fd, B_fd = finite_difference_step(model, state, tau, STEP_DT, contacts=contacts)
            err_fd = max(float(np.abs(lin.A_d - A_fd).max() / np.abs(A_fd).max()),
                         float(np.abs(lin.B_d - B_fd).max() / np.abs(B_fd).max()))
            t = {k: float(np.median(v)) if v else float("nan") for k, v in times.items()}
            label = f"{name} {len(contacts)}×{contacts[0].kind}" if contacts else name
            fast = ("—", "—") if generated is None else (f"{t['generated'] * us:.0f}",
                                                          f"{t['generated'] / t['croco']:.2f}")
            print(f"{label:<18}{t['continuous'] * us:>11.0f}{t['dt'] * us:>8.0f}{t['dt'] / t['continuous']:>10.2f}"
                  f"{t['zoh'] * us:>8.0f}{t['croco'] * us:>11.0f}{t['dt'] / t['croco']:>11.2f}"
                  f"{t['linearizer'] * us:>12.0f}{t['linearizer'] / t['croco']:>8.2f}{fast[0]:>11}{fast[1]:>8}"
                  f"{err_croco:>14.1e}{err_fd:>11.1e}")


def crocoddyl_version() -> str:
    try:
        import crocoddyl
    except ImportError:
        return "(not installed)"
    return crocoddyl.__version__


def breakdown(model, state, torques, repeat):
    """Median times of the parts of one linearization (all kernels, one workspace)."""
    ws = Workspace(model)
    N, n = model.n_velocities, model.n_joints
    ws.g0[:] = 0.0
    ws.g0[:3] = (state.base_pose[:3, :3].T if model.floating_base else np.eye(3)) @ model.gravity
    twist = state.base_twist if model.floating_base else np.zeros(6)
    acc, M_inv = np.empty(N), np.empty((N, N))
    parts = {}
    parts["kinematics (jcalc)"] = median_time(
        lambda: body_transforms_into(model.motion_subspaces, model.tree_transforms, state.joint_positions, ws.X_up),
        repeat)
    parts["ABAmb (accelerations)"] = median_time(
        lambda: forward_dynamics_into(ws.model, ws.data, twist, state.joint_velocities, torques, acc), repeat)
    a0 = -ws.g0 + (acc[:6] if model.floating_base else 0.0)
    parts["poses and joint axes in the base frame"] = median_time(lambda: base_frame_poses_into(
        model.parent, model.motion_subspaces, ws.X_up, model.floating_base, ws.R, ws.t, ws.axes), repeat)
    parts["derivatives D2..D4, base-frame sweep (D1 closed form)"] = median_time(
        lambda: base_frame_derivatives_into(ws.model, ws.data, twist, a0, ws.g0, state.joint_velocities, acc[N - n:],
                                            False), repeat)
    parts["IMMAmb"] = median_time(lambda: inverse_mass_matrix_into(ws.model, ws.data, M_inv), repeat)
    A, B = np.empty((2 * N, 2 * N)), np.empty((2 * N, n))
    parts["assembly of A, B (-M^-1 D)"] = median_time(lambda: (
        _assemble_into(ws.model, M_inv, twist, ws.g0, A, B),
        tree_multiply_add_into(ws.model, ws.data, M_inv, ws.derivatives, -1.0, A[N:])), repeat)
    return parts


SCALING_JOINTS = (25, 50, 100, 200)


def synthetic_urdf(rng, n_joints: int, branched: bool) -> str:
    """A URDF of n revolute joints about random axes: a chain (each link on the previous) or a
    random tree (each link on a random earlier one), random physically valid inertias."""
    def inertial():
        mass = rng.uniform(0.5, 3.0)
        a, b = rng.uniform(0.02, 0.1, 2)
        principal = (a, b, rng.uniform(abs(a - b) + 1e-3, a + b - 1e-3))  # every triangle inequality holds
        com = rng.normal(scale=0.05, size=3)
        return (f'<inertial><origin xyz="{com[0]} {com[1]} {com[2]}"/><mass value="{mass}"/><inertia '
                f'ixx="{principal[0]}" iyy="{principal[1]}" izz="{principal[2]}" ixy="0" ixz="0" iyz="0"/></inertial>')
    links = [f'<link name="l0">{inertial()}</link>']
    joints = []
    for i in range(1, n_joints + 1):
        parent = int(rng.integers(0, i)) if branched else i - 1
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        xyz, rpy = rng.normal(scale=0.2, size=3), rng.uniform(-np.pi, np.pi, 3)
        links.append(f'<link name="l{i}">{inertial()}</link>')
        joints.append(f'<joint name="j{i}" type="revolute"><parent link="l{parent}"/><child link="l{i}"/>'
                      f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}" rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/>'
                      f'<axis xyz="{axis[0]} {axis[1]} {axis[2]}"/>'
                      f'<limit lower="-3" upper="3" effort="100" velocity="10"/></joint>')
    return f'<robot name="{"tree" if branched else "chain"}_{n_joints}">' + "".join(links + joints) + "</robot>"


def free_row(model, path, states, torques, repeat, newest: NewestColumn) -> dict:
    """A, B, M⁻¹ on the same states: our median, Pinocchio's (this process), the newest
    Pinocchio's cells, and the largest relative errors (ours vs Pinocchio, newest vs Pinocchio)."""
    pin = PinocchioPipeline(path, model)
    P = np.concatenate([pin.perm, pin.perm + len(pin.perm)])
    ours_t, pin_t, err, inputs = [], [], 0.0, []
    for state, tau in zip(states, torques):
        ours_t.append(median_time(lambda: rl.linearize(model, state, tau), repeat))
        q, v, tau_pin = pin.inputs(state, tau)
        inputs.append((q, v, tau_pin))
        pin_t.append(median_time(lambda: pin.pipeline.free(q, v, tau_pin), repeat))
        lin = rl.linearize(model, state, tau)
        A_p, B_p, M_p = pin.pipeline.free(q, v, tau_pin)
        err = max(err, compare(model, lin.A, lin.B, lin.M_inv, A_p[np.ix_(P, P)], B_p[P][:, pin._joint_order()],
                               M_p[np.ix_(pin.perm, pin.perm)]).max_rel)
    ours, pin_med = float(np.median(ours_t)), float(np.median(pin_t))
    newest_text, ratio, newest_err = newest.cells(ours, path, model, (), "free", inputs, repeat,
                                                  pin.pipeline.free(*inputs[0]))
    return {"ours": ours, "pin": pin_med, "newest": newest_text, "ratio": ratio, "err": err,
            "newest_err": newest_err}


def scaling_rows(rng, repeat: int, newest: NewestColumn) -> None:
    """Time of A, B, M⁻¹ against nv, ours and Pinocchio (both versions), and the fitted exponents
    (talos_full: the first table's row)."""
    us = 1e6
    print(f"\nhow the cost grows: A, B, M^-1 of synthetic floating-base robots (median µs over 5 states); pin "
          f"{ours_pin_version()} in this process")
    print(f"{'robot':<14}{'nv':>5}{'ours':>9}{'pin':>9}{newest.header():>22}{'ours/pin':>10}{'ours/newest':>13}"
          f"{'err vs pin':>12}")
    with tempfile.TemporaryDirectory() as directory:
        for branched in (False, True):
            nvs, times = [], {"ours": [], "pin": [], "newest": []}
            for n_joints in SCALING_JOINTS:
                path = os.path.join(directory, f"{'tree' if branched else 'chain'}_{n_joints}.urdf")
                with open(path, "w") as f:
                    f.write(synthetic_urdf(rng, n_joints, branched))
                model = rl.load_urdf(path)
                states = random_states(model, rng, 5)
                row = free_row(model, path, states, [rng.normal(size=model.n_joints) for _ in states], repeat, newest)
                nvs.append(model.n_velocities)
                times["ours"].append(row["ours"])
                times["pin"].append(row["pin"])
                if newest.python:
                    times["newest"].append(row["ours"] / float(row["ratio"]))
                print(f"{model.name:<14}{model.n_velocities:>5}{row['ours'] * us:>9.0f}{row['pin'] * us:>9.0f}"
                      f"{row['newest']:>22}{row['ours'] / row['pin']:>10.2f}{row['ratio']:>13}{row['err']:>12.1e}")
            exponents = {k: np.polyfit(np.log(nvs), np.log(t), 1)[0] for k, t in times.items() if t}
            print(f"  {'trees' if branched else 'chains'}: time ∝ nv^p, p = "
                  + ", ".join(f"{p:.2f} ({k})" for k, p in exponents.items()))


def first_call_cost(path, floating, options, cold: bool = False) -> float:
    """Seconds from a new interpreter to the first A; ``cold`` compiles every
    kernel from scratch (an empty numba cache), as on a fresh installation."""
    code = ("import time; t = time.perf_counter(); import numpy as np, robot_linearization as rl; "
            f"m = rl.load_urdf({path!r}, floating_base={floating}, **{options!r}); "
            "s = rl.State(base_pose=np.eye(4), joint_positions=np.zeros(m.n_joints), base_twist=np.zeros(6), "
            "joint_velocities=np.zeros(m.n_joints)) if m.floating_base else "
            "rl.State(joint_positions=np.zeros(m.n_joints), joint_velocities=np.zeros(m.n_joints)); "
            "rl.linearize(m, s); print(time.perf_counter() - t)")
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as cache:
        if cold:
            env["NUMBA_CACHE_DIR"] = cache
        # run from the empty directory: `-c` puts the working directory first on sys.path, and from a
        # checkout's root it would import (and compile into) its sources instead of the package measured here
        out = subprocess.run([sys.executable, "-c", code + "; print(rl.__path__[0])"], capture_output=True,
                             text=True, check=True, env=env, cwd=cache)
    seconds, package = out.stdout.strip().splitlines()[-2:]
    assert package == rl.__path__[0], f"the new process imported {package}, not {rl.__path__[0]}"
    return float(seconds)


def settle_default_kernels(model, contacts) -> str:
    """The default kernel="auto" as it runs once its background builds have taken over: start them (the
    free kernel, and on ``contacts`` the constrained one and the impact map) and wait; what happened."""
    kinds = [((), "linearize")] + ([(_as_contacts(contacts), "constrained"), (_as_contacts(contacts), "impact")]
                                   if contacts else [])
    start, said = time.perf_counter(), []
    for on, kind in kinds:
        takeover = kernel_choice.takeover(model, on, kind)
        takeover.wait()
        said.append(f"{kind}: {'generated' if takeover.kernel is not None else 'generic (' + takeover.problem + ')'}")
    return f"default kernels after {time.perf_counter() - start:.0f} s: " + "; ".join(said)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--states", type=int, default=20, help="random states per robot")
    parser.add_argument("--repeat", type=int, default=200, help="timing repetitions per state")
    parser.add_argument("--robots", nargs="*", default=list(ROBOTS), choices=list(ROBOTS),
                        help="the robots of the per-robot rows (none: only --scaling's rows)")
    parser.add_argument("--horizon", type=int, default=32)
    parser.add_argument("--scaling", action="store_true",
                        help="also the cost against nv: chains and random trees of 25-200 joints")
    parser.add_argument("--codegen-floor", action="store_true",
                        help="below the free rows against Pinocchio's bare call, the code-generation floor "
                             "(bench/casadi_floor.py; needs pip install casadi, and a minute of gcc per robot)")
    parser.add_argument("--newest-pinocchio", metavar="PYTHON", default=None,
                        help="a Python with the newest pin (e.g. a venv with pin 4.1): every Pinocchio row also times "
                             "that one, in a subprocess on the same inputs (bench/pinocchio_pipelines.py)")
    args = parser.parse_args()
    rng = np.random.default_rng(2019)
    us = 1e6
    print(f"machine: {os.cpu_count()} cores; numpy {np.__version__}; robot_linearization from {rl.__path__[0]}")
    newest = NewestColumn(args.newest_pinocchio)
    print(f"median time per linearization (A, B, M^-1) in µs; pin {ours_pin_version()} in this process")
    print(f"{'robot':<13}{'nv':>4}{'ours':>9}{'pin':>9}{newest.header():>22}{'FD (ours)':>11}{'ours/pin':>10}"
          f"{'ours/newest':>13}{'FD/ours':>9}{'err vs pin':>12}{'newest vs pin':>15}{'err vs FD':>11}")
    details = {}
    for name in args.robots:
        path, floating, options = ROBOTS[name]
        model = rl.load_urdf(path, floating_base=floating, **options)
        print(f"  ({name}: {settle_default_kernels(model, CONTACT_CASES.get(name))})")
        states = random_states(model, rng, args.states)
        torques = [rng.normal(size=model.n_joints) for _ in states]
        row = free_row(model, path, states, torques, args.repeat, newest)
        fd_t = median_time(lambda: finite_difference_linearization(model, states[0], torques[0]), 5)
        lin0 = rl.linearize(model, states[0], torques[0])
        A_fd, B_fd = finite_difference_linearization(model, states[0], torques[0])
        err_fd = compare(model, lin0.A, lin0.B, lin0.M_inv, A_fd, B_fd, lin0.M_inv).max_rel
        ours, pin_med = row["ours"], row["pin"]
        print(f"{name:<13}{model.n_velocities:>4}{ours * us:>9.0f}{pin_med * us:>9.0f}{row['newest']:>22}"
              f"{fd_t * us:>11.0f}{ours / pin_med:>10.2f}{row['ratio']:>13}{fd_t / ours:>9.1f}{row['err']:>12.1e}"
              f"{row['newest_err']:>15.1e}{err_fd:>11.1e}")
        details[name] = (model, path, floating, options, states, torques, row)

    contact_rows(details, rng, args.repeat, newest)
    coupled_rows(details, rng, args.repeat)
    step_rows(details, rng, args.repeat)
    impact_rows(details, rng, args.repeat, newest)
    bare_call_rows({name: details[name] for name in details if name in ("solo12", "talos")} if args.robots
                   else {}, rng, args.repeat, newest, args.codegen_floor)
    if args.scaling:
        scaling_rows(rng, max(args.repeat // 4, 10), newest)

    for name in [name for name in ("solo12", "talos") if name in details]:
        # (before the new-process timings: their compiles and cache writes linger)
        model, *_, row = details[name]
        states = random_states(model, rng, args.horizon)
        horizon = {(w, kernel): median_time(lambda: linearize_trajectory(model, states, workers=w, kernel=kernel), 50)
                   / len(states) for kernel in ("generic", "generated") for w in (1, os.cpu_count() or 1)}
        single = median_time(lambda: [rl.linearize(model, s) for s in states], 20) / len(states)
        print(f"\nhorizon of {len(states)} {name} states, time per state (µs): K single calls {single * us:.0f}, "
              + ", ".join(f"linearize_trajectory with {w} worker(s) {t * us:.0f}"
                          + (" (kernel='generated')" if kernel == "generated" else "")
                          for (w, kernel), t in horizon.items())
              + f"; Pinocchio single call {row['pin'] * us:.0f} (pin {ours_pin_version()})"
              + (f", {row['newest']}" if newest.python else ""))
        worst = max(np.abs(batch.A[k] - rl.linearize(model, s).A).max() / np.abs(batch.A[k]).max()
                    for batch in (linearize_trajectory(model, states), linearize_trajectory(model, states,
                                                                                             kernel="generated"))
                    for k, s in enumerate(states))
        print(f"  horizon results (both kernels) equal single calls to {worst:.1e} (relative)")

    for name, (model, path, floating, options, states, torques, _) in details.items():
        print(f"\nbreakdown of ours, {name} (µs):")
        for part, t in breakdown(model, states[0], torques[0], args.repeat).items():
            print(f"  {part:<54}{t * us:>8.1f}")
        ws_bytes = Workspace(model).nbytes
        model_bytes = sum(getattr(model, a).nbytes for a in
                          ("parent", "subtree_end", "ancestors", "depth", "motion_subspaces", "tree_transforms",
                           "inertias"))
        print(f"  memory: model arrays {model_bytes / 1024:.0f} KiB, workspace {ws_bytes / 1024:.0f} KiB per thread")
        kernels = {"generated kernel": lambda: generated_kernel(model)}
        if name in CONTACT_CASES:
            contacts = as_contacts(CONTACT_CASES[name])
            kernels.update({
                f"generated kernel on {len(contacts)} contacts": lambda: generated_contact_kernel(
                    model, contacts, "constrained"),
                f"generated impact map of {len(contacts)} contacts": lambda: generated_contact_kernel(
                    model, contacts, "impact")})
        for label, make in kernels.items():
            try:
                kernel = make()
                library = os.path.getsize(kernel.path) / 1024
                print(f"  {label}: {kernel.operations} operations, library {library:.0f} KiB once per machine, "
                      f"scratch {kernel.scratch_size * 8 / 1024:.0f} KiB per Linearizer or ImpactMap")
            except GenerationError as error:
                print(f"  {label}: none ({error})")
        print(f"  first call in a new process (import + load + linearize, compiled cache warm): "
              f"{first_call_cost(path, floating, options):.2f} s")

    if details:  # (none with an empty --robots: the scaling rows alone)
        name = next(iter(details))
        _, path, floating, options, *_ = details[name]
        print(f"\nfirst call with an empty compile cache (fresh install), {name}: "
              f"{first_call_cost(path, floating, options, cold=True):.1f} s")


if __name__ == "__main__":
    main()
