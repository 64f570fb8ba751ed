"""docs/scaling.md's "Scaling out" commands (linked from the README), run as written against a throwaway PostgreSQL
cluster.

Only what names this machine changes: the example database URL becomes the cluster's, and the two example ports
become free ones (other test runs may hold 8001 and 8002).  The section's shell blocks run in one bash, in a
directory holding the README tour's ``browser.json``; then the report from the Spark aggregate must equal the report
from the database.  Needs PostgreSQL's server binaries and Java 17: without them it fails, it does not skip."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from tests.collector.helpers import free_port
from tests.collector.pg_cluster import PostgresCluster

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_URL = "postgresql://ldp@127.0.0.1:5432/ldp"


def section(text: str, title: str) -> str:
    "The section ``## title`` of a Markdown page, up to the next section or the end of the page"
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def test_the_scaling_out_commands_work_as_written(tmp_path):
    readme = (ROOT / "README.md").read_text()
    scaling = (ROOT / "docs" / "scaling.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", section(scaling, "Scaling out"), re.S)
    assert len(blocks) == 2 and EXAMPLE_URL in blocks[0]
    spec = re.search(r"cat > browser.json <<'EOF'\n(.*?)\nEOF", section(readme, "A five-minute tour"), re.S)
    assert spec is not None
    (tmp_path / "browser.json").write_text(spec.group(1))
    cluster = PostgresCluster()
    try:
        url = cluster.create_database("readme")
        script = "\n".join(blocks).replace(EXAMPLE_URL, url)
        for example in ("8001", "8002"):
            script = script.replace(example, str(free_port()))
        env = {key: value for key, value in os.environ.items() if not key.startswith("LDP_")}
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        process = subprocess.Popen(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   start_new_session=True)
        try:
            output, _ = process.communicate(timeout=900)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)  # the script's own group: its serve processes too
                process.wait()
        assert process.returncode == 0, output
        assert "-> browser.aggregate.json" in output
        reports = [subprocess.run(["ldp-telemetry", "report", "browser", *source, "--format", "json"], cwd=tmp_path,
                                  env=env, capture_output=True, text=True, check=True).stdout
                   for source in (["--aggregate", "browser.aggregate.json"], ["--db", url])]
        from_spark, from_database = (json.loads(text) for text in reports)
        assert from_spark == from_database and from_spark["n"] == 100
    finally:
        from collector.storage.postgres import close_pools

        close_pools()
        cluster.stop()
