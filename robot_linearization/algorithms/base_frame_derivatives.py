"""Derivatives of the extended inverse dynamics with every column in the base frame.

The same D₁…D₄ID̄ as the body-frame sweep of derivatives.py (thesis Tables
4.2–4.5), computed the way Carpentier & Mansard (RSS 2018, "Analytical
derivatives of rigid body dynamics algorithms") compute the RNEA derivatives:
every motion and force is expressed in one frame, so a derivative column is a
single 6-vector shared by all bodies below its joint instead of one column per
body carried down by 6×6 transforms.  That frame is the base frame at the
evaluated state (the moving base's pose taken as the world's, gravity g_0 = R^T g
rotated into it), where the base twist and acceleration of the state are
already expressed; the floating base is then a 6-DoF joint with Γ_0 = I₆ whose
columns are z_H (positions) and z_v (velocities).

In that frame, with J_c the axis of column c (joint k: ⁰X_k Γ_k), λ its body's
parent, v, a the body twists and accelerations (a including −g_0):

    ∂v/∂s_c = v_λ × J_c,   ∂a/∂s_c = a_λ × J_c + v_λ × ∂v/∂s_c,
    ∂a/∂r_c = v × J_c + v_λ × J_c,

and, with Y, Ẏ the composite inertia of the body's subtree and its rate
(v ×̄* Y − Y v× + (·) ×̄* h per body, h = Y v), every entry of D is one dot
product: the position derivative of row d below column c reads
(Y_d J_d)·∂a/∂s_c + (Ẏ_d^T J_d)·∂v/∂s_c, that of row c over a column e of its
subtree J_c·∂f_e/∂s_e, with f_e the wrench of the subtree moved by e (the
velocity columns alike).  Cost O(n·depth) dot products, against O(n·depth) 6×6
transforms of the body-frame sweep.
"""

from __future__ import annotations

import numpy as np

from ..compiled import kernel
from ..spatial import cross_force_into, cross_motion_into, mat_vec_into, skew_entry


@kernel(inline=True)
def _skew_times(t, M, r, c):
    """(t^ M)[r, c] for a 3×3 block M (a view), without forming t^."""
    if r == 0:
        return t[1] * M[2, c] - t[2] * M[1, c]
    if r == 1:
        return t[2] * M[0, c] - t[0] * M[2, c]
    return t[0] * M[1, c] - t[1] * M[0, c]


@kernel(inline=True)
def _times_skew(M, t, r, c):
    """(M t^)[r, c] for a 3×3 block M (a view), without forming t^."""
    if c == 0:
        return M[r, 1] * t[2] - M[r, 2] * t[1]
    if c == 1:
        return M[r, 2] * t[0] - M[r, 0] * t[2]
    return M[r, 0] * t[1] - M[r, 1] * t[0]


