"""Shuffler throughput: reports forwarded per second, batches of 1,000, a real shuffler and a real collector.

The shuffler's queue is filled first (``ShuffleQueue.enqueue``, as its ingest route does, in requests of 500), then
``ldp-telemetry serve --role shuffler`` starts and the clock runs until the collector holds every report; the
figure is reports / seconds of that drain (start-up excluded: timed from the first stored report; the progress
read from the sizes of the batches the collector recorded, the final count from its reports table).  Then checks
0 lost and 0 duplicated.  Beside it the CPU time the shuffler's and the collector's processes used over the drain
(``/proc``), as reports per CPU second: a figure that other load on the machine does not change much; and their
overlap, the two processes' CPU seconds per second of the drain (above 1: both working at once).

    .venv/bin/python benchmarks/shuffler_throughput.py [--reports 60000] [--batch 1000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import client_sdk  # noqa: E402
from collector.shuffler.queue import ShuffleQueue  # noqa: E402
from collector.storage import Storage  # noqa: E402
from tests.collector.helpers import running_server  # noqa: E402
from tests.collector.shuffler_helpers import SHUFFLED, call, keys_in, shuffler_process  # noqa: E402


def cpu_seconds(group: int) -> float:
    "User and system CPU time of the processes of process group ``group`` (a server and its workers)"
    total = 0
    for entry in os.listdir("/proc"):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if entry.isdigit() and int(fields[2]) == group:
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=60_000)
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="shuffler-bench-") as directory:  # removed afterwards
        measure(args, Path(directory))


def measure(args: argparse.Namespace, directory: Path) -> None:
    "Fill the shuffler's queue in ``directory``, drain it into the collector, print the figures"
    collector_db, shuffler_db = directory / "collector.db", directory / "shuffler.db"
    admin, forwarding = keys_in(collector_db, "admin", "shuffler")
    keys_in(shuffler_db, "ingest")
    with running_server(collector_db, directory / "collector.log", workers=1) as (collector_url, server):
        spec = client_sdk.Spec.from_dict(call(collector_url + "/v1/campaigns", admin, "POST",
                                              {**SHUFFLED, "shuffle_batch": args.batch})["spec"])
        mechanism = client_sdk.mechanism_from_spec(spec, rng=client_sdk.DeterministicRandom(1))
        with Storage(shuffler_db) as storage:
            queue = ShuffleQueue(storage)
            for start in range(0, args.reports, 500):
                queue.enqueue([(str(uuid.uuid4()), spec.name, spec.fingerprint, mechanism.perturb("chrome"))
                               for _ in range(min(500, args.reports - start))], time.time())

        with shuffler_process(shuffler_db, directory / "shuffler.log", collector_url, forwarding) as (_, shuffler), \
                Storage(collector_db) as watch:

            def stored() -> int:
                # the recorded batches' sizes (written in their reports' transaction), on one connection: watching
                # takes next to no CPU from the two servers (counting the reports table every look did)
                return sum(int(row["size"]) for row in watch.table_rows("shuffled_batches"))

            while stored() == 0:
                time.sleep(0.01)
            started, first = time.perf_counter(), stored()
            cpu = (cpu_seconds(shuffler.pid), cpu_seconds(server.pid))
            while stored() < args.reports:
                time.sleep(0.05)
            seconds = time.perf_counter() - started
            shuffler_cpu, collector_cpu = cpu_seconds(shuffler.pid) - cpu[0], cpu_seconds(server.pid) - cpu[1]
        with Storage(collector_db) as storage:
            count = storage.row_count("reports")
        with Storage(shuffler_db) as storage:
            left = ShuffleQueue(storage).count()  # waiting, and in batches not acknowledged
        with Storage(collector_db) as storage:
            sizes = [row["size"] for row in storage.table_rows("shuffled_batches")]
    rate = (count - first) / seconds
    print(f"{count} reports forwarded in batches of {args.batch} ({len(sizes)} batches): {rate:,.0f} reports/s; "
          f"lost {args.reports - count}, duplicated {sum(sizes) - count}, left in the queue {left}; per CPU second: "
          f"shuffler {(count - first) / shuffler_cpu:,.0f}, collector {(count - first) / collector_cpu:,.0f} reports; "
          f"overlap {(shuffler_cpu + collector_cpu) / seconds:.2f} CPU seconds per second (1: one after the other)")


if __name__ == "__main__":
    main()
