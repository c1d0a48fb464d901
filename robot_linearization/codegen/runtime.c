#include <math.h>

/* The routines' loops over a row are vectorised (-O3's loop vectoriser; -O2 keeps them scalar):
   each entry's sums stay in their order, and -ffp-contract=off still forbids FMA */
#if defined(__GNUC__) && !defined(__clang__)
#define RL_LOOPS __attribute__((optimize("O3")))
#else
#define RL_LOOPS
#endif

/* spatial.lu_factor6 in place on LU (6x6, row-major), its pivot rows as doubles */
static void rl_factor6(double *LU, double *pivots) {
    for (int k = 0; k < 6; k++) {
        int best = k;
        for (int r = k + 1; r < 6; r++)
            if (fabs(LU[6 * r + k]) > fabs(LU[6 * best + k])) best = r;
        pivots[k] = best;
        if (best != k)
            for (int c = 0; c < 6; c++) {
                double swap = LU[6 * k + c]; LU[6 * k + c] = LU[6 * best + c]; LU[6 * best + c] = swap;
            }
        for (int r = k + 1; r < 6; r++) {
            LU[6 * r + k] /= LU[6 * k + k];
            for (int c = k + 1; c < 6; c++) LU[6 * r + c] -= LU[6 * r + k] * LU[6 * k + c];
        }
    }
}

/* spatial.lu_solve6: x = M^-1 x in place, the substitutions in registers and inlined where called, so
   that the IMMAmb's independent solves (one per column of M^-1) overlap: called out of line, each
   waited on its six divisions through memory (solo12's free kernel: 4.7 against 4.2 us) */
static inline __attribute__((always_inline)) void rl_solve6(const double *LU, const double *pivots, double *x) {
    for (int k = 0; k < 6; k++) {
        int p = (int)pivots[k];
        double swap = x[k]; x[k] = x[p]; x[p] = swap;
    }
    double x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3], x4 = x[4], x5 = x[5];
    x1 -= LU[6] * x0;
    x2 -= LU[12] * x0; x2 -= LU[13] * x1;
    x3 -= LU[18] * x0; x3 -= LU[19] * x1; x3 -= LU[20] * x2;
    x4 -= LU[24] * x0; x4 -= LU[25] * x1; x4 -= LU[26] * x2; x4 -= LU[27] * x3;
    x5 -= LU[30] * x0; x5 -= LU[31] * x1; x5 -= LU[32] * x2; x5 -= LU[33] * x3; x5 -= LU[34] * x4;
    x5 /= LU[35];
    x4 -= LU[29] * x5; x4 /= LU[28];
    x3 -= LU[22] * x4; x3 -= LU[23] * x5; x3 /= LU[21];
    x2 -= LU[15] * x3; x2 -= LU[16] * x4; x2 -= LU[17] * x5; x2 /= LU[14];
    x1 -= LU[8] * x2; x1 -= LU[9] * x3; x1 -= LU[10] * x4; x1 -= LU[11] * x5; x1 /= LU[7];
    x0 -= LU[1] * x1; x0 -= LU[2] * x2; x0 -= LU[3] * x3; x0 -= LU[4] * x4; x0 -= LU[5] * x5; x0 /= LU[0];
    x[0] = x0; x[1] = x1; x[2] = x2; x[3] = x3; x[4] = x4; x[5] = x5;
}

/* compiled.finite_sum */
static double rl_finite_sum(const double *x, long n) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    long end = n - n % 4;
    for (long j = 0; j < end; j += 4) { s0 += x[j]; s1 += x[j + 1]; s2 += x[j + 2]; s3 += x[j + 3]; }
    for (long j = end; j < n; j++) s0 += x[j];
    return (s0 + s1) + (s2 + s3);
}

/* forward_dynamics.singular_pivot on the articulated inertias I_A (n_bodies, 6, 6) and pivots D (n_bodies):
   each inertia's largest |entry| taken in four lanes, which need not wait on each other's comparisons
   (a maximum is exact in any order, and passes over NaN either way) */
