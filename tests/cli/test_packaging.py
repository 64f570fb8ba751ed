"""Package metadata: the declared license is shipped, stated as an SPDX expression, with classifiers."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
tomllib = pytest.importorskip("tomllib")


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_license_is_an_spdx_expression_with_its_file():
    meta = project()["project"]
    assert meta["license"] == "Apache-2.0"  # not the deprecated {text = ...} table
    assert meta["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the full text, not a pointer to it
    assert not any(c.startswith("License ::") for c in meta["classifiers"])  # PEP 639: the expression only


def test_build_backend_supports_license_expressions():
    requires = project()["build-system"]["requires"]
    setuptools = next(r for r in requires if r.startswith("setuptools"))
    assert setuptools.startswith("setuptools>=") and int(setuptools.split(">=")[1].split(".")[0]) >= 77


def test_classifiers_name_the_supported_pythons():
    meta = project()["project"]
    minimum = meta["requires-python"].removeprefix(">=")
    assert f"Programming Language :: Python :: {minimum}" in meta["classifiers"]
    assert "Typing :: Typed" in meta["classifiers"]
