"""The deployment files in docs/deploy/ checked by their own tools, the backup script on a live WAL database, and
the README tour's wait for /readyz.  The tools are installed by scripts/test; a missing tool fails, it never skips."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from tests.collector.helpers import CATEGORICAL, running_server

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "docs" / "deploy"
UNITS = ("ldp-telemetry.service", "ldp-telemetry-backup.service", "ldp-telemetry-backup.timer")


def tool(name: str) -> str:
    "The tool's path; fails (never skips) when it is missing: scripts/test installs it"
    found = shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]))
    if found is None:
        pytest.fail(f"{name} is not installed: run scripts/test, or apt-get install the package it names")
    return found


def nginx_config(tmp_path: Path) -> Path:
    "The shipped nginx.conf with its paths moved into tmp_path and a self-signed certificate there"
    tls = tmp_path / "tls"
    tls.mkdir()
    subprocess.run([tool("openssl"), "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=telemetry.example.org", "-keyout", str(tls / "privkey.pem"), "-out",
                    str(tls / "fullchain.pem")], check=True, capture_output=True)
    text = (DEPLOY / "nginx.conf").read_text()
    for old, new in (("/etc/ldp-telemetry/tls", str(tls)), ("/var/log/nginx", str(tmp_path)),
                     ("/var/cache/nginx/ldp-telemetry", str(tmp_path / "cache")),
                     ("/run/nginx-ldp-telemetry.pid", str(tmp_path / "nginx.pid"))):
        assert old in text, old
        text = text.replace(old, new)
    (tmp_path / "cache").mkdir()
    config = tmp_path / "nginx.conf"
    config.write_text(text)
    return config


def test_the_nginx_config_is_valid(tmp_path):
    config = nginx_config(tmp_path)
    checked = subprocess.run([tool("nginx"), "-t", "-c", str(config), "-p", str(tmp_path), "-e",
                              str(tmp_path / "startup-error.log")], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    assert "syntax is ok" in checked.stderr


def test_the_nginx_config_buffers_and_logs_no_client_address():
    text = (DEPLOY / "nginx.conf").read_text()
    code = "\n".join(line.split("#")[0] for line in text.splitlines())
    for leak in ("$remote_addr", "$binary_remote_addr", "$http_x_forwarded_for", "$proxy_add_x_forwarded_for",
                 "$http_user_agent", "$time_local", "$msec"):
        assert leak not in code, leak
    assert re.findall(r"access_log\s+\S+\s+(\S+);", code) == ["ldp_private"]
    assert re.search(r"error_log\s+\S+\s+crit;", code)
    assert "proxy_request_buffering on;" in code and "proxy_buffering on;" in code


def test_a_broken_nginx_config_is_refused(tmp_path):
    config = nginx_config(tmp_path)
    config.write_text(config.read_text().replace("proxy_request_buffering on;", "proxy_request_buffering maybe;"))
    checked = subprocess.run([tool("nginx"), "-t", "-c", str(config), "-p", str(tmp_path), "-e",
                              str(tmp_path / "startup-error.log")], capture_output=True, text=True)
    assert checked.returncode != 0


def systemd_units(tmp_path: Path, executable: str) -> list[Path]:
    "The shipped units with ExecStart pointing at this checkout's command and backup script"
    paths = []
    for name in UNITS:
        text = (DEPLOY / name).read_text()
        text = text.replace("/opt/ldp-telemetry/venv/bin/ldp-telemetry", executable)
        text = text.replace("/opt/ldp-telemetry/backup.sh", str(DEPLOY / "backup.sh"))
        (tmp_path / name).write_text(text)
        paths.append(tmp_path / name)
    return paths


def test_the_systemd_units_verify(tmp_path):
    command = Path(sys.executable).parent / "ldp-telemetry"
    assert command.exists(), "pip install -e . puts the ldp-telemetry command next to the interpreter"
    checked = subprocess.run([tool("systemd-analyze"), "verify", *map(str, systemd_units(tmp_path, str(command)))],
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    unit = (DEPLOY / "ldp-telemetry.service").read_text()
    assert "--host 127.0.0.1" in unit and "KillSignal=SIGTERM" in unit


def test_systemd_analyze_refuses_a_missing_executable(tmp_path):
    units = systemd_units(tmp_path, str(tmp_path / "no-such-command"))
    checked = subprocess.run([tool("systemd-analyze"), "verify", str(units[0])], capture_output=True, text=True)
    assert checked.returncode != 0


def test_backup_copies_a_live_wal_database_with_its_uncheckpointed_commits(tmp_path):
    from collector.storage import Storage

    tool("sqlite3")
    db = tmp_path / "collector.db"
    with Storage(db) as storage:  # open while the backup runs: the commits below stay in collector.db-wal
        storage.migrate()
        storage.create_campaign(CATEGORICAL, "2024-01-01")
        for day in range(1, 4):
            storage.create_key("ingest", f"2024-01-0{day}")
        assert Path(f"{db}-wal").stat().st_size > 0
        plain = tmp_path / "plain-copy.db"
        shutil.copyfile(db, plain)  # what the docs warn against
        done = subprocess.run(["sh", str(DEPLOY / "backup.sh"), str(db), str(tmp_path / "backups")],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    backup = Path(done.stdout.strip())
    assert backup.parent == tmp_path / "backups" and not Path(f"{backup}-wal").exists()
    with sqlite3.connect(backup) as conn:
        assert conn.execute("SELECT count(*) FROM api_keys").fetchone()[0] == 3
        assert conn.execute("SELECT name FROM campaigns").fetchall() == [("browser",)]
    with sqlite3.connect(plain) as conn:  # the main file alone misses the commits still in the WAL
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert "api_keys" not in tables or conn.execute("SELECT count(*) FROM api_keys").fetchone()[0] < 3


def test_the_readme_tour_waits_for_readyz(tmp_path):
    readme = (ROOT / "README.md").read_text()
    tour = readme[readme.index("## A five-minute tour"):readme.index("**2. Embed the SDK")]
    assert not re.search(r"^sleep \d", tour, re.MULTILINE), "the tour waits for /readyz, not for a fixed time"
    wait = next(line for line in tour.splitlines() if "/readyz" in line)
    tool("curl")
    with running_server(tmp_path / "collector.db", tmp_path / "server.log") as (url, _):
        port = url.rsplit(":", 1)[1]
        done = subprocess.run(["bash", "-c", wait.replace("8000", port) + "\ncurl -fs " + url + "/readyz"],
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and '"status"' in done.stdout, done.stderr


@contextmanager
def running_nginx(tmp_path: Path, upstream_url: str) -> Iterator[tuple[int, ssl.SSLContext]]:
    "The shipped nginx.conf in front of ``upstream_url`` on loopback; yields its HTTPS port and a client context"
    from tests.collector.helpers import free_port

    config = nginx_config(tmp_path)
    http_port, https_port = free_port(), free_port()
    text = config.read_text().replace("127.0.0.1:8000", upstream_url.removeprefix("http://"))
    text = text.replace("listen 80;", f"listen 127.0.0.1:{http_port};").replace("listen [::]:80;", "")
    text = text.replace("listen 443 ssl http2;", f"listen 127.0.0.1:{https_port} ssl http2;")
    config.write_text(text.replace("listen [::]:443 ssl http2;", ""))
    nginx = subprocess.Popen([tool("nginx"), "-c", str(config), "-p", str(tmp_path), "-e",
                              str(tmp_path / "startup-error.log"), "-g", "daemon off;"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        context = ssl.create_default_context(cafile=str(tmp_path / "tls" / "fullchain.pem"))
        context.check_hostname = False
        answer = None
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"https://127.0.0.1:{https_port}/readyz", context=context,
                                            timeout=2) as response:
                    answer = response.status
                    break
            except OSError:
                time.sleep(0.1)
        assert answer == 200
        yield https_port, context
    finally:
        nginx.terminate()
        nginx.wait(timeout=15)


def test_nginx_proxies_to_the_collector_and_logs_no_address(tmp_path):
    "... and passes a browser's preflight and the collector's CORS answer through unchanged"
    page = "https://app.example.org"
    with running_server(tmp_path / "collector.db", tmp_path / "server.log",
                        extra=("--rate-limit", "0", "--cors-origin", page)) as (url, _), \
            running_nginx(tmp_path, url) as (https_port, context):
        preflight = urllib.request.Request(f"https://127.0.0.1:{https_port}/v1/reports", method="OPTIONS",
                                           headers={"Origin": page, "Access-Control-Request-Method": "POST",
                                                    "Access-Control-Request-Headers": "authorization"})
        with urllib.request.urlopen(preflight, context=context, timeout=10) as response:
            assert response.status == 204
            assert response.headers["Access-Control-Allow-Origin"] == page
            assert "Authorization" in response.headers["Access-Control-Allow-Headers"]
    log = (tmp_path / "ldp-telemetry-access.log").read_text()
    line = r'\d{4}-\d{2}-\d{2} "%s" %d \d+ \d+\n'
    assert re.fullmatch(line % ("GET /readyz", 200) + line % ("OPTIONS /v1/reports", 204), log), log
    assert "127.0.0.1" not in log


def test_slow_and_idle_clients_do_not_starve_the_nginx_deployment(tmp_path):
    """50 partial request heads and 50 idle kept-alive connections (over TLS) against nginx in front of the
    collector: /livez and an ingest through nginx are still answered within a 1 s client timeout"""
    import json

    from collector.storage import Storage
    from tests.collector.helpers import make_reports, table_counts
    from tests.collector.test_serving import open_slow_clients

    db_path = tmp_path / "collector.db"
    with Storage(db_path) as storage:
        storage.migrate()
        ingest, _ = storage.create_key("ingest", "2024-01-01")
        spec = storage.create_campaign(CATEGORICAL, "2024-01-01")[0].spec
    with running_server(db_path, tmp_path / "server.log") as (url, _), \
            running_nginx(tmp_path, url) as (port, context), ExitStack() as stack:
        open_slow_clients("127.0.0.1", port, stack, wrap=lambda sock: context.wrap_socket(sock))
        base = f"https://127.0.0.1:{port}"
        for _ in range(4):
            with urllib.request.urlopen(base + "/livez", context=context, timeout=1.0) as response:
                assert response.status == 200
        body = json.dumps({"reports": make_reports(spec, ["chrome", "edge"])}).encode()
        request = urllib.request.Request(base + "/v1/reports", data=body, headers={
            "Authorization": f"Bearer {ingest}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=context, timeout=1.0) as response:
            assert json.loads(response.read())["accepted"] == 2
    assert table_counts(db_path)["reports"] == 2