static int rl_singular_pivot(const double *I_A, const double *D, int n_bodies, double tolerance) {
    for (int i = n_bodies - 1; i > 0; i--) {
        double lanes[4] = {0.0, 0.0, 0.0, 0.0};
        for (int k = 0; k < 36; k += 4)
            for (int l = 0; l < 4; l++) {
                const double a = fabs(I_A[36 * i + k + l]);
                lanes[l] = a > lanes[l] ? a : lanes[l];
            }
        double scale = 0.0;
        for (int l = 0; l < 4; l++) scale = lanes[l] > scale ? lanes[l] : scale;
        if (!(fabs(D[i]) > tolerance * scale)) return i - 1;
    }
    return -1;
}

/* constrained_dynamics.multiply_add_into: out (p, w; rows ldo apart) += sign A (p, q) B (q, >= w; rows ldb
   apart), each entry summed in the same order */
RL_LOOPS static void rl_multiply_add(const double *restrict A, const double *restrict B, int p, int q, int w, int ldb,
                            double sign, double *restrict out, int ldo) {
    int end = q - q % 4, top = p - p % 4;
    for (int i = 0; i < top; i += 4) {
        double *r0 = out + i * ldo, *r1 = r0 + ldo, *r2 = r1 + ldo, *r3 = r2 + ldo;
        const double *A0 = A + i * q, *A1 = A0 + q, *A2 = A1 + q, *A3 = A2 + q;
        for (int k = 0; k < end; k += 4) {
            double a00 = sign * A0[k], a01 = sign * A0[k + 1], a02 = sign * A0[k + 2], a03 = sign * A0[k + 3];
            double a10 = sign * A1[k], a11 = sign * A1[k + 1], a12 = sign * A1[k + 2], a13 = sign * A1[k + 3];
            double a20 = sign * A2[k], a21 = sign * A2[k + 1], a22 = sign * A2[k + 2], a23 = sign * A2[k + 3];
            double a30 = sign * A3[k], a31 = sign * A3[k + 1], a32 = sign * A3[k + 2], a33 = sign * A3[k + 3];
            const double *B0 = B + k * ldb, *B1 = B0 + ldb, *B2 = B1 + ldb, *B3 = B2 + ldb;
            for (int j = 0; j < w; j++) {
                double x0 = B0[j], x1 = B1[j], x2 = B2[j], x3 = B3[j];
                r0[j] += a00 * x0 + a01 * x1 + a02 * x2 + a03 * x3;
                r1[j] += a10 * x0 + a11 * x1 + a12 * x2 + a13 * x3;
                r2[j] += a20 * x0 + a21 * x1 + a22 * x2 + a23 * x3;
                r3[j] += a30 * x0 + a31 * x1 + a32 * x2 + a33 * x3;
            }
        }
        for (int k = end; k < q; k++) {
            double f0 = sign * A0[k], f1 = sign * A1[k], f2 = sign * A2[k], f3 = sign * A3[k];
            const double *Bk = B + k * ldb;
            for (int j = 0; j < w; j++) {
                double x = Bk[j];
                r0[j] += f0 * x; r1[j] += f1 * x; r2[j] += f2 * x; r3[j] += f3 * x;
            }
        }
    }
    for (int i = top; i < p; i++) {
        double *row = out + i * ldo;
        const double *Ai = A + i * q;
        for (int k = 0; k < end; k += 4) {
            double f0 = sign * Ai[k], f1 = sign * Ai[k + 1], f2 = sign * Ai[k + 2], f3 = sign * Ai[k + 3];
            const double *B0 = B + k * ldb, *B1 = B0 + ldb, *B2 = B1 + ldb, *B3 = B2 + ldb;
            for (int j = 0; j < w; j++) row[j] += f0 * B0[j] + f1 * B1[j] + f2 * B2[j] + f3 * B3[j];
        }
        for (int k = end; k < q; k++) {
            double f = sign * Ai[k];
            const double *Bk = B + k * ldb;
            for (int j = 0; j < w; j++) row[j] += f * Bk[j];
        }
    }
}

