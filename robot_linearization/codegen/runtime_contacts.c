/* constrained_dynamics.cholesky_solve_into: B (m, c) <- (L L^T)^-1 B in place */
RL_LOOPS static void rl_cholesky_solve(const double *restrict L, double *restrict B, int m, int c) {
    for (int i = 0; i < m; i++) {
        double *row = B + i * c;
        for (int k = 0; k < i; k++) {
            double factor = L[i * m + k]; const double *Bk = B + k * c;
            for (int j = 0; j < c; j++) row[j] -= factor * Bk[j];
        }
        for (int j = 0; j < c; j++) row[j] /= L[i * m + i];
    }
    for (int i = m - 1; i >= 0; i--) {
        double *row = B + i * c;
        for (int k = i + 1; k < m; k++) {
            double factor = L[k * m + i]; const double *Bk = B + k * c;
            for (int j = 0; j < c; j++) row[j] -= factor * Bk[j];
        }
        for (int j = 0; j < c; j++) row[j] /= L[i * m + i];
    }
}

/* constrained_dynamics.contact_forces_into: JM_inv (m, N), L (m, m), forces (m), accelerations (N) from J (m, N),
   M_inv (N, N), the free accelerations (N) and the drift (m); 0 when J M^-1 J^T is singular, else 1 */
RL_LOOPS static double rl_contact_forces(const double *restrict J, const double *restrict M_inv,
                                const double *restrict free_accelerations, const double *restrict drift,
                                double *restrict JM_inv, double *restrict L, double *restrict forces,
                                double *restrict accelerations, int m, int N) {
    for (int i = 0; i < m * N; i++) JM_inv[i] = 0.0;
    for (int i = 0; i < m; i++)
        for (int k = 0; k < N; k++) {
            double factor = J[i * N + k];
            if (factor != 0.0)
                for (int j = 0; j < N; j++) JM_inv[i * N + j] += factor * M_inv[k * N + j];
        }
    for (int i = 0; i < m * m; i++) L[i] = 0.0;
    double scale = 1e-300;
    for (int i = 0; i < m; i++) {
        double acc = 0.0;
        for (int k = 0; k < N; k++) acc += JM_inv[i * N + k] * J[i * N + k];
        if (fabs(acc) > scale) scale = fabs(acc);
    }
    for (int i = 0; i < m; i++)
        for (int j = 0; j <= i; j++) {
            double acc = 0.0;
            for (int k = 0; k < N; k++) acc += JM_inv[i * N + k] * J[j * N + k];
            for (int k = 0; k < j; k++) acc -= L[i * m + k] * L[j * m + k];
            if (i == j) {
                if (!(acc > DEGENERACY_TOLERANCE * scale)) return 0.0;
                L[i * m + i] = sqrt(acc);
            } else L[i * m + j] = acc / L[j * m + j];
        }
    for (int i = 0; i < m; i++) {
        double acc = drift[i];
        for (int k = 0; k < N; k++) acc += J[i * N + k] * free_accelerations[k];
        forces[i] = -acc;
    }
    rl_cholesky_solve(L, forces, m, 1);
    for (int k = 0; k < N; k++) accelerations[k] = free_accelerations[k];
    for (int i = 0; i < m; i++)
        for (int k = 0; k < N; k++) accelerations[k] += JM_inv[i * N + k] * forces[i];
    return 1.0;
}
