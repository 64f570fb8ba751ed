"""The quantiles kind's parameters and its tree (standard-library side)."""

import math
import random

import numpy as np
import pytest

from client_sdk.errors import SpecError
from client_sdk.kinds.quantiles import (
    FIELDS,
    adjoint,
    best_branching,
    bucket_boundaries,
    consistent_levels,
    json_schema,
    parse_params,
    range_variance_factor,
    tree_height,
)
from client_sdk.kinds.quantiles.params import PRIO3_FIELDS
from estimators.kinds.quantiles import inference

UNIFORM = {"range": [0, 100], "buckets": 64}


@pytest.mark.parametrize(("data", "field"), [
    ({}, "range"),
    ({"range": [5, 1], "buckets": 8}, "range"),
    ({"range": [0, 1]}, "buckets"),
    ({"range": [0, 1], "buckets": 1}, "buckets"),
    ({"range": [0, 1], "buckets": 5000}, "buckets"),
    ({"range": [0, 1], "buckets": True}, "buckets"),
    ({"range": [0, 1], "buckets": 8, "growth": 2}, "growth"),
    ({"range": [0, 1], "buckets": 8, "bucketing": "log"}, "bucketing"),
    ({"range": [0, 10], "bucketing": "geometric", "growth": 2}, "range"),
    ({"range": [1, 10], "bucketing": "geometric"}, "growth"),
    ({"range": [1, 10], "bucketing": "geometric", "growth": 1.0}, "growth"),
    ({"range": [1, 10], "bucketing": "geometric", "growth": 2, "buckets": 4}, "buckets"),
    ({"range": [1, 1e15], "bucketing": "geometric", "growth": 1.000001}, "growth"),
    ({"range": [0, 1], "buckets": 8, "oracle": "grr"}, "oracle"),
    ({"range": [0, 1], "buckets": 8, "branching": 1}, "branching"),
    ({"range": [0, 1], "buckets": 8, "branching": "best"}, "branching"),
    ({"range": [0, 1], "buckets": 4096, "branching": 15}, "branching"),  # pads to 50,625 leaves
])
def test_errors_name_the_field(data, field):
    with pytest.raises(SpecError) as caught:
        parse_params(data, 1.0)
    assert caught.value.field == field


def test_uniform_params_and_identity():
    params = parse_params({**UNIFORM, "branching": 4, "oracle": "hadamard"}, 2.0)
    assert (params.buckets, params.branching, params.height, params.leaves) == (64, 4, 3, 64)
    assert params.identity() == {"range": [0.0, 100.0], "bucketing": "uniform", "buckets": 64, "branching": 4,
                                 "oracle": "hadamard"}
    assert set(params.identity()) <= FIELDS
    assert params.boundaries[0] == 0 and params.boundaries[-1] == 100 and len(params.boundaries) == 65


def test_auto_resolves_to_the_planners_branching_and_is_fingerprinted_resolved():
    params = parse_params({**UNIFORM, "buckets": 1024}, 1.0)
    assert params.branching == best_branching(1024) == 4
    assert params.branching_requested == "auto" and params.to_dict()["branching"] == "auto"
    assert params.identity()["branching"] == 4


def test_geometric_boundaries_by_repeated_multiplication():
    params = parse_params({"range": [1, 1000], "bucketing": "geometric", "growth": 2}, 1.0)
    assert params.buckets == 10  # 2**10 = 1024 >= 1000
    assert params.boundaries == (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000)
    assert bucket_boundaries(1.0, 10.0, "uniform", 4, None) == (1.0, 3.25, 5.5, 7.75, 10.0)


def test_the_schema_describes_every_field():
    schema = json_schema()
    assert set(schema["properties"]) == FIELDS | PRIO3_FIELDS
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid(UNIFORM)
    assert validator.is_valid({"range": [1, 9], "bucketing": "geometric", "growth": 1.5})
    assert not validator.is_valid({"range": [1, 9], "bucketing": "geometric", "growth": 1.5, "buckets": 3})
    assert not validator.is_valid({"range": [1, 9]})
    distributed = {**UNIFORM, "trust": "distributed", "noise": "gaussian"}
    distributed.pop("branching", None)
    distributed.pop("oracle", None)
    assert validator.is_valid(distributed) and not validator.is_valid({**UNIFORM, "noise": "gaussian"})
    assert not validator.is_valid({**distributed, "branching": 4}) and not validator.is_valid({**distributed,
                                                                                               "noise": "coins"})