/* inverse_mass_matrix.inverse_mass_matrix_into (the IMMAmb, Table 4.7) on a block b: its inputs parent,
   subtree_end (n_bodies each, as doubles), R (n_bodies, 3, 3), t (n_bodies, 3), axes (N, 6), I_A[0] (6, 6),
   U (n_bodies, 6), D (n_bodies); its outputs M_inv (N, N), U_base (n_bodies, 6); then F, P (n_bodies, 6, N)
   as scratch.  A loop, not a trace: its work grows as n times the tree's depth, its inputs as n. */
RL_LOOPS static void rl_inverse_mass_matrix(double *b, int n_bodies, int N, int floating_base) {
    const int off = floating_base ? 6 : 0;
    const double *parent = b, *subtree_end = b + n_bodies, *R = subtree_end + n_bodies, *t = R + 9 * n_bodies;
    const double *axes = t + 3 * n_bodies, *I_A0 = axes + 6 * N, *U = I_A0 + 36, *D = U + 6 * n_bodies;
    double *M_inv = b + 21 * n_bodies + 6 * N + 36, *U_base = M_inv + N * N, *F = U_base + 6 * n_bodies;
    double *P = F + 6 * n_bodies * N;
    for (int k = 0; k < N * N; k++) M_inv[k] = 0.0;
    for (int i = 0; i < n_bodies; i++)
        for (int q = 0; q < 6; q++)
            for (int c = i > 0 ? off + i - 1 : 0; c < off + (int)subtree_end[i]; c++) F[(6 * i + q) * N + c] = 0.0;
    for (int i = n_bodies - 1; i > 0; i--) {
        const int p = (int)parent[i], row = off + i - 1, end = off + (int)subtree_end[i];
        const double *Rot = R + 9 * i, *u = U + 6 * i, *t_i = t + 3 * i, *J = axes + 6 * row;
        double *W = U_base + 6 * i, *F_i = F + 6 * i * N, *F_p = F + 6 * p * N, *M_row = M_inv + row * N;
        for (int q = 0; q < 3; q++) {
            W[q] = Rot[3 * q] * u[0] + Rot[3 * q + 1] * u[1] + Rot[3 * q + 2] * u[2];
            W[3 + q] = Rot[3 * q] * u[3] + Rot[3 * q + 1] * u[4] + Rot[3 * q + 2] * u[5];
        }
        W[3] += t_i[1] * W[2] - t_i[2] * W[1];
        W[4] += t_i[2] * W[0] - t_i[0] * W[2];
        W[5] += t_i[0] * W[1] - t_i[1] * W[0];
        const double inverse_pivot = 1.0 / D[i];
        M_row[row] = inverse_pivot;
        for (int c = row; c < end; c++)
            M_row[c] -= (J[0] * F_i[c] + J[1] * F_i[N + c] + J[2] * F_i[2 * N + c] + J[3] * F_i[3 * N + c]
                         + J[4] * F_i[4 * N + c] + J[5] * F_i[5 * N + c]) * inverse_pivot;
        for (int q = 0; q < 6; q++) {
            const double factor = W[q];
            for (int c = row; c < end; c++) F_p[q * N + c] += F_i[q * N + c] + M_row[c] * factor;
        }
    }
    if (floating_base) {
        double LU[36], pivots[6], x[6];
        for (int k = 0; k < 36; k++) LU[k] = I_A0[k];
        rl_factor6(LU, pivots);
        for (int c = 0; c < N; c++) {
            for (int q = 0; q < 6; q++) x[q] = c < 6 ? (q == c ? 1.0 : 0.0) : -F[q * N + c];
            rl_solve6(LU, pivots, x);
            for (int q = 0; q < 6; q++) P[q * N + c] = M_inv[q * N + c] = x[q];
        }
    } else
        for (int k = 0; k < 6 * N; k++) P[k] = 0.0;
    for (int i = 1; i < n_bodies; i++) {
        const int p = (int)parent[i], row = off + i - 1;
        const double *W = U_base + 6 * i, *P_p = P + 6 * p * N;
        double *P_i = P + 6 * i * N, *M_row = M_inv + row * N;
        const double inverse_pivot = 1.0 / D[i];
        for (int c = row; c < N; c++)
            M_row[c] -= (W[0] * P_p[c] + W[1] * P_p[N + c] + W[2] * P_p[2 * N + c] + W[3] * P_p[3 * N + c]
                         + W[4] * P_p[4 * N + c] + W[5] * P_p[5 * N + c]) * inverse_pivot;
        for (int q = 0; q < 6; q++) {
            const double factor = axes[6 * row + q];
            for (int c = row; c < N; c++) P_i[q * N + c] = P_p[q * N + c] + M_row[c] * factor;
        }
    }
    for (int r = 0; r < N; r++)
        for (int c = r + 1; c < N; c++) M_inv[c * N + r] = M_inv[r * N + c];
}

