"""``npm test`` in sdk-js/: the Node test runner's unit and conformance tests (conformance/*.json), the bundle
size budget, the hash implementations against node:crypto."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import client_sdk

from .conftest import install, run_npm


def test_npm_test_passes() -> None:
    install()
    done = run_npm("test")
    summary = dict(re.findall(r"^# (tests|pass|fail) (\d+)$", done.stdout, re.MULTILINE))
    assert summary.get("fail") == "0" and int(summary.get("pass", 0)) >= 20, done.stdout[-3000:]


def test_npm_pack_installs_into_a_fresh_project_and_records(sdk_js: Path, tmp_path: Path) -> None:
    "The published shape: ``npm pack``, installed offline (no runtime dependency), imported by name under Node"
    done = run_npm("pack", "--pack-destination", str(tmp_path))
    tarball = tmp_path / done.stdout.strip().splitlines()[-1]
    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text('{"name": "app", "version": "1.0.0", "type": "module"}')
    installed = subprocess.run([shutil.which("npm") or "npm", "install", "--offline", "--no-audit", "--no-fund",
                                str(tarball)], cwd=app, capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr[-3000:]
    (app / "main.js").write_text("""
import { Client, FileStore, loadSpec } from "ldp-telemetry";
const spec = {name: "browser", mechanism: "oue", epsilon: 1.0, domain: ["a", "b"]};
const client = new Client({url: "http://127.0.0.1:9", apiKey: "k", stateDir: "state", specs: [spec],
                           background: false, logger: {warn() {}}});
const recorded = await client.record("browser", "a");
console.log(JSON.stringify({status: recorded.status, store: client.store instanceof FileStore,
                            fingerprint: loadSpec(spec).fingerprint}));
await client.close(0);
""")
    ran = subprocess.run([shutil.which("node") or "node", "main.js"], cwd=app, capture_output=True, text=True,
                         timeout=120)
    assert ran.returncode == 0, ran.stderr[-3000:]
    out = json.loads(ran.stdout)
    assert out == {"status": "queued", "store": True,
                   "fingerprint": client_sdk.load_spec({"name": "browser", "mechanism": "oue", "epsilon": 1.0,
                                                        "domain": ["a", "b"]}).fingerprint}
    assert sorted(p.name for p in (app / "node_modules").iterdir() if not p.name.startswith(".")) == ["ldp-telemetry"]