@kernel(inline=True)
def _place_inertia(I, R, t, Y, rotated):
    """Y = ⁰X_i^{-T} I ⁰X_i^{-1} (6×6): the body inertia I (any symmetric 6×6, about the
    body origin, such as thesis Table D.3's raw matrices) in the base frame, where the body
    has rotation R and origin t.
    With the blocks of I rotated, [[A, B], [Bᵀ, D]] = diag(R, R) I diag(R, R)ᵀ:
    Y = [[A, B − A t^], [·ᵀ, D + t^ B − Bᵀ t^ − t^ A t^]]; rotated: (6, 6) scratch.
    Each block is two 3×3 products (R (I_blk Rᵀ)), and A t^ is formed once."""
    for br in range(2):
        for bc in range(2):
            for r in range(3):  # Y's block holds I_blk Rᵀ for a moment
                for c in range(3):
                    Y[3 * br + r, 3 * bc + c] = (I[3 * br + r, 3 * bc] * R[c, 0] + I[3 * br + r, 3 * bc + 1] * R[c, 1]
                                                 + I[3 * br + r, 3 * bc + 2] * R[c, 2])
            for r in range(3):
                for c in range(3):
                    rotated[3 * br + r, 3 * bc + c] = (R[r, 0] * Y[3 * br, 3 * bc + c]
                                                       + R[r, 1] * Y[3 * br + 1, 3 * bc + c]
                                                       + R[r, 2] * Y[3 * br + 2, 3 * bc + c])
    A, B, D = rotated[:3, :3], rotated[:3, 3:], rotated[3:, 3:]
    A_t = Y[3:, :3]  # A t^, until Y's lower-left block is written last
    for r in range(3):
        for c in range(3):
            A_t[r, c] = _times_skew(A, t, r, c)
    for r in range(3):
        for c in range(3):
            Y[r, c] = A[r, c]
            Y[r, 3 + c] = B[r, c] - A_t[r, c]
            # Bᵀ t^ = (−t^ B)ᵀ: (Bᵀ t^)[r, c] = −(t^ B)[c, r]
            Y[3 + r, 3 + c] = D[r, c] + _skew_times(t, B, r, c) + _skew_times(t, B, c, r) - _skew_times(t, A_t, r, c)
    for r in range(3):
        for c in range(3):
            Y[3 + c, r] = Y[r, 3 + c]


@kernel(inline=True)
def _place_rigid_inertia(I, R, t, Y, rotated):
    """Y = ⁰X_i^{-T} I ⁰X_i^{-1} (6×6): the rigid-body inertia I = [[m 1, −m c^], [m c^, I_o]]
    (spatial.spatial_inertia, about the body origin) in the base frame, where the body has
    rotation R and origin t: :func:`_place_inertia` with one 3×3 congruence instead of four.
    With h = m R c and D = R I_o Rᵀ: Y = [[m 1, −(h + m t)^], [(h + m t)^, D − t^h^ − h^t^ − m t^t^]],
    and x^y^ = y xᵀ − (x·y) 1 gives the last block as D − (h tᵀ + t hᵀ + m t tᵀ) + (2 t·h + m t·t) 1.
    rotated: (6, 6) scratch (I_o Rᵀ)."""
    m = I[0, 0]
    mc0, mc1, mc2 = I[5, 1], I[3, 2], I[4, 0]  # m c from the block m c^
    h0 = R[0, 0] * mc0 + R[0, 1] * mc1 + R[0, 2] * mc2
    h1 = R[1, 0] * mc0 + R[1, 1] * mc1 + R[1, 2] * mc2
    h2 = R[2, 0] * mc0 + R[2, 1] * mc1 + R[2, 2] * mc2
    t0, t1, t2 = t[0], t[1], t[2]
    g0, g1, g2 = h0 + m * t0, h1 + m * t1, h2 + m * t2  # m × the centre of mass, base frame
    for r in range(3):  # I_o Rᵀ
        for c in range(3):
            rotated[r, c] = I[3 + r, 3] * R[c, 0] + I[3 + r, 4] * R[c, 1] + I[3 + r, 5] * R[c, 2]
    diagonal = 2.0 * (t0 * h0 + t1 * h1 + t2 * h2) + m * (t0 * t0 + t1 * t1 + t2 * t2)
    for r in range(3):
        h_r, t_r = (h0 if r == 0 else h1 if r == 1 else h2), t[r]
        for c in range(r, 3):
            h_c, t_c = (h0 if c == 0 else h1 if c == 1 else h2), t[c]
            value = (R[r, 0] * rotated[0, c] + R[r, 1] * rotated[1, c] + R[r, 2] * rotated[2, c]
                     - (h_r * t_c + t_r * h_c + m * t_r * t_c))
            if r == c:
                value += diagonal
            Y[3 + r, 3 + c] = value
            Y[3 + c, 3 + r] = value
    for r in range(3):
        for c in range(3):
            Y[r, c] = m if r == c else 0.0
    # −g^ top right, g^ bottom left
    Y[0, 3], Y[0, 4], Y[0, 5] = 0.0, g2, -g1
    Y[1, 3], Y[1, 4], Y[1, 5] = -g2, 0.0, g0
    Y[2, 3], Y[2, 4], Y[2, 5] = g1, -g0, 0.0
    for r in range(3):
        for c in range(3):
            Y[3 + c, r] = Y[r, 3 + c]


