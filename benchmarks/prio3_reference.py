"""The draft's reference Prio3 (draft-irtf-cfrg-vdaf-20, ``poc/vdaf_poc``), timed in its own interpreter for
``benchmarks/prio3.py --reference DIR``; not meant to be run by hand.

    PYTHON benchmarks/prio3_reference.py DIR    # DIR: a checkout of the draft's repository, or its poc/ directory

It needs Python >= 3.12 and pycryptodomex (what the reference itself needs) and imports nothing of this project.
It answers one JSON line per request on stdin: first ``{"ready": ...}`` (or ``{"error": ...}`` and exit), then

* ``{"op": "shard", "vdaf": [...], "measurement": m, "count": n}``: n reports sharded with fresh nonces and
  randomness and encoded as on the wire, answered with the CPU seconds per report;
* ``{"op": "verify", "vdaf": [...], "verify_key": hex, "ctx": hex, "reports": [[nonce, public, [share, share]]]}``
  (hex, as the caller's implementation encoded them): each report decoded and verified by both aggregators
  (``verify_init`` on each share, ``verifier_shares_to_message``, ``verify_next``), answered with the CPU seconds
  per report; a report the reference rejects is an error.

``vdaf`` is ``["Count"]``, ``["Sum", max_measurement]`` or ``["Histogram", length, chunk_length]``.  CPU time is
this process's ``time.process_time``, as the caller measures its own.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path


def load(directory: str):
    "The reference's module vdaf_prio3, imported from DIR or DIR/poc"
    if sys.version_info < (3, 12):
        raise RuntimeError(f"the reference needs Python >= 3.12; {sys.executable} is {sys.version.split()[0]}")
    root = Path(directory)
    poc = root / "poc" if (root / "poc" / "vdaf_poc").is_dir() else root
    if not (poc / "vdaf_poc" / "vdaf_prio3.py").is_file():
        raise RuntimeError(f"{directory}: no poc/vdaf_poc/vdaf_prio3.py (a checkout of the draft's repository?)")
    sys.path.insert(0, str(poc))
    import vdaf_poc.vdaf_prio3 as prio3  # noqa: PLC0415 (only once the path is known)

    return prio3


def make_vdaf(prio3, spec: list):
    kind, *params = spec
    return {"Count": prio3.Prio3Count, "Sum": prio3.Prio3Sum, "Histogram": prio3.Prio3Histogram}[kind](2, *params)


def shard(vdaf, ctx: bytes, measurement, count: int) -> float:
    start = time.process_time()
    for _ in range(count):
        public, shares = vdaf.shard(ctx, measurement, os.urandom(vdaf.NONCE_SIZE), os.urandom(vdaf.RAND_SIZE))
        vdaf.encode_public_share(public)
        [vdaf.encode_input_share(share) for share in shares]
    return (time.process_time() - start) / count


def verify(vdaf, verify_key: bytes, ctx: bytes, reports: list) -> float:
    decoded = [(bytes.fromhex(nonce), bytes.fromhex(public), [bytes.fromhex(s) for s in shares])
               for nonce, public, shares in reports]
    start = time.process_time()
    for nonce, public, shares in decoded:
        pairs = [vdaf.verify_init(verify_key, ctx, agg_id, None, nonce, vdaf.decode_public_share(public),
                                  vdaf.decode_input_share(agg_id, share)) for agg_id, share in enumerate(shares)]
        message = vdaf.verifier_shares_to_message(ctx, None, [verifier_share for _, verifier_share in pairs])
        for state, _ in pairs:
            vdaf.verify_next(ctx, state, message)
    return (time.process_time() - start) / len(decoded)


def answer(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    try:
        prio3 = load(sys.argv[1])
        import Cryptodome  # noqa: PLC0415

        answer({"ready": True, "python": sys.version.split()[0], "pycryptodomex": Cryptodome.__version__})
    except Exception as exc:  # noqa: BLE001 (reported to the caller, which prints why the reference did not run)
        answer({"error": f"{type(exc).__name__}: {exc}"})
        return
    for line in sys.stdin:
        request = json.loads(line)
        try:
            vdaf = make_vdaf(prio3, request["vdaf"])
            if request["op"] == "shard":
                seconds = shard(vdaf, bytes.fromhex(request["ctx"]), request["measurement"], request["count"])
            else:
                seconds = verify(vdaf, bytes.fromhex(request["verify_key"]), bytes.fromhex(request["ctx"]),
                                 request["reports"])
            answer({"seconds": seconds})
        except Exception as exc:  # noqa: BLE001
            answer({"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()})


if __name__ == "__main__":
    main()
