"""What A means for stability: its eigenvalues, and the contact forces per contact (Qt-free).

Continuous time (A): the linearized robot ż = A z is unstable where an eigenvalue
has Re λ > 0; the spectral abscissa is max Re λ(A).  One step (A_d): z⁺ = A_d z is
unstable where |λ| > 1; the spectral radius is max |λ(A_d)|.  A floating base has
eigenvalues at 0 (resp. 1) that are not instability but invariance (the robot may be
anywhere, facing anywhere): they count as marginal, within MARGIN of the boundary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MARGIN = 1e-9
"""Eigenvalues within MARGIN·max(1, max|λ|) of the stability boundary are marginal, not unstable."""


@dataclass(frozen=True)
class Spectrum:
    """Eigenvalues of A (discrete=False) or A_d (discrete=True)."""

    eigenvalues: np.ndarray  # (2N,) complex
    discrete: bool

    @property
    def distances(self) -> np.ndarray:
        """Signed distance of each eigenvalue past the boundary: Re λ, or |λ| − 1."""
        return np.abs(self.eigenvalues) - 1.0 if self.discrete else self.eigenvalues.real

    @property
    def measure(self) -> float:
        """The spectral abscissa max Re λ (continuous) or the spectral radius max |λ| (discrete)."""
        if self.eigenvalues.size == 0:
            return 0.0
        return float(np.abs(self.eigenvalues).max() if self.discrete else self.eigenvalues.real.max())

    @property
    def unstable(self) -> int:
        """How many eigenvalues lie past the boundary by more than the margin."""
        scale = max(1.0, float(np.abs(self.eigenvalues).max(initial=0.0)))
        return int(np.count_nonzero(self.distances > MARGIN * scale))

    @property
    def summary(self) -> str:
        name = "spectral radius of A_d" if self.discrete else "spectral abscissa of A"
        boundary = "|λ| > 1" if self.discrete else "Re λ > 0"
        return f"{name}: {self.measure:.4g}; {self.unstable} of {self.eigenvalues.size} with {boundary}"

    def bounds(self) -> tuple[float, float, float, float]:
        """(re_min, re_max, im_min, im_max) of a plot showing every eigenvalue and the
        stability boundary near them — the imaginary axis (the origin), or for A_d the
        unit circle (the point 1: a short step's eigenvalues crowd about it, which a plot
        of the whole circle would show as one dot) — with a margin of a tenth."""
        points = np.concatenate([self.eigenvalues, [1.0 if self.discrete else 0.0]])
        re_min, re_max = points.real.min(), points.real.max()
        im_min, im_max = points.imag.min(), points.imag.max()
        pad = 0.1 * max(re_max - re_min, im_max - im_min, 1e-12)
        return re_min - pad, re_max + pad, im_min - pad, im_max + pad


def spectrum(matrix: np.ndarray, discrete: bool = False) -> Spectrum:
    """The eigenvalues of a square matrix (A, or A_d with discrete=True)."""
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"spectrum: expected a square matrix, got shape {matrix.shape}")
    return Spectrum(np.linalg.eigvals(matrix) if matrix.size else np.zeros(0, complex), discrete)


@dataclass(frozen=True)
class ContactForce:
    """One contact's entries of λ (force on the robot, in the contact's reference axes)."""

    frame: str
    components: tuple[tuple[str, float], ...]  # (axis, value): fx, fy, fz[, mx, my, mz]

    @property
    def force(self) -> float:
        """‖(fx, fy, fz)‖ [N]."""
        return float(np.linalg.norm([value for axis, value in self.components if axis.startswith("f")]))


def contact_forces(values, labels) -> tuple[ContactForce, ...]:
    """λ (m,) grouped by contact frame, from its labels ``<frame>:fx …``."""
    values = np.asarray(values, dtype=float).ravel()
    if len(values) != len(labels):
        raise ValueError(f"contact forces: {len(values)} values for {len(labels)} labels")
    frames: dict[str, list] = {}
    for label, value in zip(labels, values):
        frame, _, component = label.rpartition(":")
        frames.setdefault(frame, []).append((component, float(value)))
    return tuple(ContactForce(frame, tuple(components)) for frame, components in frames.items())