@kernel(inline=True)
def _add_inertia_rate(Y, v, h, out, column):
    """out += Ẏ = v ×̄* Y − Y v× + B(h) for one body's inertia Y in the common
    frame, twist v and momentum h = Y v, where B(h) x = x ×̄* h.  With C = v ×̄* Y,
    −Y v× = Cᵀ (Y symmetric, v ×̄* = −(v×)ᵀ); column: (6,) scratch."""
    for c in range(6):
        cross_force_into(v, Y[:, c], column)  # column c of C
        for r in range(6):
            out[r, c] += column[r]
            out[c, r] += column[r]
    # B(h) = [[0, −h_l^], [−h_l^, −h_a^]]
    for r in range(3):
        for c in range(3):
            linear = skew_entry(h, r, c)
            out[r, 3 + c] -= linear
            out[3 + r, c] -= linear
            out[3 + r, 3 + c] -= skew_entry(h[3:], r, c)


@kernel(inline=True)
def _add_rigid_inertia_rate(Y, v, h, out):
    """out += Ẏ (:func:`_add_inertia_rate`) for a rigid-body inertia Y = [[m 1, −g^], [g^, Ī]]
    (g = m × the centre of mass; :func:`_place_rigid_inertia`), whose rate has a zero left half:
    with h = Y v, Ẏ = [[0, −2 h_l^], [0, S]], S = −v_l^g^ − g^v_l^ + ω^Ī − Īω^ − h_a^ (the terms of
    v ×̄* Y − Y v× + B(h) expanded; its left half cancels exactly).  With x^y^ = y xᵀ − (x·y) 1 and
    −Īω^ = (ω^Ī)ᵀ: S = 2(g·v_l) 1 − g v_lᵀ − v_l gᵀ + P + Pᵀ − h_a^, P = ω^Ī."""
    g0, g1, g2 = Y[5, 1], Y[3, 2], Y[4, 0]
    w0, w1, w2 = v[3], v[4], v[5]
    twice = 2.0 * (g0 * v[0] + g1 * v[1] + g2 * v[2])
    for r in range(3):
        g_r, l_r = (g0 if r == 0 else g1 if r == 1 else g2), v[r]
        for c in range(3):  # P[r, c] = (ω × Ī[:, c])[r], P[c, r] likewise
            P_rc = (w1 * Y[5, 3 + c] - w2 * Y[4, 3 + c] if r == 0 else
                    w2 * Y[3, 3 + c] - w0 * Y[5, 3 + c] if r == 1 else w0 * Y[4, 3 + c] - w1 * Y[3, 3 + c])
            P_cr = (w1 * Y[5, 3 + r] - w2 * Y[4, 3 + r] if c == 0 else
                    w2 * Y[3, 3 + r] - w0 * Y[5, 3 + r] if c == 1 else w0 * Y[4, 3 + r] - w1 * Y[3, 3 + r])
            g_c = g0 if c == 0 else g1 if c == 1 else g2
            value = P_rc + P_cr - (g_r * v[c] + l_r * g_c) - skew_entry(h[3:], r, c)
            if r == c:
                value += twice
            out[3 + r, 3 + c] += value
            out[r, 3 + c] -= 2.0 * skew_entry(h, r, c)


