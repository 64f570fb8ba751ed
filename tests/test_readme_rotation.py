"""docs/operations.md's HPKE key rotation commands, run as written in a fresh directory: the first listing makes the
helper's first key, the rotation a second one, and the last listing shows the new key current and the old one in
its overlap (refused from its successor's day plus the default overlap)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

from collector.distributed.hpke_keys import DEFAULT_OVERLAP_DAYS

from .test_readme_distributed import ROOT, section, shell_blocks


def test_the_rotation_commands_of_operations_md_run_as_written(tmp_path: Path):
    text = (ROOT / "docs" / "operations.md").read_text()
    (script,) = shell_blocks(section(text, "HPKE key rotation (distributed campaigns)"))
    env = {key: value for key, value in os.environ.items() if not key.startswith("LDP_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    first_listing, rest = done.stdout.split("\n", 1)
    first_id, created, state, refused = first_listing.split("\t")
    decoder = json.JSONDecoder()
    rotated, end = decoder.raw_decode(rest)
    listed = json.loads(rest[end:])
    today = dt.datetime.now(dt.timezone.utc).date()
    assert (created, state, refused) == (today.isoformat(), "current", "-")
    assert rotated["keys"] == listed
    retired_from = (today + dt.timedelta(days=DEFAULT_OVERLAP_DAYS)).isoformat()
    assert listed == [
        {"config_id": rotated["rotated_to"], "created_day": today.isoformat(), "state": "current",
         "retired_from": None},
        {"config_id": int(first_id), "created_day": today.isoformat(), "state": "overlap",
         "retired_from": retired_from}]
