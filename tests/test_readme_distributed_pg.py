"""docs/operations.md's "Distributed on PostgreSQL: two processes per role" commands, run as written against a
throwaway PostgreSQL cluster: two helpers and two leaders on a leader and a helper database, then devices (the
SDK, configured with the helper's URL) reporting to both leaders in turn; both leaders' drivers aggregate, and every
report is aggregated once on each side.

Only what names this machine changes: the example database URLs become the cluster's, the example ports free ones.
Needs PostgreSQL's server binaries: without them it fails, it does not skip."""

from __future__ import annotations

from pathlib import Path

from collector.storage import open_storage
from tests.collector.helpers import free_port
from tests.collector.pg_cluster import PostgresCluster

from .test_readme_distributed import ROOT, run, section, shell_blocks

EXAMPLE_URLS = ("postgresql://ldp@127.0.0.1:5432/ldp_leader", "postgresql://ldp@127.0.0.1:5432/ldp_helper")
DEVICES, WAIT_SECONDS = 12, 120
# Devices, half of them to each leader; then the script waits until both sides have aggregated every report
DEVICES_AND_WAIT = f"""INGEST=$(ldp-telemetry keys create --role ingest --db $LEADER_DB)
python - "$INGEST" <<'EOF'
import sys
from client_sdk import Client

for device in range({DEVICES}):
    leader = ["http://127.0.0.1:8000", "http://127.0.0.1:8010"][device % 2]
    with Client(leader, sys.argv[1], state_dir=f"devices/{{device}}",
                aggregators={{"helper": "http://127.0.0.1:8001"}}) as client:
        client.record("apps", ["mail", "maps", "chat"][device % 3])
EOF
"""


def aggregated(url: str, table: str, where: str) -> int:
    with open_storage(url) as storage:
        return int(storage._one(f"SELECT count(*) FROM {table} WHERE {where}")[0])


def test_the_two_processes_per_role_commands_work_as_written(tmp_path: Path):
    (script,) = shell_blocks(section((ROOT / "docs" / "operations.md").read_text(),
                                     "Distributed on PostgreSQL: two processes per role"))
    for example in EXAMPLE_URLS:
        assert example in script
    cluster = PostgresCluster()
    try:
        urls = (cluster.create_database("leader"), cluster.create_database("helper"))
        full = script + DEVICES_AND_WAIT
        for example, url in zip(EXAMPLE_URLS, urls):
            full = full.replace(example, url)
        for example in ("8000", "8010", "8001", "8011"):
            full = full.replace(example, str(free_port()))
        # the servers run until both sides have aggregated every report (the script's group is killed after it)
        check = (f"PYTHONPATH={ROOT} python -c 'import sys; from tests.test_readme_distributed_pg import done; "
                 f"sys.exit(0 if done(sys.argv[1], sys.argv[2]) else 1)' {urls[0]} {urls[1]}")
        full += (f"deadline=$((SECONDS + {WAIT_SECONDS}))\n"
                 f"until {check}; do [ $SECONDS -lt $deadline ] || break; sleep 0.2; done\n")
        run(full, tmp_path)
        assert done(*urls)
        assert aggregated(urls[0], "dist_jobs", "state = 'pending'") == 0
    finally:
        from collector.storage.postgres import close_pools

        close_pools()
        cluster.stop()


def done(leader_url: str, helper_url: str) -> bool:
    "Every device's report aggregated by the leaders and by the helpers"
    return (aggregated(leader_url, "dist_reports", "state = 'aggregated'") == DEVICES
            and aggregated(helper_url, "dist_helper_seen", "valid = 1") == DEVICES)

