"""A finite-horizon LQR for a standing quadruped, from the exact step Jacobians.

The bundled quadruped stands on its four feet (rigid point contacts).  A nominal motion
(the body bobbing) is made by the integrator itself, rl.step; rl.linearize_trajectory(...,
dt=) gives the Jacobians A_d, B_d of each step along it; a backward Riccati recursion
gives time-varying gains K_k; and from a disturbed state (a 20 ms torque push) the
controller τ_k = τ*_k − K_k z_k, with z_k the left-trivialised error between the nominal
and the actual state, brings the robot back onto the nominal.  The nominal torques alone
do not.  docs/discretization.md explains the step and its Jacobians.

Run: python examples/finite_horizon_lqr.py   (exit status 1 if the controller fails)
"""

import sys

import numpy as np

import robot_linearization as rl

DT = 0.002  # s, the controller's (and the simulation's) step
STEPS = 250  # a 0.5 s horizon
model = rl.load_urdf(rl.robots.bundled_urdf_path())
FEET = list(rl.robots.BUNDLED_FEET)


def standing_state(model: rl.Model) -> tuple[rl.State, np.ndarray]:
    """Legs bent, at rest, with the torques that hold it still on its four feet."""
    state = rl.State.from_named(model, joint_positions=dict(zip(model.joint_names, np.tile([0.0, 0.8, -1.5], 4))),
                                base_position=(0.0, 0.0, 0.3))
    lin = rl.linearize(model, state, contacts=FEET)
    N = model.n_velocities
    # the (constrained) accelerations are affine in τ: ν̇(τ) = ν̇(0) + B[ν̇ rows] τ; solve ν̇ = 0
    accelerations = np.concatenate([lin.base_acceleration, lin.joint_accelerations])
    torques = np.linalg.lstsq(lin.B[N:], -accelerations, rcond=None)[0]
    return state, torques


def nominal_motion(model, start, holding_torques):
    """The body bobbing at 1 Hz, made by rl.step under a joint PD: states x*_0 … x*_K, torques τ*_0 … τ*_{K-1}."""
    bend = np.tile([0.0, 1.0, -2.0], 4)
    states, torques = [start], np.empty((STEPS, model.n_joints))
    for k in range(STEPS):
        x = states[-1]
        reference = start.joint_positions + 0.1 * np.sin(2 * np.pi * k * DT) * bend
        torques[k] = holding_torques + 30.0 * (reference - x.joint_positions) - 1.0 * x.joint_velocities
        states.append(rl.step(model, x, torques[k], DT, contacts=FEET))
    return states, torques


def lqr_gains(A_d, B_d, Q, R):
    """Backward Riccati recursion: K_k (n, 2N) for k = K-1 … 0 with P_K = Q."""
    P, gains = Q, [None] * len(A_d)
    for k in reversed(range(len(A_d))):
        A, B = A_d[k], B_d[k]
        gains[k] = np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)
        P = Q + A.T @ P @ (A - B @ gains[k])
        P = 0.5 * (P + P.T)
    return gains


def track(model, start, nominal, torques, gains=None):
    """|z_k| along the horizon from ``start``, with or without feedback."""
    x, errors = start, []
    for k in range(STEPS):
        z = rl.state_difference(model, nominal[k], x)  # x = x*_k · exp(z)
        errors.append(np.linalg.norm(z))
        tau = torques[k] - (gains[k] @ z if gains is not None else 0.0)
        x = rl.step(model, x, tau, DT, contacts=FEET)
    errors.append(np.linalg.norm(rl.state_difference(model, nominal[STEPS], x)))
    return np.array(errors)


def main() -> int:
    start, holding = standing_state(model)
    nominal, torques = nominal_motion(model, start, holding)
    horizon = rl.linearize_trajectory(model, nominal[:-1], torques, contacts=FEET, dt=DT)
    print(f"A_d {horizon.A_d.shape}, B_d {horizon.B_d.shape} along the nominal, "
          f"contact forces {horizon.contact_forces.shape}")

    n = model.n_joints  # weights on [z_H, z_s, z_v, z_r] and on τ
    Q = np.diag(np.r_[np.full(6, 100.0), np.full(n, 10.0), np.full(6, 1.0), np.full(n, 0.1)])
    R = 1e-3 * np.eye(n)
    gains = lqr_gains(horizon.A_d, horizon.B_d, Q, R)

    pushed = start  # a 20 ms torque push away from the nominal's start
    push = 20.0 * np.random.default_rng(0).normal(size=n)
    for _ in range(10):
        pushed = rl.step(model, pushed, holding + push, DT, contacts=FEET)
    closed, open_ = track(model, pushed, nominal, torques, gains), track(model, pushed, nominal, torques)

    print(f"{'t [s]':>6}  {'|z| with LQR':>13}  {'|z| nominal torques only':>25}")
    for k in range(0, STEPS + 1, 50):
        print(f"{k * DT:6.2f}  {closed[k]:13.3g}  {open_[k]:25.3g}")
    recovered = closed[-1] < 1e-2 * closed[0] and open_[-1] > closed[0]
    print("the LQR brings the pushed robot back onto the nominal" if recovered else "FAILED: not recovered")
    return 0 if recovered else 1


if __name__ == "__main__":
    sys.exit(main())
