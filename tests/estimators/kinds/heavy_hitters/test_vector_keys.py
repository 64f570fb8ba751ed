"""The decoder's vectorised keys and candidates are the device's, element for element: ``prefix_keys`` against
``encoding.prefix_key``, ``olh_hash_into`` against ``hashing.olh_hash``, ``extensions`` against the padded
sequences of itertools.product, for an alphabet and for UTF-8 bytes (symbols up to 256)."""

import itertools

import numpy as np
import pytest

from client_sdk.kinds.heavy_hitters import params_from_dict
from client_sdk.kinds.heavy_hitters.encoding import END, is_padded, olh_seeds, prefix_key
from client_sdk.mechanisms.hashing import olh_hash
from estimators.kinds.heavy_hitters.pem import extensions
from estimators.kinds.heavy_hitters.simulate import olh_hash_into, padded_rows, prefix_keys


@pytest.mark.parametrize("length, high", [(0, 1), (1, 28), (4, 28), (6, 257)])
def test_prefix_keys_are_the_devices(length, high):
    symbols = np.random.default_rng(length).integers(0, high, size=(300, length))
    assert prefix_keys(symbols).tolist() == [prefix_key(tuple(row)) for row in symbols.tolist()]


def test_olh_hash_into_is_the_devices():
    keys = np.random.default_rng(2).integers(0, 1 << 32, size=200, dtype=np.uint64)
    seeds = olh_seeds(7)
    hashed = olh_hash_into(np.array(seeds, dtype=np.uint64), keys, 21)
    assert hashed.tolist() == [[olh_hash(a, b, int(key), 21) for key in keys] for a, b in seeds]


def test_padded_rows_is_is_padded():
    grid = np.array(list(itertools.product(range(3), repeat=4)))
    assert padded_rows(grid).tolist() == [is_padded(row) for row in grid.tolist()]


@pytest.mark.parametrize("spec", [{"max_length": 4, "alphabet": "abc", "segment_length": 2},
                                  {"max_length": 2, "segment_length": 1}])
def test_extensions_are_the_padded_products_in_order(spec):
    params = params_from_dict({**spec, "algorithm": "pem"}, 2.0)
    prefixes = [(), (1, 2), (3, END), (2, 1)] if params.alphabet else [(), (5,), (END,)]
    for prefix in prefixes:
        added = spec["segment_length"]
        length = len(prefix) + added
        tails = itertools.product(range(params.symbol_count), repeat=added)
        expected = ([prefix + (END,) * added] if prefix and prefix[-1] == END else
                    [prefix + tail for tail in tails if is_padded(prefix + tail)])
        found = extensions(params, np.array([prefix], dtype=np.int64).reshape(1, len(prefix)), length)
        assert [tuple(row) for row in found.tolist()] == expected
