"""Code and docs cite papers or docs/ pages, never a reference sheet that is not in the repository."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_file_cites_a_missing_reference_sheet():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    offenders = [
        name for name in tracked.split()
        if name != "tests/cli/test_citations.py" and (ROOT / name).is_file()
        and "REFERENCE" + ".md" in (ROOT / name).read_text(encoding="utf-8", errors="replace")
    ]
    assert offenders == []
