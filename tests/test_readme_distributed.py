"""The README's distributed-campaign spec is a valid spec of a distributed campaign (the README stays true)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from client_sdk import load_spec


def test_the_readme_distributed_spec_is_valid():
    readme = Path(__file__).resolve().parents[1].joinpath("README.md").read_text()
    start = readme.index("## Distributed campaigns")
    section = readme[start:readme.index("\n## ", start + 1)]
    block = re.search(r"```json\n(.*?)\n```", section, re.S)
    assert block is not None
    spec = load_spec(json.loads(block.group(1)))
    assert spec.trust == "distributed" and spec.prio3 is not None and spec.prio3.type == "histogram"
