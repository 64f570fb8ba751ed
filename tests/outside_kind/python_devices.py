"""Step 5, Python devices: ``python -m tests.outside_kind.python_devices`` with the kind's device module named in
``LDP_TELEMETRY_KINDS``; stdin {url, key, campaign, values, state_dir}.  One Client per value records it (twice: the
kind's own device state caps a device at ``per_device`` reports) and flushes; each device's outcome as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import client_sdk


def main() -> None:
    job = json.load(sys.stdin)
    outcomes = []
    for index, value in enumerate(job["values"]):
        client = client_sdk.Client(job["url"], job["key"], Path(job["state_dir"]) / f"device-{index}",
                                   background=False, campaigns=[job["campaign"]],
                                   policy=client_sdk.ReportPolicy.unlimited())
        try:
            statuses = [client.record(job["campaign"], value).status.value for _ in range(2)]
            result = client.flush(timeout=30)
        finally:
            client.close(timeout=0)
        outcomes.append({"statuses": statuses, "sent": result.sent, "rejected": result.rejected})
    json.dump(outcomes, sys.stdout)


if __name__ == "__main__":
    main()