@kernel
def place_inertias_into(model, data):
    """Every body's inertia in the base frame into data.Y (n+1, 6, 6), from the body poses
    data.R, t (kinematics.base_frame_poses_into); data.Y_rate: scratch.  The sweep's forward
    pass reads them, its backward pass sums them into composite inertias in place: they are
    placed again before another backward pass (the impact map runs two forward passes on one
    placement)."""
    I, R, t, Y, Y_rate = model.I, data.R, data.t, data.Y, data.Y_rate
    if model.rigid_inertias:
        for i in range(Y.shape[0]):
            _place_rigid_inertia(I[i], R[i], t[i], Y[i], Y_rate[i])
    else:
        for i in range(Y.shape[0]):
            _place_inertia(I[i], R[i], t[i], Y[i], Y_rate[i])


@kernel
def base_frame_motion_into(model, data, base_twist, base_acceleration, g0, r, rdot):
    """The sweep's forward pass: twists data.v, accelerations data.a (a_0 = v̇ − g_0) and
    wrenches data.f (n+1, 6) of every body, its inertia rate data.Y_rate (n+1, 6, 6) (zero when
    the robot does not move), and each column's ∂v/∂s_c, ∂a/∂s_c, ∂a/∂r_c into
    data.columns[0:3] (N, 6), all in the base frame, at the inertias data.Y placed by
    :func:`place_inertias_into`.

    Inputs as :func:`base_frame_derivatives_into`.  The columns are shared by every body
    below column c: in body k's own frame, ∂v_k/∂s_c = ⁰X_k⁻¹ ∂v/∂s_c and (the ``−v_k ×``
    terms the backward pass leaves to Ẏ) ∂a_k/∂s_c = ⁰X_k⁻¹(∂a/∂s_c − v_k × ∂v/∂s_c),
    ∂a_k/∂r_c = ⁰X_k⁻¹(∂a/∂r_c − v_k × J_c) — what the contact accelerations need."""
    parent, floating_base, rigid = model.parent, model.floating_base, model.rigid_inertias
    J, v, a, f, Y, Y_rate, columns = data.axes, data.v, data.a, data.f, data.Y, data.Y_rate, data.columns
    n_bodies = v.shape[0]
    moving = False
    for x in base_twist:
        moving = moving or x != 0.0
    for x in r:
        moving = moving or x != 0.0
    off = 6 if floating_base else 0
    dv_dq, da_dq, da_dr = columns[0], columns[1], columns[2]
    tmp, tmp2 = np.empty(6), np.empty(6)
    v[0] = base_twist
    a[0] = base_acceleration
    if floating_base:  # the base's parent, the world, is at rest and accelerates by −g_0
        for c in range(6):
            dv_dq[c] = 0.0
            tmp[:] = -g0
            cross_motion_into(tmp, J[c], da_dq[c])
            cross_motion_into(v[0], J[c], da_dr[c])
    for i in range(n_bodies):
        if i > 0:
            p, k = parent[i], i - 1
            c = off + k
            if not moving:  # (the terms below with a twist, zero, left out: the same values)
                v[i] = 0.0
                dv_dq[c] = 0.0
                da_dr[c] = 0.0
                cross_motion_into(a[p], J[c], da_dq[c])
                for row in range(6):
                    a[i, row] = a[p, row] + rdot[k] * J[c, row]
                mat_vec_into(Y[i], a[i], f[i])
                Y_rate[i] = 0.0
                continue
            for row in range(6):
                v[i, row] = v[p, row] + r[k] * J[c, row]
            cross_motion_into(v[p], J[c], dv_dq[c])
            cross_motion_into(a[p], J[c], da_dq[c])
            cross_motion_into(v[p], dv_dq[c], tmp)
            cross_motion_into(v[i], J[c], tmp2)  # J̇ = v × J
            for row in range(6):
                da_dq[c, row] += tmp[row]
                da_dr[c, row] = tmp2[row] + dv_dq[c, row]
                a[i, row] = a[p, row] + rdot[k] * J[c, row] + r[k] * tmp2[row]
        mat_vec_into(Y[i], v[i], tmp)  # momentum h = Y v
        mat_vec_into(Y[i], a[i], f[i])
        cross_force_into(v[i], tmp, tmp2)
        for row in range(6):
            f[i, row] += tmp2[row]
        Y_rate[i] = 0.0
        if moving and rigid:
            _add_rigid_inertia_rate(Y[i], v[i], tmp, Y_rate[i])
        elif moving:
            _add_inertia_rate(Y[i], v[i], tmp, Y_rate[i], tmp2)