def random_levels(rng, branching, height):
    return [[rng.gauss(0, 1) for _ in range(branching**level)] for level in range(1, height + 1)]


@pytest.mark.parametrize(("branching", "height"), [(2, 4), (3, 3), (4, 2), (5, 1)])
def test_python_and_numpy_inference_agree_and_the_adjoint_is_the_transpose(branching, height):
    rng = random.Random(branching)
    precisions = [rng.uniform(0.5, 2) for _ in range(height)]
    levels = random_levels(rng, branching, height)
    python = consistent_levels(levels, precisions, branching)
    numpy = inference.consistent_levels([np.array(level) for level in levels], precisions, branching)
    for a, b in zip(python, numpy):
        assert np.allclose(a, b)
    for level in python:  # consistency: the root is 1 and every parent the sum of its children
        assert math.isclose(sum(level), 1.0)
    for parent, children in zip(python, python[1:]):
        assert np.allclose(parent, np.asarray(children).reshape(-1, branching).sum(axis=1))
    query = [rng.gauss(0, 1) for _ in range(branching**height)]
    linear = consistent_levels(levels, precisions, branching, root=0.0)[-1]
    weights = adjoint(query, precisions, branching)
    assert math.isclose(sum(a * x for a, x in zip(query, linear)),
                        sum(w * y for wl, yl in zip(weights, levels) for w, y in zip(wl, yl)), abs_tol=1e-9)
    assert all(np.allclose(a, b) for a, b in zip(weights, inference.adjoint(np.array(query), precisions, branching)))


def test_the_inference_is_the_weighted_least_squares_fit():
    "Hay et al.'s two passes equal generalised least squares of the leaves given the level estimates and the root"
    branching, height = 3, 2
    rng = random.Random(7)
    precisions = [2.0, 0.5]
    levels = random_levels(rng, branching, height)
    leaves = branching**height
    design = np.vstack([np.kron(np.eye(branching**level), np.ones(branching ** (height - level)))
                        for level in range(1, height + 1)])
    weights = np.concatenate([np.full(branching**level, precisions[level - 1]) for level in range(1, height + 1)])
    y = np.concatenate(levels)
    # minimise (y - A x)' W (y - A x) subject to 1'x = 1 (KKT system)
    kkt = np.block([[design.T @ (weights[:, None] * design), np.ones((leaves, 1))],
                    [np.ones((1, leaves)), np.zeros((1, 1))]])
    solution = np.linalg.solve(kkt, np.concatenate([design.T @ (weights * y), [1.0]]))[:leaves]
    assert np.allclose(consistent_levels(levels, precisions, branching)[-1], solution)


@pytest.mark.parametrize(("buckets", "branching"), [(16, 2), (27, 3), (50, 4), (64, 8)])
def test_the_average_range_variance_equals_the_exact_covariance(buckets, branching):
    "The common-ancestor shortcut against W' Sigma W over every boundary (noise only, equal level sizes)"
    height = tree_height(buckets, branching)
    diagonals = [np.full(branching**level, float(height)) for level in range(1, height + 1)]
    covariance = inference.LevelCovariance(diagonals, [np.zeros_like(d) for d in diagonals], [1] * height)
    c = inference.cdf_covariance(covariance, [1.0 / height] * height, branching, branching**height, buckets)
    pairs = [(lo, hi) for hi in range(buckets + 1) for lo in range(hi)]
    exact = np.mean([c[lo, lo] + c[hi, hi] - 2 * c[lo, hi] for lo, hi in pairs])
    assert math.isclose(range_variance_factor(buckets, branching), exact, rel_tol=1e-9)
