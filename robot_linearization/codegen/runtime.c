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

/* spatial.lu_solve6: x = M^-1 x in place */
static void rl_solve6(const double *LU, const double *pivots, double *x) {
    for (int k = 0; k < 6; k++) {
        int p = (int)pivots[k];
        double swap = x[k]; x[k] = x[p]; x[p] = swap;
    }
    for (int r = 0; r < 6; r++)
        for (int c = 0; c < r; c++) x[r] -= LU[6 * r + c] * x[c];
    for (int r = 5; r >= 0; r--) {
        for (int c = r + 1; c < 6; c++) x[r] -= LU[6 * r + c] * x[c];
        x[r] /= LU[6 * r + r];
    }
}

/* compiled.finite_sum */
static double rl_finite_sum(const double *x, long n) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    long end = n - n % 4;
    for (long j = 0; j < end; j += 4) { s0 += x[j]; s1 += x[j + 1]; s2 += x[j + 2]; s3 += x[j + 3]; }
    for (long j = end; j < n; j++) s0 += x[j];
    return (s0 + s1) + (s2 + s3);
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
