"""Where the draft's test vectors are: vendored in tests/data/vdaf-test-vectors (draft-irtf-cfrg-vdaf-20, see the
README there), plus, when $LDP_VDAF_VECTORS names a directory, the vectors in it as extra ones."""

from __future__ import annotations

import os
from pathlib import Path

VENDORED = Path(__file__).resolve().parents[2] / "data" / "vdaf-test-vectors"


def extra_vectors_dir() -> Path | None:
    "The directory of extra vectors named by $LDP_VDAF_VECTORS, or None when it is unset or empty"
    value = os.environ.get("LDP_VDAF_VECTORS")
    return Path(value).resolve() if value else None


def vector_files() -> list[Path]:
    "The vendored vectors, then the extra ones (none when the extra directory does not exist: a test says so)"
    files = sorted(VENDORED.glob("*.json"))
    extra = extra_vectors_dir()
    if extra is not None and extra.is_dir():
        files += sorted(extra.glob("*.json"))
    return files


def vector_id(path: Path) -> str:
    "A test id: the vector's name, prefixed with extra- for one from $LDP_VDAF_VECTORS"
    return path.stem if path.parent == VENDORED else f"extra-{path.stem}"
