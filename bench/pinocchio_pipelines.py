"""Pinocchio's pipelines that bench/benchmark.py times against ours, with nothing but
pinocchio and numpy: imported by the benchmark (the test extra's Pinocchio, in its
process) and run as a script under another Python (``--newest-pinocchio PYTHON``: the
newest Pinocchio, in an environment of its own), on the same inputs:

    PYTHON bench/pinocchio_pipelines.py < job.json

job: {"urdf", "floating", "contacts": [[frame, kind, reference]], "call": "free" |
"free_in_place" | "free_bare" | "constrained" | "constrained_bare" | "impact" | "impact_bare",
"inputs": [[q, v, tau]] in Pinocchio's coordinates, "repeat"};
prints {"version", "median" (seconds, the median over the inputs of each one's median),
"first" (the call's arrays at the first input, to check that they agree)}.

With ``"serve": true`` in the job (one line of JSON) it times on request instead, so that
its rounds interleave with the benchmark's own (:func:`interleaved_times`): it prints
{"version", "first"}, then answers each line ``k burst`` with the seconds per call of
``burst`` calls at input k, until its input ends.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from types import SimpleNamespace

import numpy as np


def median_time(function, repeat: int) -> float:
    """Median seconds of ``repeat`` calls, after one untimed call."""
    function()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def interleaved_times(functions: dict, repeat: int, rounds: int = 10) -> dict:
    """{name: median seconds per call} of ``functions`` (name: callable), timed in ``rounds``
    rounds of ``repeat // rounds`` calls each, every function once per round: the machine's
    speed, which drifts by tens of percent within seconds on a shared machine, is then the same
    for all of them, and their ratios hold where sequential timings do not.  A function with a
    ``per_call(burst)`` method (another process's call) times itself."""
    for function in functions.values():
        function.per_call(1) if hasattr(function, "per_call") else function()
    burst = max(1, repeat // rounds)
    times = {name: [] for name in functions}
    for _ in range(rounds):
        for name, function in functions.items():
            if hasattr(function, "per_call"):
                times[name].append(function.per_call(burst))
                continue
            start = time.perf_counter()
            for _ in range(burst):
                function()
            times[name].append((time.perf_counter() - start) / burst)
    return {name: float(np.median(t)) for name, t in times.items()}


def _rigid_constraint_models():
    """robot_linearization.pinocchio_reference.rigid_constraint_models, read from the checkout
    beside this file without importing the package (another Python may not have its
    dependencies)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "robot_linearization",
                        "pinocchio_reference.py")
    spec = importlib.util.spec_from_file_location("pinocchio_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.rigid_constraint_models


class Pipeline:
    """One robot in Pinocchio: ``free`` (computeABADerivatives, its M⁻¹ and A, B assembled
    with numpy), ``constrained`` (constraintDynamics + computeConstraintDynamicsDerivatives,
    zero Baumgarte gains, proximal μ = 1e-12, one iteration, then A, B, λ, ∂λ/∂z, ∂λ/∂τ) and
    ``impact`` (impulseDynamics + computeImpulseDynamicsDerivatives, e = 0, then ν⁺, A_impact,
    ∂Λ/∂z): what a Pinocchio user calls instead of ours.  ``free_in_place``: the tightest
    pipeline a careful user writes, A, B, M⁻¹ allocated once and filled in place.  ``*_bare``:
    Pinocchio's C++ calls alone, nothing read or assembled (they return its Data's arrays).
    contacts: objects with frame, kind ("point" or "6d") and reference ("world_aligned" or "local")."""

    def __init__(self, pin, urdf: str, floating: bool, contacts=()):
        self.pin = pin
        self.model = (pin.buildModelFromUrdf(urdf, pin.JointModelFreeFlyer()) if floating
                      else pin.buildModelFromUrdf(urdf))
        self.off = 6 if floating else 0
        self.contacts = tuple(contacts)
        self.settings = pin.ProximalSettings(1e-14, 1e-12, 1)
        N = self.model.nv
        self.in_place = (self._kinematic_rows(np.zeros(N)), np.zeros((2 * N, N - self.off)),
                         np.zeros((N, N)))
        self.lower = np.tril_indices(N, -1)
        self.fresh_data()

    def fresh_data(self) -> None:
        """A new Data: Pinocchio 4.0.0's impulse derivatives with respect to the configuration
        are wrong on a second call on the same Data (docs/impacts.md), so a comparison uses a
        fresh one; timings reuse it."""
        self.data = self.model.createData()
        if self.contacts:
            self.constraint_models, self.constraint_datas = _rigid_constraint_models()(self.pin, self.model,
                                                                                       self.contacts)
            self.pin.initConstraintDynamics(self.model, self.data, self.constraint_models, self.constraint_datas)

    def _kinematic_rows(self, v):
        """A (2N, 2N) with its kinematic rows [[−v×, 0, I, 0], [0, 0, 0, I]] filled."""
        N = self.model.nv
        A = np.zeros((2 * N, 2 * N))
        A[:N, N:] = np.eye(N)
        if self.off:
            A[:6, :6] = -self.pin.Motion(v[:6]).action
        return A

    def free(self, q, v, tau):
        pin, N = self.pin, self.model.nv
        pin.computeABADerivatives(self.model, self.data, q, v, tau)
        M_inv = self.data.Minv
        M_inv = np.triu(M_inv) + np.triu(M_inv, 1).T
        A = self._kinematic_rows(v)
        A[N:, :N] = self.data.ddq_dq
        A[N:, N:] = self.data.ddq_dv
        B = np.zeros((2 * N, N - self.off))
        B[N:] = M_inv[:, self.off:]
        return A, B, M_inv

    def free_in_place(self, q, v, tau):
        pin, N, off = self.pin, self.model.nv, self.off
        pin.computeABADerivatives(self.model, self.data, q, v, tau)
        A, B, M_inv = self.in_place
        M_inv[...] = self.data.Minv
        M_inv[self.lower] = M_inv.T[self.lower]
        A[N:, :N] = self.data.ddq_dq
        A[N:, N:] = self.data.ddq_dv
        if off:
            A[:6, :6] = -pin.Motion(v[:6]).action
        B[N:] = M_inv[:, off:]
        return A, B, M_inv

    def free_bare(self, q, v, tau):
        self.pin.computeABADerivatives(self.model, self.data, q, v, tau)
        return self.data.ddq_dq, self.data.ddq_dv

    def constrained_bare(self, q, v, tau):
        pin = self.pin
        pin.constraintDynamics(self.model, self.data, q, v, tau, self.constraint_models, self.constraint_datas,
                               self.settings)
        return pin.computeConstraintDynamicsDerivatives(self.model, self.data, self.constraint_models,
                                                        self.constraint_datas, self.settings)[:2]

    def impact_bare(self, q, v, tau=None):
        pin = self.pin
        pin.impulseDynamics(self.model, self.data, q, v, self.constraint_models, self.constraint_datas, 0.0,
                            self.settings)
        pin.computeImpulseDynamicsDerivatives(self.model, self.data, self.constraint_models, self.constraint_datas,
                                              0.0, self.settings)
        return self.data.ddq_dq, self.data.ddq_dv

    def constrained(self, q, v, tau):
        pin, N = self.pin, self.model.nv
        pin.constraintDynamics(self.model, self.data, q, v, tau, self.constraint_models, self.constraint_datas,
                               self.settings)
        ddq_dq, ddq_dv, ddq_dtau, dl_dq, dl_dv, dl_dtau = pin.computeConstraintDynamicsDerivatives(
            self.model, self.data, self.constraint_models, self.constraint_datas, self.settings)
        A = self._kinematic_rows(v)
        A[N:, :N], A[N:, N:] = ddq_dq, ddq_dv
        B = np.zeros((2 * N, N - self.off))
        B[N:] = ddq_dtau[:, self.off:]
        return A, B, self.data.lambda_c.copy(), np.hstack([dl_dq, dl_dv]), dl_dtau[:, self.off:]

    def impact(self, q, v, tau=None):
        pin, N = self.pin, self.model.nv
        v_plus = pin.impulseDynamics(self.model, self.data, q, v, self.constraint_models, self.constraint_datas, 0.0,
                                     self.settings)
        pin.computeImpulseDynamicsDerivatives(self.model, self.data, self.constraint_models, self.constraint_datas,
                                              0.0, self.settings)
        A = np.eye(2 * N)
        A[N:, :N], A[N:, N:] = self.data.ddq_dq, self.data.ddq_dv + np.eye(N)
        return v_plus.copy(), A, np.hstack([self.data.dlambda_dq, self.data.dlambda_dv])


def run(job: dict) -> dict:
    """The job of the module docstring, in this process."""
    import pinocchio as pin

    contacts = [SimpleNamespace(frame=f, kind=k, reference=r) for f, k, r in job["contacts"]]
    pipeline = Pipeline(pin, job["urdf"], job["floating"], contacts)
    call = getattr(pipeline, job["call"])
    inputs = [tuple(np.array(x, dtype=float) for x in entry) for entry in job["inputs"]]
    if job.get("serve"):
        print(json.dumps({"version": pin.__version__, "first": [np.asarray(x).tolist() for x in call(*inputs[0])]}),
              flush=True)
        for line in sys.stdin:
            k, burst = (int(x) for x in line.split())
            start = time.perf_counter()
            for _ in range(burst):
                call(*inputs[k])
            print((time.perf_counter() - start) / burst, flush=True)
        return {}
    medians = [median_time(lambda: call(*entry), job["repeat"]) for entry in inputs]
    pipeline.fresh_data()
    first = call(*inputs[0])
    return {"version": pin.__version__, "median": float(np.median(medians)),
            "first": [np.asarray(x).tolist() for x in first]}


if __name__ == "__main__":
    _job = json.loads(sys.stdin.readline())
    _result = run(_job)
    if not _job.get("serve"):
        print(json.dumps(_result))