@kernel(inline=True)
def _column_dots_into(Y_J, Y_rate_J, x, y, start, end, moving, out):
    """out[d] = Y_J[d]·x + Y_rate_J[d]·y for the rows d in [start, end), with x and y held in
    registers (out is a column of D, which the compiler cannot tell apart from x and y); the
    second term left out where the robot does not move (Y_rate_J is zero then)."""
    x0, x1, x2, x3, x4, x5 = x[0], x[1], x[2], x[3], x[4], x[5]
    if not moving:
        for d in range(start, end):
            a = Y_J[d]
            out[d] = a[0] * x0 + a[1] * x1 + a[2] * x2 + a[3] * x3 + a[4] * x4 + a[5] * x5
        return
    y0, y1, y2, y3, y4, y5 = y[0], y[1], y[2], y[3], y[4], y[5]
    for d in range(start, end):
        a, b = Y_J[d], Y_rate_J[d]
        out[d] = ((a[0] * x0 + a[1] * x1 + a[2] * x2 + a[3] * x3 + a[4] * x4 + a[5] * x5)
                  + (b[0] * y0 + b[1] * y1 + b[2] * y2 + b[3] * y3 + b[4] * y4 + b[5] * y5))


@kernel(inline=True)
def _row_dots_into(x, columns, start, end, out):
    """out[e] = x·columns[e] for e in [start, end), x held in registers."""
    x0, x1, x2, x3, x4, x5 = x[0], x[1], x[2], x[3], x[4], x[5]
    for e in range(start, end):
        g = columns[e]
        out[e] = g[0] * x0 + g[1] * x1 + g[2] * x2 + g[3] * x3 + g[4] * x4 + g[5] * x5