/* spatial.cross_force_into: out = v x* f */
static void rl_cross_force(const double *v, const double *f, double *out) {
    out[0] = v[4] * f[2] - v[5] * f[1];
    out[1] = v[5] * f[0] - v[3] * f[2];
    out[2] = v[3] * f[1] - v[4] * f[0];
    out[3] = v[4] * f[5] - v[5] * f[4] + v[1] * f[2] - v[2] * f[1];
    out[4] = v[5] * f[3] - v[3] * f[5] + v[2] * f[0] - v[0] * f[2];
    out[5] = v[3] * f[4] - v[4] * f[3] + v[0] * f[1] - v[1] * f[0];
}

/* base_frame_derivatives._column_dots_into: out[d stride] = Y_J[d].x (+ Y_rate_J[d].y, moving) for d in [start, end) */
static void rl_column_dots(const double *Y_J, const double *Y_rate_J, const double *x, const double *y, int start,
                           int end, int moving, double *out, int stride) {
    for (int d = start; d < end; d++) {
        const double *a = Y_J + 6 * d, *g = Y_rate_J + 6 * d;
        const double dot = a[0] * x[0] + a[1] * x[1] + a[2] * x[2] + a[3] * x[3] + a[4] * x[4] + a[5] * x[5];
        out[d * stride] = moving ? dot + (g[0] * y[0] + g[1] * y[1] + g[2] * y[2] + g[3] * y[3] + g[4] * y[4]
                                          + g[5] * y[5]) : dot;
    }
}

/* base_frame_derivatives._row_dots_into: out[e] = x.columns[e] for e in [start, end) */
static void rl_row_dots(const double *x, const double *columns, int start, int end, double *out) {
    for (int e = start; e < end; e++) {
        const double *g = columns + 6 * e;
        out[e] = g[0] * x[0] + g[1] * x[1] + g[2] * x[2] + g[3] * x[3] + g[4] * x[4] + g[5] * x[5];
    }
}

/* base_frame_derivatives.base_frame_backward_into on a block b: its inputs parent, subtree_end (n_bodies
   each, as doubles), the axes J, dv/ds, da/ds, da/dr (N, 6 each), then f (n_bodies, 6), Y, Y_rate
   (n_bodies, 6, 6), which it accumulates in place; its outputs after them: Y J, Y_rate J, df/ds, df/dr (N, 6
   each) and the derivatives (N, 2N).  A loop, not a trace, for the work that grows as n times the depth. */
