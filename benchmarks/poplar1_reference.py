"""The draft's reference Poplar1 (draft-irtf-cfrg-vdaf-20, ``poc/vdaf_poc``), timed in its own interpreter for
``benchmarks/poplar1.py --reference DIR``; not meant to be run by hand.

    PYTHON benchmarks/poplar1_reference.py DIR    # DIR: a checkout of the draft's repository, or its poc/ directory

It needs Python >= 3.12 and pycryptodomex (what the reference itself needs) and imports nothing of this project.
It answers one JSON line per request on stdin: first ``{"ready": ...}`` (or ``{"error": ...}`` and exit), then

* ``{"op": "shard", "bits": b, "ctx": hex, "measurements": [[bit, ...], ...]}``: each measurement sharded with a
  fresh nonce and randomness and encoded as on the wire, answered with the CPU seconds per report;
* ``{"op": "verify", "bits": b, "ctx": hex, "verify_key": hex, "agg_param": hex, "reports": [[nonce, public,
  [share, share]]]}`` (hex, as the caller's implementation encoded them): each report decoded and verified by both
  aggregators at the aggregation parameter (``verify_init`` on each share, both rounds of messages and
  ``verify_next``), answered with the CPU seconds per report and the sum of the output shares (``unshard``), so the
  caller can check that the reference accepts its reports and counts them alike.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path


def load(directory: str):
    "The reference's module vdaf_poplar1, imported from DIR or DIR/poc"
    if sys.version_info < (3, 12):
        raise RuntimeError(f"the reference needs Python >= 3.12; {sys.executable} is {sys.version.split()[0]}")
    root = Path(directory)
    poc = root / "poc" if (root / "poc" / "vdaf_poc").is_dir() else root
    if not (poc / "vdaf_poc" / "vdaf_poplar1.py").is_file():
        raise RuntimeError(f"{directory}: no poc/vdaf_poc/vdaf_poplar1.py (a checkout of the draft's repository?)")
    sys.path.insert(0, str(poc))
    import vdaf_poc.vdaf_poplar1 as poplar1  # noqa: PLC0415 (only once the path is known)

    return poplar1


def shard(vdaf, ctx: bytes, measurements: list) -> float:
    start = time.process_time()
    for measurement in measurements:
        public, shares = vdaf.shard(ctx, tuple(measurement), os.urandom(vdaf.NONCE_SIZE), os.urandom(vdaf.RAND_SIZE))
        vdaf.encode_public_share(public)
        [vdaf.encode_input_share(share) for share in shares]
    return (time.process_time() - start) / len(measurements)


def verify(vdaf, verify_key: bytes, ctx: bytes, agg_param_hex: str, reports: list) -> tuple[float, list[int]]:
    decoded = [(bytes.fromhex(nonce), bytes.fromhex(public), [bytes.fromhex(s) for s in shares])
               for nonce, public, shares in reports]
    start = time.process_time()
    agg_param = vdaf.decode_agg_param(bytes.fromhex(agg_param_hex))
    agg_shares = [vdaf.agg_init(agg_param) for _ in range(2)]
    for nonce, public, shares in decoded:
        public_share = vdaf.decode_public_share(public)
        pairs = [vdaf.verify_init(verify_key, ctx, agg_id, agg_param, nonce, public_share,
                                  vdaf.decode_input_share(agg_id, share)) for agg_id, share in enumerate(shares)]
        message = vdaf.verifier_shares_to_message(ctx, agg_param, [share for _, share in pairs])
        pairs = [vdaf.verify_next(ctx, state, message) for state, _ in pairs]
        message = vdaf.verifier_shares_to_message(ctx, agg_param, [share for _, share in pairs])
        for agg_id, (state, _) in enumerate(pairs):
            agg_shares[agg_id] = vdaf.agg_update(agg_param, agg_shares[agg_id], vdaf.verify_next(ctx, state, message))
    seconds = (time.process_time() - start) / len(decoded)
    return seconds, vdaf.unshard(agg_param, agg_shares, len(decoded))


def answer(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    try:
        poplar1 = load(sys.argv[1])
        import Cryptodome  # noqa: PLC0415

        answer({"ready": True, "python": sys.version.split()[0], "pycryptodomex": Cryptodome.__version__})
    except Exception as exc:  # noqa: BLE001 (reported to the caller, which prints why the reference did not run)
        answer({"error": f"{type(exc).__name__}: {exc}"})
        return
    for line in sys.stdin:
        request = json.loads(line)
        try:
            vdaf = poplar1.Poplar1(request["bits"])
            ctx = bytes.fromhex(request["ctx"])
            if request["op"] == "shard":
                answer({"seconds": shard(vdaf, ctx, request["measurements"])})
            else:
                seconds, counts = verify(vdaf, bytes.fromhex(request["verify_key"]), ctx, request["agg_param"],
                                         request["reports"])
                answer({"seconds": seconds, "counts": counts})
        except Exception as exc:  # noqa: BLE001
            answer({"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()})


if __name__ == "__main__":
    main()
