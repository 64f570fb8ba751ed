"""Validity circuits of draft-irtf-cfrg-vdaf-20 ("Variants"): Count, Sum, SumVec, Histogram, MultihotCountVec;
and HistogramWithCoins (ours, not in the draft) for distributed coin-flip noise.

Constants added inside a circuit are scaled by 1/num_shares, so that the circuit can run on additive shares and the
shares of its output add up to the output on the measurement.
"""

from __future__ import annotations

import secrets
from operator import mul

from .field import Field
from .flp import Gadget, Mul, ParallelSum, PolyEval, Valid


def encode_range_checked_int(field: type[Field], value: int, max_measurement: int) -> list[int]:
    """Bits of `value` under weights 1, 2, 4, ..., 2**(bits-2), and a last weight making the weights sum to
    max_measurement: any 0/1 vector decodes into [0, max_measurement] and every value there has an encoding."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("measurement must be an int")
    if not 0 <= value <= max_measurement:
        raise ValueError(f"measurement must be in [0, {max_measurement}], got {value}")
    bits = max_measurement.bit_length()
    rest_all_ones = 2 ** (bits - 1) - 1
    last_weight = max_measurement - rest_all_ones
    if value <= rest_all_ones:
        rest, last = value, 0
    else:
        rest, last = value - last_weight, 1
    return [(rest >> i) & 1 for i in range(bits - 1)] + [last]


def decode_range_checked_int(field: type[Field], encoded: list[int], max_measurement: int) -> int:
    "Weighted sum of the encoded bits; linear, so it also maps shares to shares"
    bits = max_measurement.bit_length()
    last_weight = max_measurement - (2 ** (bits - 1) - 1)
    total = sum((1 << i) * b for i, b in enumerate(encoded[:bits - 1])) + last_weight * encoded[bits - 1]
    return total % field.MODULUS


def _range_check_chunks(valid: Valid, gadget: Gadget, calls: int, chunk_length: int, meas: list[int],
                        joint_rand: list[int], num_shares: int) -> int:
    """sum over chunks i of ParallelSum(Mul)(r_i**j * x_j, x_j - 1/num_shares for j in chunk i): zero for a 0/1
    vector, non-zero with high probability otherwise (r_i is joint randomness)"""
    field = valid.field
    p = field.MODULUS
    shares_inv = pow(num_shares, -1, p)
    total = 0
    for i in range(calls):
        r = joint_rand[i]
        chunk = meas[i * chunk_length:(i + 1) * chunk_length]
        if len(chunk) < chunk_length:
            chunk = chunk + [0] * (chunk_length - len(chunk))
        r_powers = [r] * chunk_length
        for j in range(1, chunk_length):
            r_powers[j] = r_powers[j - 1] * r % p
        inputs = [0] * (2 * chunk_length)
        inputs[0::2] = [v % p for v in map(mul, r_powers, chunk)]
        inputs[1::2] = [(x - shares_inv) % p for x in chunk]
        total += gadget.eval(field, inputs)
    return total % p


def _check_chunk_length(chunk_length: int) -> None:
    if isinstance(chunk_length, bool) or not isinstance(chunk_length, int) or chunk_length < 1:
        raise ValueError(f"chunk_length must be a positive int, got {chunk_length!r}")


def _check_positive(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


class Count(Valid):
    "A measurement in {0, 1}: x * x - x == 0"

    MEAS_LEN = 1
    JOINT_RAND_LEN = 0
    OUTPUT_LEN = 1
    EVAL_OUTPUT_LEN = 1

    def __init__(self, field: type[Field]) -> None:
        self.field = field
        self.GADGETS = [Mul()]
        self.GADGET_CALLS = [1]

    def encode(self, measurement: object) -> list[int]:
        if measurement not in (0, 1) or not isinstance(measurement, int):
            raise ValueError(f"a Count measurement is 0 or 1 (or a bool), got {measurement!r}")
        return [int(measurement)]

    def eval(self, meas: list[int], joint_rand: list[int], num_shares: int) -> list[int]:
        squared = self.GADGETS[0].eval(self.field, [meas[0], meas[0]])
        return [(squared - meas[0]) % self.field.MODULUS]

    def truncate(self, meas: list[int]) -> list[int]:
        return meas

    def decode(self, output: list[int], num_measurements: int) -> int:
        return output[0]


class Sum(Valid):
    "An integer in [0, max_measurement], encoded as range-checked bits, each checked by PolyEval(x**2 - x)"

    JOINT_RAND_LEN = 0
    OUTPUT_LEN = 1

    def __init__(self, field: type[Field], max_measurement: int) -> None:
        _check_positive("max_measurement", max_measurement)
        if max_measurement >= field.MODULUS:
            raise ValueError("max_measurement must be smaller than the field modulus")
        self.field = field
        self.max_measurement = max_measurement
        self.bits = max_measurement.bit_length()
        self.GADGETS = [PolyEval([0, -1, 1], self.bits)]
        self.GADGET_CALLS = [self.bits]
        self.MEAS_LEN = self.bits
        self.EVAL_OUTPUT_LEN = self.bits

    def encode(self, measurement: object) -> list[int]:
        return encode_range_checked_int(self.field, measurement, self.max_measurement)  # type: ignore[arg-type]

    def eval(self, meas: list[int], joint_rand: list[int], num_shares: int) -> list[int]:
        return [self.GADGETS[0].eval(self.field, [b]) for b in meas]

    def truncate(self, meas: list[int]) -> list[int]:
        return [decode_range_checked_int(self.field, meas, self.max_measurement)]

    def decode(self, output: list[int], num_measurements: int) -> int:
        return output[0]


class SumVec(Valid):
    "`length` integers, each in [0, max_measurement]; all their range-checked bits checked by one ParallelSum(Mul)"

    EVAL_OUTPUT_LEN = 1

    def __init__(self, field: type[Field], length: int, max_measurement: int, chunk_length: int) -> None:
        _check_positive("length", length)
        _check_positive("max_measurement", max_measurement)
        _check_chunk_length(chunk_length)
        self.field = field
        self.length = length
        self.max_measurement = max_measurement
        self.bits = max_measurement.bit_length()
        self.chunk_length = chunk_length
        self.GADGETS = [ParallelSum(Mul(), chunk_length)]
        self.GADGET_CALLS = [(length * self.bits + chunk_length - 1) // chunk_length]
        self.MEAS_LEN = length * self.bits
        self.OUTPUT_LEN = length
        self.JOINT_RAND_LEN = self.GADGET_CALLS[0]

    def encode(self, measurement: object) -> list[int]:
        if not isinstance(measurement, (list, tuple)) or len(measurement) != self.length:
            raise ValueError(f"a SumVec measurement is a list of {self.length} ints")
        encoded: list[int] = []
        for value in measurement:
            encoded += encode_range_checked_int(self.field, value, self.max_measurement)
        return encoded

    def eval(self, meas: list[int], joint_rand: list[int], num_shares: int) -> list[int]:
        return [_range_check_chunks(self, self.GADGETS[0], self.GADGET_CALLS[0], self.chunk_length, meas,
                                    joint_rand, num_shares)]

    def truncate(self, meas: list[int]) -> list[int]:
        b = self.bits
        return [decode_range_checked_int(self.field, meas[i * b:(i + 1) * b], self.max_measurement)
                for i in range(self.length)]

    def decode(self, output: list[int], num_measurements: int) -> list[int]:
        return list(output)


class Histogram(Valid):
    "A one-hot vector of `length` buckets: every entry 0/1 (ParallelSum(Mul)) and the entries sum to 1"

    EVAL_OUTPUT_LEN = 2

    def __init__(self, field: type[Field], length: int, chunk_length: int) -> None:
        _check_positive("length", length)
        _check_chunk_length(chunk_length)
        self.field = field
        self.length = length
        self.chunk_length = chunk_length
        self.GADGETS = [ParallelSum(Mul(), chunk_length)]
        self.GADGET_CALLS = [(length + chunk_length - 1) // chunk_length]
        self.MEAS_LEN = length
        self.OUTPUT_LEN = length
        self.JOINT_RAND_LEN = self.GADGET_CALLS[0]

    def encode(self, measurement: object) -> list[int]:
        if isinstance(measurement, bool) or not isinstance(measurement, int) or not 0 <= measurement < self.length:
            raise ValueError(f"a Histogram measurement is a bucket index in [0, {self.length}), got {measurement!r}")
        encoded = [0] * self.length
        encoded[measurement] = 1
        return encoded

    def eval(self, meas: list[int], joint_rand: list[int], num_shares: int) -> list[int]:
        p = self.field.MODULUS
        range_check = _range_check_chunks(self, self.GADGETS[0], self.GADGET_CALLS[0], self.chunk_length, meas,
                                          joint_rand, num_shares)
        sum_check = (sum(meas) - pow(num_shares, -1, p)) % p
        return [range_check, sum_check]

    def truncate(self, meas: list[int]) -> list[int]:
        return meas

    def decode(self, output: list[int], num_measurements: int) -> list[int]:
        return list(output)


class MultihotCountVec(Valid):
    "A 0/1 vector of `length` entries with at most `max_weight` ones (the weight is sent range-checked)"

    EVAL_OUTPUT_LEN = 2

    def __init__(self, field: type[Field], length: int, max_weight: int, chunk_length: int) -> None:
        _check_positive("length", length)
        _check_positive("max_weight", max_weight)
        _check_chunk_length(chunk_length)
        if max_weight > length:
            raise ValueError("max_weight must be at most length")
        if field.MODULUS <= length:
            raise ValueError("length is too large for the current field size")
        self.field = field
        self.length = length
        self.max_weight = max_weight
        self.chunk_length = chunk_length
        self.bits_for_weight = max_weight.bit_length()
        self.GADGETS = [ParallelSum(Mul(), chunk_length)]
        self.GADGET_CALLS = [(length + self.bits_for_weight + chunk_length - 1) // chunk_length]
        self.MEAS_LEN = length + self.bits_for_weight
        self.OUTPUT_LEN = length
        self.JOINT_RAND_LEN = self.GADGET_CALLS[0]

    def encode(self, measurement: object) -> list[int]:
        if not isinstance(measurement, (list, tuple)) or len(measurement) != self.length:
            raise ValueError(f"a MultihotCountVec measurement is a list of {self.length} bools")
        if any(x not in (0, 1) for x in measurement):
            raise ValueError("MultihotCountVec entries must be bools (or 0/1)")
        count_vec = [int(x) for x in measurement]
        return count_vec + encode_range_checked_int(self.field, sum(count_vec), self.max_weight)

    def eval(self, meas: list[int], joint_rand: list[int], num_shares: int) -> list[int]:
        p = self.field.MODULUS
        range_check = _range_check_chunks(self, self.GADGETS[0], self.GADGET_CALLS[0], self.chunk_length, meas,
                                          joint_rand, num_shares)
        weight = sum(meas[:self.length])
        reported = decode_range_checked_int(self.field, meas[self.length:], self.max_weight)
        return [range_check, (weight - reported) % p]

    def truncate(self, meas: list[int]) -> list[int]:
        return meas[:self.length]

    def decode(self, output: list[int], num_measurements: int) -> list[int]:
        return list(output)


class HistogramWithCoins(Valid):
    """A Histogram followed by ``coins`` coin bits per bucket, every entry proven to be 0/1 ("Our Data, Ourselves").

    Encoding: the one-hot vector of ``length`` buckets, then the coins of bucket 0, of bucket 1, ...  The circuit
    is Histogram's over the whole vector (ParallelSum(Mul) range check on every entry) with the sum check on the
    buckets only.  Not a variant of draft-irtf-cfrg-vdaf-20: its output keeps every coin.  The aggregators verify
    the coins and aggregate the histogram part only (``estimators.distributed.noise``: each aggregator adds its own
    Binomial noise; coins a device sent could be chosen against the noise by an aggregator injecting reports)."""

    EVAL_OUTPUT_LEN = 2

    def __init__(self, field: type[Field], length: int, coins: int, chunk_length: int) -> None:
        _check_positive("length", length)
        _check_positive("coins", coins)
        _check_chunk_length(chunk_length)
        self.field = field
        self.length = length
        self.coins = coins
        self.chunk_length = chunk_length
        self.MEAS_LEN = length * (1 + coins)
        self.GADGETS = [ParallelSum(Mul(), chunk_length)]
        self.GADGET_CALLS = [(self.MEAS_LEN + chunk_length - 1) // chunk_length]
        self.OUTPUT_LEN = self.MEAS_LEN
        self.JOINT_RAND_LEN = self.GADGET_CALLS[0]

    def encode(self, measurement: object) -> list[int]:
        """A bucket index (the coins then come from the OS CSPRNG), or (bucket, coin bits) with length * coins
        bits: the device's choice does not matter, the aggregators' masks make every coin fair"""
        if isinstance(measurement, tuple) and len(measurement) == 2:
            bucket, coin_bits = measurement
            if not isinstance(coin_bits, (list, tuple)) or len(coin_bits) != self.length * self.coins:
                raise ValueError(f"coin bits must be a list of {self.length * self.coins} bits")
            if any(bit not in (0, 1) or isinstance(bit, float) for bit in coin_bits):
                raise ValueError("coin bits must be 0 or 1")
            coins = [int(bit) for bit in coin_bits]
        else:
            bucket = measurement
            coins = [secrets.randbits(1) for _ in range(self.length * self.coins)]
        if isinstance(bucket, bool) or not isinstance(bucket, int) or not 0 <= bucket < self.length:
            raise ValueError(f"a histogram bucket is an index in [0, {self.length}), got {bucket!r}")
        encoded = [0] * self.length
        encoded[bucket] = 1
        return encoded + coins

    def eval(self, meas: list[int], joint_rand: list[int], num_shares: int) -> list[int]:
        p = self.field.MODULUS
        range_check = _range_check_chunks(self, self.GADGETS[0], self.GADGET_CALLS[0], self.chunk_length, meas,
                                          joint_rand, num_shares)
        sum_check = (sum(meas[:self.length]) - pow(num_shares, -1, p)) % p
        return [range_check, sum_check]

    def truncate(self, meas: list[int]) -> list[int]:
        return meas

    def decode(self, output: list[int], num_measurements: int) -> list[int]:
        return list(output)
