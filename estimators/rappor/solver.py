"""Non-negative least squares with a total-mass cap and an optional L1 penalty, for the RAPPOR decoder.

    minimise  0.5 * ||A x - b||^2 + penalty . x   subject to  x >= 0,  sum(x) <= total

(with x >= 0 the L1 norm is linear, so the non-negative LASSO is the same problem with ``penalty > 0``).
Solved by FISTA (Beck & Teboulle, SIAM J. Imaging Sci. 2009) with adaptive restart (O'Donoghue & Candes,
Found. Comput. Math. 2015); the projection onto {x >= 0, sum(x) <= total} is a clip or, when the clip exceeds
the cap, the sort-based simplex projection (Duchi, Shalev-Shwartz, Singer, Chandra, ICML 2008).  A final
active-set step solves the normal equations on the support exactly and keeps that solution when it satisfies the
KKT conditions.  Only matrix-vector products are needed, so a sparse A with 10^4 columns is fine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from ..postprocess import project_simplex

if TYPE_CHECKING:  # scipy loads only when a decode runs, not with the estimators
    import scipy.sparse as sp

Matrix: TypeAlias = "np.ndarray | sp.csc_matrix"
GRAM_MAX_COLUMNS = 2000  # below this, iterate on the dense Gram matrix: one M x M product per step
POLISH_MAX_SUPPORT = 3000


def project_capped_simplex(values: np.ndarray, total: float) -> np.ndarray:
    "Euclidean projection onto {x >= 0, sum(x) <= total}"
    clipped = np.maximum(values, 0.0)
    if clipped.sum() <= total:
        return clipped
    return project_simplex(values, total)  # the cap binds: the projection lies on {sum x = total}


class LeastSquaresProblem:
    "The quadratic 0.5 ||A x - b||^2 through A^T A x - A^T b, with A^T A precomputed when it is small"

    def __init__(self, design: Matrix, target: np.ndarray) -> None:
        self.design = design
        self.columns = design.shape[1]
        self.correlation = np.asarray(design.T @ target).ravel()
        self.gram: np.ndarray | None = None
        if self.columns <= GRAM_MAX_COLUMNS:
            self.gram = _dense(design.T @ design)
        self.lipschitz = self._largest_eigenvalue() * 1.02 + 1e-12

    def with_target(self, target: np.ndarray) -> LeastSquaresProblem:
        "The same design with another right-hand side, reusing the Gram matrix and the step size"
        other = object.__new__(LeastSquaresProblem)
        other.design, other.columns, other.gram, other.lipschitz = (
            self.design,
            self.columns,
            self.gram,
            self.lipschitz,
        )
        other.correlation = np.asarray(self.design.T @ target).ravel()
        return other

    def gram_times(self, x: np.ndarray) -> np.ndarray:
        if self.gram is not None:
            return self.gram @ x
        return np.asarray(self.design.T @ (self.design @ x)).ravel()

    def gradient(self, x: np.ndarray, penalty: np.ndarray | float) -> np.ndarray:
        return self.gram_times(x) - self.correlation + penalty

    def _largest_eigenvalue(self, iterations: int = 500, tolerance: float = 1e-7) -> float:
        "Power iteration on A^T A from the all-ones vector (A >= 0, so it starts on the Perron side)"
        vector = np.ones(self.columns) / np.sqrt(max(self.columns, 1))
        value = 0.0
        for _ in range(iterations):
            product = self.gram_times(vector)
            norm = float(np.linalg.norm(product))
            if norm == 0.0:
                return 0.0
            vector = product / norm
            if abs(norm - value) <= tolerance * norm:
                return norm
            value = norm
        return value


def solve_nonnegative(
    problem: LeastSquaresProblem,
    *,
    penalty: np.ndarray | float = 0.0,
    total: float = 1.0,
    start: np.ndarray | None = None,
    max_iterations: int = 20000,
    tolerance: float = 1e-10,
) -> np.ndarray:
    "The minimiser of 0.5||Ax - b||^2 + penalty.x over {x >= 0, sum(x) <= total} (FISTA, then an exact polish)"
    if problem.columns == 0:
        return np.zeros(0)
    if problem.lipschitz <= 0:
        return np.zeros(problem.columns)
    step = 1.0 / problem.lipschitz
    x = project_capped_simplex(
        np.zeros(problem.columns) if start is None else np.asarray(start, float), total
    )
    y, momentum = x.copy(), 1.0
    for _ in range(max_iterations):
        x_next = project_capped_simplex(y - step * problem.gradient(y, penalty), total)
        change = x_next - x
        if np.max(np.abs(change)) <= tolerance:
            x = x_next
            break
        if np.dot(y - x_next, change) > 0:  # momentum points uphill: restart it
            y, momentum = x_next.copy(), 1.0
        else:
            momentum_next = (1 + np.sqrt(1 + 4 * momentum * momentum)) / 2
            y = x_next + ((momentum - 1) / momentum_next) * change
            momentum = momentum_next
        x = x_next
    return _polish(problem, x, penalty, total)


def _polish(
    problem: LeastSquaresProblem, x: np.ndarray, penalty: np.ndarray | float, total: float
) -> np.ndarray:
    "Solve the normal equations on the support of ``x``; keep the result if it is feasible and optimal"
    support = np.flatnonzero(x > 0)
    if len(support) == 0 or len(support) > POLISH_MAX_SUPPORT:
        return x
    penalty_vector = np.broadcast_to(np.asarray(penalty, dtype=float), x.shape)
    if problem.gram is not None:
        gram = problem.gram[np.ix_(support, support)]
    else:
        columns = problem.design[:, support]
        gram = _dense(columns.T @ columns)
    try:
        solution = np.linalg.solve(gram, problem.correlation[support] - penalty_vector[support])
    except np.linalg.LinAlgError:
        return x
    if np.any(solution <= 0) or solution.sum() > total:
        return x
    candidate = np.zeros_like(x)
    candidate[support] = solution
    gradient = problem.gradient(candidate, penalty)
    scale = max(1.0, float(np.max(np.abs(problem.correlation))))
    if np.min(gradient) < -1e-9 * scale:  # a column outside the support would still lower the objective
        return x
    return candidate


def _dense(matrix: Any) -> np.ndarray:
    "A numpy array from a dense or sparse product"
    return np.asarray(matrix.toarray() if hasattr(matrix, "toarray") else matrix)
