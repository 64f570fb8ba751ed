"""Constrained inference over the level estimates (numpy), its transpose, and the exact covariance after it.

The same two passes as ``client_sdk.kinds.quantiles.tree.consistent_levels`` (Hay et al. 2010 weighted
averaging, then mean consistency from the known root), vectorised over any trailing axes, so that the transpose
(:func:`adjoint`) of many queries runs at once.  The estimate after inference is ``x = L y + c`` with y the stacked
level estimates; the covariance of any linear query a'x is ``(L'a)' Sigma (L'a)`` with Sigma the level
estimates' covariance, block diagonal over levels (disjoint reports).

Sigma of one level (n_l reports, population target, devices a sample of a population): per report, the de-biased
indicator X_i = (1[report supports i] - q*) / (p* - q*) has Var X_i = pi_i (1 - pi_i) / (p* - q*)^2 with
pi_i = q* + f_i (p* - q*), and Cov(X_i, X_j) = -f_i f_j for i != j (OLH: a pairwise-independent hash puts i and
j on the reported value independently; Hadamard: distinct rows of H are orthogonal).  So
Sigma_l = (diag(pi (1 - pi) / (p* - q*)^2 + f^2) - f f') / n_l, plugged in with the consistent tree's f.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def group_sums(values: np.ndarray, branching: int) -> np.ndarray:
    "Sums of consecutive groups of ``branching`` rows"
    return values.reshape(values.shape[0] // branching, branching, *values.shape[1:]).sum(axis=1)


def bottom_up_weights(precisions: Sequence[float], branching: int) -> np.ndarray:
    "alpha_l: the weight of a node's own estimate against its children's sum (alpha_h = 1; 0 without reports)"
    height = len(precisions)
    weights = np.ones(height)
    precision_z = precisions[-1]
    for index in range(height - 2, -1, -1):
        precision_z = precisions[index] + precision_z / branching
        weights[index] = precisions[index] / precision_z if precision_z > 0 else 0.0
    return weights


def consistent_levels(levels: Sequence[np.ndarray], precisions: Sequence[float], branching: int,
                      root: float = 1.0) -> list[np.ndarray]:
    "The consistent tree's levels 1..h (each of shape (B**l, ...)) from the level estimates"
    weights = bottom_up_weights(precisions, branching)
    height = len(levels)
    z = [np.asarray(level, dtype=np.float64) for level in levels]
    for index in range(height - 2, -1, -1):
        z[index] = weights[index] * z[index] + (1 - weights[index]) * group_sums(z[index + 1], branching)
    out: list[np.ndarray] = []
    parents: np.ndarray = np.full((1, *z[0].shape[1:]), root)
    for index in range(height):
        residual = parents - group_sums(z[index], branching)
        level = z[index] + np.repeat(residual, branching, axis=0) / branching
        out.append(level)
        parents = level
    return out


def adjoint(leaf_gradient: np.ndarray, precisions: Sequence[float], branching: int) -> list[np.ndarray]:
    "L' a for leaf queries a (shape (leaves, ...)): each query's weights on the level estimates, per level"
    weights = bottom_up_weights(precisions, branching)
    height = len(precisions)
    from_top: list[np.ndarray] = [np.empty(0)] * height
    gradient = np.asarray(leaf_gradient, dtype=np.float64)
    for index in range(height - 1, -1, -1):
        sums = group_sums(gradient, branching)
        from_top[index] = gradient - np.repeat(sums, branching, axis=0) / branching
        gradient = sums / branching
    out: list[np.ndarray] = []
    carried: np.ndarray | None = None
    for index in range(height):
        total = from_top[index] if carried is None else from_top[index] + np.repeat(carried, branching, axis=0)
        out.append(weights[index] * total)
        carried = (1 - weights[index]) * total
    return out


class LevelCovariance:
    "Sigma_l of each level's node estimates (module docstring), as a diagonal and a rank-one part"

    def __init__(self, diagonals: Sequence[np.ndarray], frequencies: Sequence[np.ndarray],
                 sizes: Sequence[int]) -> None:
        self.diagonals = [np.asarray(d, dtype=np.float64) for d in diagonals]  # diag(...) / n_l
        self.frequencies = [np.asarray(f, dtype=np.float64) for f in frequencies]
        self.sizes = [int(n) for n in sizes]

    @classmethod
    def of(cls, frequencies: Sequence[np.ndarray], sizes: Sequence[int],
           support: Sequence[tuple[float, float]]) -> LevelCovariance:
        "From the levels' true (or plugged-in) frequencies, report counts and oracles' (p*, q*)"
        diagonals, clipped = [], []
        for f, n, (p, q) in zip(frequencies, sizes, support):
            f = np.clip(np.asarray(f, dtype=np.float64), 0.0, 1.0)
            pi = q + f * (p - q)
            diagonals.append((pi * (1 - pi) / (p - q) ** 2 + f * f) / n if n else np.zeros_like(f))
            clipped.append(f)
        return cls(diagonals, clipped, sizes)

    def quadratic(self, weights: Sequence[np.ndarray]) -> np.ndarray:
        "W' Sigma W for per-level weights of shape (B**l, k): the k x k covariance of k linear queries"
        total: np.ndarray | None = None
        for w, diagonal, f, n in zip(weights, self.diagonals, self.frequencies, self.sizes):
            if not n:
                continue
            rank_one = f @ w
            block = (w * diagonal[:, None]).T @ w - np.outer(rank_one, rank_one) / n
            total = block if total is None else total + block
        assert total is not None, "no level has reports"
        return total


def prefix_queries(leaves: int, buckets: int) -> np.ndarray:
    "The (leaves, buckets+1) matrix whose column j sums the leaves below boundary j (the CDF there)"
    return (np.arange(leaves)[:, None] < np.arange(buckets + 1)[None, :]).astype(np.float64)


def cdf_covariance(covariance: LevelCovariance, precisions: Sequence[float], branching: int, leaves: int,
                   buckets: int) -> np.ndarray:
    "The exact covariance of the consistent CDF at the buckets+1 boundaries"
    return covariance.quadratic(adjoint(prefix_queries(leaves, buckets), precisions, branching))


def level_noise_draws(covariance: LevelCovariance, draws: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``draws`` exact N(0, Sigma_l) draws of each level's estimation error, shape (B**l, draws): Sigma_l is a
    diagonal D minus f f' / n_l, so D^(1/2) (I - gamma u u') z with u = D^(-1/2) f / |D^(-1/2) f| and
    2 gamma - gamma^2 = |D^(-1/2) f|^2 / n_l has that covariance (no factorisation of a matrix)"""
    out = []
    for diagonal, f, n in zip(covariance.diagonals, covariance.frequencies, covariance.sizes):
        normal = rng.standard_normal((len(diagonal), draws))
        if not n:
            out.append(np.zeros_like(normal))
            continue
        root = np.sqrt(diagonal)
        direction = np.divide(f, root, out=np.zeros_like(f), where=root > 0)
        length = float(direction @ direction)
        if length > 0:
            gamma = 1 - np.sqrt(max(1 - length / n, 0.0))
            unit = direction / np.sqrt(length)
            normal -= gamma * np.outer(unit, unit @ normal)
        out.append(root[:, None] * normal)
    return out


def cdf_noise_draws(level_noise: Sequence[np.ndarray], precisions: Sequence[float], branching: int,
                    buckets: int) -> np.ndarray:
    "The consistent CDF's error at the buckets+1 boundaries, (buckets+1, draws), for draws of the levels' errors"
    leaves = consistent_levels(level_noise, precisions, branching, root=0.0)[-1][:buckets]
    return np.concatenate([np.zeros((1, leaves.shape[1])), np.cumsum(leaves, axis=0)])
