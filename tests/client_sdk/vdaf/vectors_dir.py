"""Where the draft's test vectors are: $LDP_VDAF_VECTORS, else ../shared/vdaf-test-vectors beside the repository."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT = REPO_ROOT / ".." / "shared" / "vdaf-test-vectors"


def vectors_dir() -> Path:
    return Path(os.environ.get("LDP_VDAF_VECTORS") or DEFAULT).resolve()


def vector_files() -> list[Path]:
    directory = vectors_dir()
    return sorted(directory.glob("*.json")) if directory.is_dir() else []