RL_LOOPS static void rl_base_frame_backward(double *b, int n_bodies, int N, int floating_base, int moving,
                                            int rigid, int with_base_pose, int velocity_columns) {
    const int off = floating_base ? 6 : 0, first = rigid ? 3 : 0, last = floating_base ? 0 : 1;
    const double *parent = b, *subtree_end = b + n_bodies, *J = b + 2 * n_bodies, *dv_dq = J + 6 * N;
    const double *da_dq = dv_dq + 6 * N, *da_dr = da_dq + 6 * N;
    double *f = b + 2 * n_bodies + 24 * N, *Y = f + 6 * n_bodies, *Y_rate = Y + 36 * n_bodies;
    double *Y_J = Y_rate + 36 * n_bodies, *Y_rate_J = Y_J + 6 * N, *df_dq = Y_rate_J + 6 * N, *df_dr = df_dq + 6 * N;
    double *derivatives = df_dr + 6 * N;
    for (int k = 0; k < 2 * N * N; k++) derivatives[k] = 0.0;
    for (int i = n_bodies - 1; i >= last; i--) {
        const int own_start = i == 0 ? 0 : off + i - 1, own_end = i == 0 ? 6 : off + i;
        const int end = off + (int)subtree_end[i];
        const double *Y_i = Y + 36 * i, *Y_dot = Y_rate + 36 * i;
        for (int c = own_start; c < own_end; c++) {
            const double *J_c = J + 6 * c, *dv = dv_dq + 6 * c, *da_q = da_dq + 6 * c, *da_r = da_dr + 6 * c;
            for (int row = 0; row < 6; row++) {
                const double *Y_row = Y_i + 6 * row, *Y_dot_row = Y_dot + 6 * row;
                double YJ = 0.0, Y_daq = 0.0, Y_dar = 0.0;
                for (int k = 0; k < 6; k++) {
                    YJ += Y_row[k] * J_c[k];
                    Y_daq += Y_row[k] * da_q[k];
                    Y_dar += Y_row[k] * da_r[k];
                }
                Y_J[6 * c + row] = YJ;
                if (!moving) {
                    Y_rate_J[6 * c + row] = 0.0, df_dq[6 * c + row] = Y_daq, df_dr[6 * c + row] = Y_dar;
                    continue;
                }
                double Ydot_dv = 0.0, Ydot_J = 0.0, Ydot_T_J = 0.0;
                for (int k = first; k < 6; k++) {
                    Ydot_dv += Y_dot_row[k] * dv[k];
                    Ydot_J += Y_dot_row[k] * J_c[k];
                }
                for (int k = 0; k < (row >= first ? 6 : 0); k++) Ydot_T_J += Y_dot[6 * k + row] * J_c[k];
                Y_rate_J[6 * c + row] = Ydot_T_J;
                df_dq[6 * c + row] = Ydot_dv + Y_daq;
                df_dr[6 * c + row] = Ydot_J + Y_dar;
            }
        }
        const int position_columns = with_base_pose || i > 0;
        for (int c = own_start; c < own_end; c++) {
            if (position_columns)
                rl_column_dots(Y_J, Y_rate_J, da_dq + 6 * c, dv_dq + 6 * c, own_end, end, moving, derivatives + c, 2 * N);
            rl_row_dots(J + 6 * c, df_dq, position_columns ? own_start : own_end, end, derivatives + 2 * N * c);
            if (velocity_columns) {
                rl_column_dots(Y_J, Y_rate_J, da_dr + 6 * c, J + 6 * c, own_end, end, moving, derivatives + N + c, 2 * N);
                rl_row_dots(J + 6 * c, df_dr, own_start, end, derivatives + 2 * N * c + N);
            }
        }
        for (int c = own_start; c < own_end; c++) {
            double turned[6];
            rl_cross_force(J + 6 * c, f + 6 * i, turned);
            for (int row = 0; row < 6; row++) df_dq[6 * c + row] += turned[row];
        }
        if (i > 0) {
            const int p = (int)parent[i];
            for (int row = 0; row < 6; row++) {
                f[6 * p + row] += f[6 * i + row];
                for (int col = 0; col < 6; col++) Y[36 * p + 6 * row + col] += Y_i[6 * row + col];
                for (int col = moving ? first : 6; col < 6; col++) Y_rate[36 * p + 6 * row + col] += Y_dot[6 * row + col];
            }
        }
    }
}
