"""Columnar report batches: the payloads of many reports as numpy arrays, one layout per mechanism.

``parse_payloads`` turns JSON payloads (as the SDK sends them; already checked by the collector) into a batch;
``ReportBatch.to_payloads`` goes back.  The simulator produces batches directly, so a million simulated reports
never become Python objects unless asked to.

=========  ============================================================
grr        index (int64)
sue, oue   bits: packed big-endian bit rows, uint8 (n, ceil(d/8))
olh        a, b (uint64 seed halves), y (int64)
hadamard   column (int64), bit (int64)
laplace    code (int64)
duchi      code (int64, 0/1)
piecewise  code (int64)
hybrid     branch (int64, 0 Duchi / 1 Piecewise), code (int64)
rappor     cohort (int64), bits: packed uint8 (n, ceil(k/8))
=========  ============================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from client_sdk.spec import Spec


@dataclass
class ReportBatch:
    "The payloads of ``n`` reports for one spec, column by column"

    mechanism: str
    n: int
    columns: dict[str, np.ndarray] = field(default_factory=dict)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def to_payloads(self) -> list:
        "The JSON payloads, exactly as the SDK would send them"
        c = self.columns
        m = self.mechanism
        if m in ("grr", "laplace", "duchi", "piecewise"):
            return c["code" if m != "grr" else "index"].tolist()
        if m in ("sue", "oue"):
            return [row.tobytes().hex() for row in c["bits"]]
        if m == "olh":
            seeds = np.stack([c["a"], c["b"]], axis=1).astype(">u8")
            return [[row.tobytes().hex(), y] for row, y in zip(seeds, c["y"].tolist())]
        if m == "hadamard":
            return [list(pair) for pair in zip(c["column"].tolist(), c["bit"].tolist())]
        if m == "hybrid":
            return [list(pair) for pair in zip(c["branch"].tolist(), c["code"].tolist())]
        if m == "rappor":
            return [{"cohort": cohort, "bits": row.tobytes().hex()}
                    for cohort, row in zip(c["cohort"].tolist(), c["bits"])]
        raise ValueError(f"unknown mechanism {m!r}")


def parse_payloads(spec: Spec, payloads: Sequence[Any]) -> ReportBatch:
    "A batch from JSON payloads that passed ``check_payload``"
    m = spec.mechanism
    n = len(payloads)
    if m == "grr":
        return ReportBatch(m, n, {"index": np.asarray(payloads, dtype=np.int64).reshape(n)})
    if m in ("laplace", "duchi", "piecewise"):
        return ReportBatch(m, n, {"code": np.asarray(payloads, dtype=np.int64).reshape(n)})
    if m in ("sue", "oue"):
        return ReportBatch(m, n, {"bits": _hex_rows(payloads, (spec.domain_size + 7) // 8)})
    if m == "olh":
        seeds = np.frombuffer(bytes.fromhex("".join(p[0] for p in payloads)), dtype=">u8").reshape(n, 2)
        return ReportBatch(m, n, {
            "a": seeds[:, 0].astype(np.uint64), "b": seeds[:, 1].astype(np.uint64),
            "y": np.asarray([p[1] for p in payloads], dtype=np.int64).reshape(n),
        })
    if m in ("hadamard", "hybrid"):
        pairs = np.asarray(payloads, dtype=np.int64).reshape(n, 2)
        names = ("column", "bit") if m == "hadamard" else ("branch", "code")
        return ReportBatch(m, n, {names[0]: pairs[:, 0].copy(), names[1]: pairs[:, 1].copy()})
    if m == "rappor":
        return ReportBatch(m, n, {
            "cohort": np.asarray([p["cohort"] for p in payloads], dtype=np.int64).reshape(n),
            "bits": _hex_rows([p["bits"] for p in payloads], (spec.rappor.k + 7) // 8),
        })
    raise ValueError(f"unknown mechanism {m!r}")


def _hex_rows(texts: Sequence[str], nbytes: int) -> np.ndarray:
    return np.frombuffer(bytes.fromhex("".join(texts)), dtype=np.uint8).reshape(len(texts), nbytes)