@kernel
def base_frame_backward_into(model, data, with_base_pose, velocity_columns):
    """The sweep's backward pass: composite inertias, their rates and the wrenches data.f
    (minus any external wrench the caller took off after :func:`base_frame_motion_into`)
    accumulate, and each entry of [D₁ | D₂ | D₃ | D₄]ID̄ (N, 2N) into data.derivatives is
    one dot product.  with_base_pose=False leaves D₁ID̄ zero; velocity_columns=False leaves
    the velocity columns [D₃ | D₄]ID̄ zero (the impact map needs the positions' alone).  Where
    no body moves (data.v zero: the impact map's passes) the inertia rates are zero, and their
    products are left out; so is their zero left half for rigid bodies (_add_rigid_inertia_rate)."""
    parent, subtree_end, floating_base = model.parent, model.subtree_end, model.floating_base
    J, f, Y, Y_rate, columns, derivatives = data.axes, data.f, data.Y, data.Y_rate, data.columns, data.derivatives
    n_bodies = f.shape[0]
    N = derivatives.shape[0]
    off = 6 if floating_base else 0
    dv_dq, da_dq, da_dr, Y_J = columns[0], columns[1], columns[2], columns[3]
    Y_rate_J, df_dq, df_dr = columns[4], columns[5], columns[6]
    tmp = np.empty(6)
    derivatives[:] = 0.0
    moving = False
    for i in range(n_bodies):
        for row in range(6):
            moving = moving or data.v[i, row] != 0.0
    first = 3 if model.rigid_inertias else 0  # Ẏ's first column with entries (rigid bodies: its left half is 0)
    last = 0 if floating_base else 1
    for i in range(n_bodies - 1, last - 1, -1):
        own_start, own_end = (0, 6) if i == 0 else (off + i - 1, off + i)
        end = off + subtree_end[i]  # own columns, then those of the subtree below
        Y_i, Y_dot = Y[i], Y_rate[i]
        for c in range(own_start, own_end):  # six products with Y and Ẏ, each row of them read once:
            J_c, dv, da_q, da_r = J[c], dv_dq[c], da_dq[c], da_dr[c]
            for row in range(6):
                Y_row, Y_dot_row = Y_i[row], Y_dot[row]
                YJ, Y_daq, Y_dar = 0.0, 0.0, 0.0
                for k in range(6):
                    YJ += Y_row[k] * J_c[k]
                    Y_daq += Y_row[k] * da_q[k]
                    Y_dar += Y_row[k] * da_r[k]
                Y_J[c, row] = YJ
                if not moving:
                    Y_rate_J[c, row], df_dq[c, row], df_dr[c, row] = 0.0, Y_daq, Y_dar
                    continue
                Ydot_dv, Ydot_J, Ydot_T_J = 0.0, 0.0, 0.0
                for k in range(first, 6):
                    Ydot_dv += Y_dot_row[k] * dv[k]
                    Ydot_J += Y_dot_row[k] * J_c[k]
                for k in range(6 if row >= first else 0):
                    Ydot_T_J += Y_dot[k, row] * J_c[k]
                Y_rate_J[c, row] = Ydot_T_J
                df_dq[c, row] = Ydot_dv + Y_daq  # ∂f/∂s_c = Ẏ ∂v/∂s_c + Y ∂a/∂s_c (+ J ×̄* f below)
                df_dr[c, row] = Ydot_J + Y_dar  # ∂f/∂r_c = Ẏ J + Y ∂a/∂r_c
        position_columns = with_base_pose or i > 0  # the base's own position columns are D₁ID̄
        for c in range(own_start, own_end):
            if position_columns:
                _column_dots_into(Y_J, Y_rate_J, da_dq[c], dv_dq[c], own_end, end, moving, derivatives[:, c])
            _row_dots_into(J[c], df_dq, own_start if position_columns else own_end, end, derivatives[c])
            if velocity_columns:
                _column_dots_into(Y_J, Y_rate_J, da_dr[c], J[c], own_end, end, moving, derivatives[:, N + c])
                _row_dots_into(J[c], df_dr, own_start, end, derivatives[c, N:])
        for c in range(own_start, own_end):
            cross_force_into(J[c], f[i], tmp)  # the subtree's wrench turns with the joint
            for row in range(6):
                df_dq[c, row] += tmp[row]
        if i > 0:
            p = parent[i]
            for row in range(6):
                f[p, row] += f[i, row]
                for col in range(6):
                    Y[p, row, col] += Y_i[row, col]
                for col in range(first if moving else 6, 6):
                    Y_rate[p, row, col] += Y_dot[row, col]


@kernel
def base_frame_derivatives_into(model, data, base_twist, base_acceleration, g0, r, rdot, with_base_pose):
    """[D₁ | D₂ | D₃ | D₄]ID̄ (N, 2N) into data.derivatives, every column in the base frame.

    Inputs: the body poses data.R, t and column axes data.axes (N, 6) in the base frame
    (kinematics.base_frame_poses_into), base_twist v (6,) and base_acceleration
    a_0 = v̇ − g_0 (6,) (fixed base: 0 and −g_0), g_0 (6,), joint velocities r and
    accelerations ṙ (n,).  Scratch: data.v, a, f, the composite inertias and their rates
    data.Y, Y_rate, data.columns.  with_base_pose=False leaves D₁ID̄ zero, which the
    linearization does not need (see linearize_into).  The inertias placed, the forward pass, then the
    backward pass.
    """
    place_inertias_into(model, data)
    base_frame_motion_into(model, data, base_twist, base_acceleration, g0, r, rdot)
    base_frame_backward_into(model, data, with_base_pose, True)
