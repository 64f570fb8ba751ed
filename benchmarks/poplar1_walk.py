"""The poplar1 walk of one batch in one process: N devices' sealed reports (Zipf-distributed strings), then a
leader and a helper (``collector.kinds.poplar1``) walk every level; prints the seal time, the walk time and the
heavy hitters found against the planted counts.

    python benchmarks/poplar1_walk.py --devices 1000 --bits 32 --stride 4 --threshold 0.01
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.poplar1_population import campaign, parser, summary, zipf_values  # noqa: E402
from client_sdk import distributed  # noqa: E402
from client_sdk.distributed_messages import parse_payload  # noqa: E402
from client_sdk.spec import Spec  # noqa: E402
from client_sdk.vdaf.hpke import HpkeKeyPair, open_sealed  # noqa: E402
from collector.kinds.poplar1 import Poplar1Aggregator  # noqa: E402
from collector.kinds.poplar1.walk import walk  # noqa: E402
from estimators.kinds.poplar1 import estimate_walk  # noqa: E402

BATCH = "2026-12-02"


def main() -> None:
    args = parser(__doc__, 1000).parse_args()
    spec = Spec.from_dict(campaign(args))
    values = zipf_values(args)
    leader_keys, helper_keys = HpkeKeyPair.generate(1), HpkeKeyPair.generate(2)
    started = time.perf_counter()
    reports = []
    for value in values:
        report_id = str(uuid.uuid4())
        payload = parse_payload(distributed.seal_report(spec, value.encode(), leader_keys.config,
                                                        helper_keys.config, report_id=report_id, batch=BATCH))
        reports.append((uuid.UUID(report_id).bytes, payload.public_share, payload.leader_ciphertext,
                        payload.helper_ciphertext))
    sealed = time.perf_counter() - started

    def opener(keys: HpkeKeyPair, role: int):
        def open_share(report_id: bytes, public: bytes, ciphertext: bytes) -> bytes:
            info = distributed.input_share_info(spec, str(uuid.UUID(bytes=report_id)), role, public, BATCH)
            return open_sealed(keys, ciphertext, info)
        return open_share

    verify_key = os.urandom(32)
    leader = Poplar1Aggregator(spec, verify_key, 0, opener(leader_keys, distributed.LEADER))
    helper = Poplar1Aggregator(spec, verify_key, 1, opener(helper_keys, distributed.HELPER))
    started = time.perf_counter()
    release = walk(leader, helper, BATCH, reports)
    walked = time.perf_counter() - started
    result = estimate_walk(spec, release.to_dict())
    print(summary(args, values, result["heavy_hitters"], len(release.levels),
                  sum(len(level.prefixes) for level in release.levels), f"seal {sealed:.1f} s, walk {walked:.1f} s"))


if __name__ == "__main__":
    main()
