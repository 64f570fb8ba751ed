"""The hierarchical histogram's tree and its branching factor, in the standard library (a device resolves "auto").

The tree over the buckets has branching factor B and height h = ceil(log_B buckets): level l (1..h) has B**l
nodes, the root (level 0, frequency 1) is known and not reported.  Each report goes to one level chosen uniformly,
so each level holds about n/h reports and its node estimates have variance about V h / n each (V the oracle's
per-report variance factor, the same at every level for OLH and Hadamard, which do not depend on the domain).

Constrained inference (Hay, Rastogi, Miklau, Suciu, "Boosting the accuracy of differentially private histograms
through consistency", VLDB 2010) is the weighted least-squares fit of the tree: a bottom-up pass combining each
node's own estimate with the sum of its children's by inverse variance, then a top-down pass spreading each
parent's residual equally over its children (:func:`consistent_leaves`; the numpy version that estimates use is
``estimators.kinds.quantiles.inference``).  It is linear in the level estimates; :func:`adjoint` is its transpose.

With equal variance per level the leaves' covariance after inference depends only on the level of two leaves'
lowest common ancestor (the tree's symmetries), so the average variance over all ranges [l, r) of the real
buckets takes one adjoint and one forward pass (:func:`range_variance_factor`).  :func:`best_branching` picks
the B minimising it: Kulkarni, Cormode, Srivastava ("Answering range queries under local differential privacy",
VLDB 2019) choose B the same way, from the average range-query variance of the consistent tree.  n and epsilon
only scale that variance (V / n), so the choice depends on the number of buckets alone.
"""

from __future__ import annotations

MAX_LEAVES = 8192  # buckets padded to B**h: bounds the estimator's covariance (leaves x buckets doubles)


def tree_height(buckets: int, branching: int) -> int:
    "The smallest h >= 1 with branching**h >= buckets (integer arithmetic)"
    height, size = 1, branching
    while size < buckets:
        size *= branching
        height += 1
    return height


def _group_sums(values: list[float], branching: int) -> list[float]:
    return [sum(values[i:i + branching]) for i in range(0, len(values), branching)]


def consistent_levels(levels: list[list[float]], precisions: list[float], branching: int,
                      root: float = 1.0) -> list[list[float]]:
    """The consistent tree (levels 1..h) from the level estimates ``levels[l-1]`` with per-node precisions
    (inverse variances, 0 for a level without reports) ``precisions[l-1]``, and the known root"""
    height = len(levels)
    z = [list(level) for level in levels]
    precision_z = precisions[-1]
    for index in range(height - 2, -1, -1):
        children = _group_sums(z[index + 1], branching)
        from_children = precision_z / branching
        precision_z = precisions[index] + from_children
        alpha = precisions[index] / precision_z if precision_z > 0 else 0.0
        z[index] = [alpha * own + (1 - alpha) * below for own, below in zip(z[index], children)]
    out, parents = [], [root]
    for index in range(height):
        sums = _group_sums(z[index], branching)
        level = [value + (parents[i // branching] - sums[i // branching]) / branching
                 for i, value in enumerate(z[index])]
        out.append(level)
        parents = level
    return out


def bottom_up_weights(precisions: list[float], branching: int) -> list[float]:
    "alpha_l for l = 1..h: the weight of a node's own estimate against its children's sum (alpha_h = 1)"
    height = len(precisions)
    weights = [1.0] * height
    precision_z = precisions[-1]
    for index in range(height - 2, -1, -1):
        precision_z = precisions[index] + precision_z / branching
        weights[index] = precisions[index] / precision_z if precision_z > 0 else 0.0
    return weights


def adjoint(leaf_gradient: list[float], precisions: list[float], branching: int) -> list[list[float]]:
    "The transpose of the (linear part of) :func:`consistent_levels`' leaves: d(a . leaves) / d(level estimates)"
    height = len(precisions)
    weights = bottom_up_weights(precisions, branching)
    from_top: list[list[float]] = [[] for _ in range(height)]
    gradient = list(leaf_gradient)
    for index in range(height - 1, -1, -1):
        sums = _group_sums(gradient, branching)
        from_top[index] = [g - sums[i // branching] / branching for i, g in enumerate(gradient)]
        gradient = [s / branching for s in sums]
    out, carried = [], [0.0] * branching
    for index in range(height):
        total = [g + carried[i // branching] if index else g for i, g in enumerate(from_top[index])]
        out.append([weights[index] * t for t in total])
        carried = [(1 - weights[index]) * t for t in total]
    return out


def lca_covariances(branching: int, height: int) -> list[float]:
    """c_k, k = 0..h: the covariance of two leaves whose lowest common ancestor is at level k (c_h: a leaf's
    variance), for equal level sizes and unit per-report variance (V / n = 1: node variance h at every level)"""
    precisions = [1.0 / height] * height
    leaves = branching ** height
    gradient = adjoint([1.0] + [0.0] * (leaves - 1), precisions, branching)
    scaled = [[height * g for g in level] for level in gradient]
    column = consistent_levels(scaled, precisions, branching, root=0.0)[-1]  # Cov(x, x_0) = L Sigma L^T e_0
    return [column[branching ** (height - k - 1)] for k in range(height)] + [column[0]]


def range_variance_factor(buckets: int, branching: int) -> float:
    """The average variance of a range query [l, r) over all 0 <= l < r <= buckets, in units of V / n.

    With C the covariance of the estimated CDF at the buckets+1 boundaries, the average of C_ll + C_rr - 2 C_lr
    over the pairs is ((buckets+1) trace C - 1'C1) / pairs; both sums count leaf pairs by the level of their
    common ancestor (module docstring)."""
    height = tree_height(buckets, branching)
    c = lca_covariances(branching, height)
    trace = 0.0
    for j in range(buckets + 1):
        previous = 0.0
        for k in range(height, -1, -1):
            size = branching ** (height - k)
            pairs = (j // size) * size * size + (j % size) ** 2  # ordered leaf pairs below j with LCA level >= k
            trace += c[k] * (pairs - previous)
            previous = pairs
    previous_level, total = 0.0, 0.0
    for k in range(height, -1, -1):
        size = branching ** (height - k)
        # the sum over level-k nodes of (sum of w_u over their real leaves)^2, w_u = buckets - u
        squares = 0.0
        for start in range(0, buckets, size):
            stop = min(start + size, buckets)
            count = stop - start
            block = count * buckets - (start + stop - 1) * count / 2
            squares += block * block
        total += c[k] * (squares - previous_level)
        previous_level = squares
    pairs_count = buckets * (buckets + 1) / 2
    return ((buckets + 1) * trace - total) / pairs_count


def best_branching(buckets: int, max_branching: int = 16) -> int:
    "The branching factor in 2..max_branching with the smallest average range-query variance (ties: the smaller)"
    best, best_variance = 2, float("inf")
    for branching in range(2, max_branching + 1):
        if branching ** tree_height(buckets, branching) > MAX_LEAVES:
            continue
        variance = range_variance_factor(buckets, branching)
        if variance < best_variance * (1 - 1e-12):
            best, best_variance = branching, variance
    return best
