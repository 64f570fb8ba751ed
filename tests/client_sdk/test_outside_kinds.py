"""Outside campaign kinds: registered by LDP_TELEMETRY_KINDS (or the entry-point group ``ldp_telemetry.kinds``),
imported once when a spec names a kind the registry lacks; with fields, identity and device state of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from client_sdk import ReportPolicy, load_spec
from client_sdk.errors import SpecError
from client_sdk.kinds import unregister_kind

from .fakes import FakeCollector, make_client

ROOT = Path(__file__).resolve().parents[2]
STAMP = {"name": "stamped", "kind": "stamp", "epsilon": 1.0, "label": "hello"}


def _run(code: str, modules: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "LDP_TELEMETRY_KINDS": modules, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                          check=False)


def test_a_kind_named_in_the_environment_is_loaded_once_with_its_own_fields():
    code = ("import json, client_sdk\n"
            f"spec = client_sdk.load_spec({STAMP!r})\n"
            "from client_sdk.kinds import kind_names\n"
            "try:\n"
            f"    client_sdk.load_spec({{**{STAMP!r}, 'domain': ['a', 'b']}})\n"
            "except client_sdk.SpecError as exc:\n"
            "    error = [exc.field, str(exc)]\n"
            "print(json.dumps([spec.to_dict(), list(kind_names()), error]))")
    done = _run(code, " tests.client_sdk.outside_kinds.stamp ,")
    assert done.returncode == 0, done.stderr
    spec, names, (field, message) = json.loads(done.stdout)
    assert names == ["local", "prio3", "quantiles", "stamp"]
    assert spec["kind"] == "stamp" and spec["label"] == "hello" and spec["trust"] == "local"
    assert field == "domain" and "'label'" in message and "'mechanism'" not in message and "'noise'" not in message


def test_a_kind_module_that_fails_to_import_is_named():
    done = _run("import client_sdk\nclient_sdk.load_spec({'name': 'x', 'kind': 'stamp', 'label': 'a', "
                "'epsilon': 1})", "tests.client_sdk.outside_kinds.broken")
    assert done.returncode != 0
    assert "'tests.client_sdk.outside_kinds.broken'" in done.stderr and "KindModuleError" in done.stderr
    assert "broken on purpose" in done.stderr


def test_an_unknown_kind_is_a_spec_error_naming_kind():
    with pytest.raises(SpecError) as info:
        load_spec({"name": "x", "kind": "no-such-kind", "epsilon": 1.0})
    assert info.value.field == "kind"


def test_an_outside_kind_reports_through_the_client_with_its_own_device_state(tmp_path):
    from .outside_kinds.stamp import STAMP as KIND  # registers it (as the environment variable would)

    try:
        spec = load_spec(STAMP)
        fake = FakeCollector()
        fake.extra_campaigns = [{"name": spec.name, "version": 1, "fingerprint": spec.fingerprint,
                                 "spec": spec.to_dict()}]
        for _restart in range(2):  # the state slot survives a restart
            client = make_client(tmp_path, fake, campaigns=[spec.name], policy=ReportPolicy.unlimited())
            assert client.record(spec.name, None)
            assert client.record(spec.name, None)
            client.flush()
            client.close(timeout=0)
        payloads = sorted((r["payload"] for r in fake.stored.values() if r["campaign"] == spec.name),
                          key=lambda payload: payload["seq"])
        assert payloads == [{"label": "hello", "seq": n} for n in (1, 2, 3, 4)]
    finally:
        unregister_kind(KIND.name)
