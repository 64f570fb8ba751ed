"""CPU cost of reading and validating a report batch in the collector, without the database write.

For batches of 1000 reports (OUE d = 32, OLH d = 1000, RAPPOR k = 128) it times, in process CPU seconds (less
sensitive than wall time to other load on the machine): the item count that bounds parsing work
(``body.count_items``), ``json.loads``, and the per-report validation with the aggregate
(``reports._validate`` and ``reports._aggregate``, i.e. everything ``POST /v1/reports`` does before its
transaction).  The campaigns live in a temporary SQLite file that is removed at the end.

    python benchmarks/ingest_validation.py --repeat 20
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SPECS = [
    {"name": "oue32", "mechanism": "oue", "epsilon": 1.0, "domain": [f"v{i}" for i in range(32)]},
    {"name": "olh1000", "mechanism": "olh", "epsilon": 2.0, "domain": [f"v{i}" for i in range(1000)]},
    {"name": "rappor128", "mechanism": "rappor", "rappor": {"k": 128, "h": 2, "m": 64}},
]


def validate_and_aggregate(reports: Any, batch: list) -> None:
    "What POST /v1/reports does between parsing and its transaction (also on the code before issue 8)"
    groups, rejected, _ = reports._validate(batch)
    if hasattr(reports, "_aggregate"):
        for group, indices in groups:
            reports._aggregate(group, indices, rejected)
    else:
        import estimators

        for group in groups:
            group.payload_texts = [reports._dumps(p) for p in group.payloads]
            group.aggregate = estimators.aggregate(group.campaign.spec, group.payloads)
    assert not rejected, rejected[:1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1000, help="reports per batch")
    parser.add_argument("--repeat", type=int, default=20, help="timed repetitions per campaign (best is shown)")
    args = parser.parse_args()

    import client_sdk
    from collector import create_app
    from collector.api import body, reports
    from collector.storage import Storage

    with tempfile.TemporaryDirectory() as directory:
        db_path = Path(directory) / "bench.db"
        app = create_app({"DATABASE": str(db_path), "RATE_LIMIT": 0})
        with Storage(db_path) as storage, warnings.catch_warnings():
            storage.migrate()
            specs = [storage.create_campaign(spec, "2024-01-01")[0].spec for spec in SPECS]
        print(f"ingest validation: batches of {args.batch} reports, best of {args.repeat}, process CPU time")
        print(f"{'campaign':>10} {'count_items ms':>15} {'json.loads ms':>14} {'validate+aggregate ms':>22} "
              f"{'us/report':>10}")
        for spec in specs:
            rng = client_sdk.DeterministicRandom(7)
            mechanism = client_sdk.mechanism_from_spec(spec, rng=rng)
            values = list(spec.domain) if spec.domain else [f"https://e{i}.example/" for i in range(50)]
            batch = [{"report_id": str(uuid.uuid4()), "campaign": spec.name, "fingerprint": spec.fingerprint,
                      "payload": mechanism.perturb(values[i % len(values)])} for i in range(args.batch)]
            raw = json.dumps({"reports": batch}).encode()
            best = [float("inf")] * 3
            with app.test_request_context("/v1/reports", method="POST"):
                for _ in range(args.repeat):
                    started = time.process_time()
                    if hasattr(body, "count_items"):  # absent before issue 8: run on older code for comparison
                        body.count_items(raw)
                    counted = time.process_time()
                    parsed = json.loads(raw)
                    loaded = time.process_time()
                    validate_and_aggregate(reports, parsed["reports"])
                    validated = time.process_time()
                    best = [min(b, t) for b, t in zip(best, (counted - started, loaded - counted,
                                                             validated - loaded))]
            total = sum(best)
            print(f"{spec.name:>10} {best[0] * 1e3:15.2f} {best[1] * 1e3:14.2f} {best[2] * 1e3:22.2f} "
                  f"{total / args.batch * 1e6:10.1f}")


if __name__ == "__main__":
    main()
