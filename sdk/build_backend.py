"""The SDK's build backend: setuptools' own, minus the folders it would leave in the checkout.

The SDK packages the repository's ``client_sdk`` (``package-dir`` is ``..``), so setuptools writes its build tree
to ``sdk/build`` and its ``ldp_telemetry_sdk.egg-info`` beside ``client_sdk``, in the repository root: ``pip wheel
./sdk`` left both behind.  Every hook runs setuptools' and then removes those of them it created.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from setuptools import build_meta

HERE = Path(__file__).resolve().parent
ARTEFACTS = (HERE / "build", HERE / "ldp_telemetry_sdk.egg-info", HERE.parent / "ldp_telemetry_sdk.egg-info")


@contextmanager
def _leaving_nothing() -> Iterator[None]:
    existing = {path for path in ARTEFACTS if path.exists()}
    try:
        yield
    finally:
        for path in ARTEFACTS:
            if path not in existing:
                shutil.rmtree(path, ignore_errors=True)


def _cleaned(hook: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        with _leaving_nothing():
            return hook(*args, **kwargs)

    run.__name__, run.__doc__ = hook.__name__, hook.__doc__
    return run


get_requires_for_build_wheel = build_meta.get_requires_for_build_wheel
get_requires_for_build_sdist = build_meta.get_requires_for_build_sdist
get_requires_for_build_editable = build_meta.get_requires_for_build_editable
prepare_metadata_for_build_wheel = _cleaned(build_meta.prepare_metadata_for_build_wheel)
prepare_metadata_for_build_editable = _cleaned(build_meta.prepare_metadata_for_build_editable)
build_wheel = _cleaned(build_meta.build_wheel)
build_sdist = _cleaned(build_meta.build_sdist)
build_editable = _cleaned(build_meta.build_editable)
