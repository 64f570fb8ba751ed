"""docs/distributed.md's "Distributed campaigns" commands (the first run the README links to) and
docs/operations.md's leader-and-helper commands, run as written in a fresh directory: two aggregators, devices, then
the batch's release.

Only what names this machine changes: the example ports (8000, 8001) become free ones.  The first run needs nothing
else: its campaign's batches last a minute and it waits for its batch's end and grace itself.  operations.md's
campaign has day-long batches and an example batch day, which becomes the day the reports were sent: a batch is
collected once its UTC day has ended and the collection grace after it (``COLLECT_GRACE``), on each aggregator's
clock, so rather than wait, between the day's commands and the next day's the test stops the helper and the leader
and starts them again, with the same commands, a day and the grace later (``LDP_CLOCK_OFFSET``, the collector's
clock).  The test adds the devices operations.md leaves to distributed.md (SDK clients configured with the
helper's URL)."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from client_sdk import load_spec
from collector.config import DEFAULTS
from tests.collector.helpers import free_port, stop_group

ROOT = Path(__file__).resolve().parents[1]


def section(text: str, title: str) -> str:
    start = text.index(f"## {title}")
    return text[start:text.index("\n## ", start + 1)]


def shell_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, re.S)


def next_day(script: str) -> str:
    """Shell lines that stop the aggregators (the serve jobs of the script) and start them again with their own
    commands, a day and the collection grace later (from any moment of the day the reports were sent, its batch can
    then be collected: each aggregator checks that on its own clock)"""
    jobs = [line for line in script.splitlines() if line.rstrip().endswith("&")]
    assert len(jobs) == 2 and all("ldp-telemetry serve" in job for job in jobs), jobs
    lines = []
    for number, job in enumerate(jobs, 1):
        port = re.search(r"--port (\d+)", job)
        assert port is not None
        lines += [f"kill %{number}; wait %{number} || true",
                  f"LDP_CLOCK_OFFSET={86400 + DEFAULTS['COLLECT_GRACE'] + 60:g} {job}",
                  f"for try in $(seq 200); do curl -fs http://127.0.0.1:{port.group(1)}/readyz >/dev/null && break; "
                  "sleep 0.1; done"]
    return "\n".join(lines) + "\n"


def run(script: str, cwd: Path) -> str:
    """The script in one bash (-euo pipefail), in its own process group, killed with its servers once it is done
    (its output goes to a file: the servers it leaves running would hold a pipe open)"""
    env = {key: value for key, value in os.environ.items() if not key.startswith("LDP_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    log = cwd / "script.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            process.wait(timeout=900)
        finally:
            stop_group(process)
    output = log.read_text()
    assert process.returncode == 0, output
    return output


def with_free_ports(script: str) -> str:
    for example in ("8000", "8001"):
        script = script.replace(example, str(free_port()))
    return script


def last_json(output: str) -> dict:
    "The last JSON object printed (the collection's release, after the campaign's)"
    decoder, found, at = json.JSONDecoder(), [], 0
    while (start := output.find("{", at)) != -1:
        try:
            document, at = decoder.raw_decode(output, start)
            found.append(document)
        except ValueError:
            at = start + 1
    return found[-1]


def report(cwd: Path, name: str) -> dict:
    done = subprocess.run([sys.executable, "-c", "from ldp_telemetry.cli import main; main()", "report", name,
                           "--db", "leader.db", "--format", "json"], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_readme_distributed_commands_work_as_written(tmp_path):
    text = section((ROOT / "docs" / "distributed.md").read_text(), "Distributed campaigns")
    assert "ldp-telemetry-sdk[distributed]" not in text  # not a published name: installed from the repository
    assert "pip install './sdk[distributed]'" in text
    record, collect = shell_blocks(text)
    spec = re.search(r"cat > browser_dist.json <<'EOF'\n(.*?)\nEOF", record, re.S)
    assert spec is not None
    loaded = load_spec(json.loads(spec.group(1)))
    assert loaded.trust == "distributed" and loaded.prio3 is not None and loaded.prio3.type == "histogram"
    assert loaded.prio3.window == "1m"  # minutes, not a day: the first run ends by itself
    assert "LDP_" not in (record + collect).replace("LDP_PEER_TOKEN", "")  # no test hook: the clock is the real one
    output = run(with_free_ports(record + collect), tmp_path)  # as written, nothing between the blocks
    assert "browser_dist" in output
    result = report(tmp_path, "browser_dist")
    assert result["trust"] == "distributed" and result["n"] == 200
    [batch] = result["batches"]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z", batch) and batch in output


DEVICES = """INGEST=$(ldp-telemetry keys create --role ingest --db leader.db)
python - "$INGEST" <<'EOF'
import sys
from client_sdk import Client

for device in range(12):
    with Client("http://127.0.0.1:8000", sys.argv[1], state_dir=f"devices/{device}",
                aggregators={"helper": "http://127.0.0.1:8001"}) as client:
        client.record("apps", ["mail", "maps", "chat"][device % 3])
EOF
"""


def test_the_operations_leader_and_helper_commands_work_as_written(tmp_path):
    text = section((ROOT / "docs" / "operations.md").read_text(), "Distributed campaigns: leader and helper")
    today, collect = shell_blocks(text)
    assert "2026-11-30" in collect  # the example day
    day = dt.datetime.now(dt.timezone.utc).date().isoformat()
    script = with_free_ports(today + DEVICES + next_day(today) + collect.replace("2026-11-30", day))
    output = run(script, tmp_path)
    release = last_json(output)
    assert release["campaign"] == "apps" and release["batch"] == day and release["report_count"] == 12
    assert report(tmp_path, "apps")["n"] == 12


def test_the_threat_model_names_tests_that_exist():
    "Every test docs/distributed.md's threat model cites is a test function in the named file"
    text = section((ROOT / "docs" / "distributed.md").read_text(), "Who can learn or break what (threat model)")
    aliases = dict(re.findall(r"`(\w+)`\s+is\s+`([\w/]+\.py)`", text))
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| party")]
    assert {row.split("|")[1].strip() for row in rows} >= {"device (malicious)", "leader (dishonest operator)",
                                                          "helper (dishonest operator)", "network (between device, "
                                                          "leader, helper)", "collector of releases (analyst, admin "
                                                          "key)"}
    cited = 0
    for row in rows:
        path = None
        for reference in re.findall(r"`([\w/.]*)::(\w+)`", row.split("|")[4]):
            prefix, name = reference
            path = aliases.get(prefix, prefix) if prefix else path
            assert path is not None, row
            source = (ROOT / "tests" / path).read_text()
            assert f"\ndef {name}(" in source, (path, name)
            cited += 1
    assert cited >= 12
