"""The poplar1 walk of one batch through a real leader and helper (``serve --role leader`` / ``--role helper`` on
loopback, SQLite files in a temporary directory): N devices' reports (Zipf-distributed strings, sealed by the
Python SDK) uploaded to the leader, then ``POST /v1/campaigns/<name>/walk``; prints the upload and walk times
and the heavy hitters found against the planted counts.

    python benchmarks/poplar1_processes.py --devices 10000 --bits 32 --stride 4 --threshold 0.01
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import requests  # noqa: E402

import client_sdk  # noqa: E402
from benchmarks.poplar1_population import campaign, parser, summary, zipf_values  # noqa: E402
from client_sdk.distributed import seal_report  # noqa: E402
from client_sdk.vdaf.hpke import HpkeConfig  # noqa: E402
from tests.collector.distributed.test_e2e_devices import aggregators  # noqa: E402


def descendants_cpu() -> float:
    "CPU seconds (user + system) used so far by this process's descendants still running: the two servers"
    tick = os.sysconf("SC_CLK_TCK")
    parents, cpu = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        parents[pid], cpu[pid] = int(fields[1]), (int(fields[11]) + int(fields[12])) / tick
    total = 0.0
    for pid in cpu:
        ancestor = parents.get(pid)
        while ancestor and ancestor != os.getpid():
            ancestor = parents.get(ancestor)
        total += cpu[pid] if ancestor else 0.0
    return total


def main() -> None:
    args = parser(__doc__, 10_000).parse_args()
    source = campaign(args)
    values = zipf_values(args)
    with tempfile.TemporaryDirectory() as tmp, aggregators(Path(tmp)) as servers:  # the default limits
        spec = client_sdk.load_spec(servers.call("POST", "/v1/campaigns", source)["spec"])
        listed = servers.call("GET", "/v1/campaigns/walk", key=servers.ingest)["aggregators"]
        leader = HpkeConfig.from_dict(listed["leader"]["hpke_config"])
        helper = HpkeConfig.from_dict(listed["helper"]["hpke_config"])
        started = time.perf_counter()
        for start in range(0, len(values), 1000):
            reports = []
            for value in values[start:start + 1000]:
                report_id = str(uuid.uuid4())
                reports.append({"report_id": report_id, "campaign": "walk", "fingerprint": spec.fingerprint,
                                "payload": seal_report(spec, value, leader, helper, report_id=report_id,
                                                       batch=servers.day)})
            servers.call("POST", "/v1/reports", {"reports": reports}, key=servers.ingest)
        uploaded = time.perf_counter() - started
        print(f"seal+upload {uploaded:.1f} s", flush=True)
        started, servers_cpu = time.perf_counter(), descendants_cpu()
        answer = requests.post(servers.leader_url + "/v1/campaigns/walk/walk", json={"batch": servers.day},
                               headers={"Authorization": f"Bearer {servers.admin}"}, timeout=3600)
        assert answer.ok, (answer.status_code, answer.text[:2000])
        release = answer.json()
        walked, servers_cpu = time.perf_counter() - started, descendants_cpu() - servers_cpu
    levels = release["walk"]["levels"]
    print(summary(args, values, release["estimate"]["heavy_hitters"], len(levels),
                  sum(len(level["prefixes"]) for level in levels),
                  f"seal+upload {uploaded:.1f} s, walk {walked:.1f} s wall, "
                  f"{servers_cpu:.1f} CPU s of the two servers"))


if __name__ == "__main__":
    main()
