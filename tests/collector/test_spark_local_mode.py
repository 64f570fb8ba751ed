"""``ldp-telemetry spark aggregate`` in local mode: the driver listens on loopback only, and Spark's JVM output
(log4j, warnings, progress bars) is shown only when asked for.  Each test starts its own JVM in a subprocess."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from collector.archive import export_campaign
from collector.storage import open_storage
from ldp_telemetry.cli import main

from .test_archive import MECHANISM_SPECS, fill
from .test_spark_aggregate import require_java

SPARK_ENVIRONMENT = ("SPARK_LOCAL_IP", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_CONF_DIR")


def _environment() -> dict[str, str]:
    "This environment without the variables that would choose Spark's address or interpreter for it"
    return {name: value for name, value in os.environ.items() if name not in SPARK_ENVIRONMENT}


def _archive(tmp_path: Path) -> Path:
    with open_storage(tmp_path / "c.db") as storage:
        storage.migrate()
        fill(storage, specs=MECHANISM_SPECS[:1])
        export_campaign(storage, MECHANISM_SPECS[0]["name"], tmp_path / "archive")
    return tmp_path / "archive"


def _listening_addresses(pid: int) -> list[str]:
    "The local addresses of the TCP sockets that ``pid`` and its descendants listen on (from /proc)"
    pids, inodes = {pid}, set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) in pids:
                pids.add(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    for each in pids:
        for fd in Path(f"/proc/{each}/fd").glob("*"):
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                continue
            raw = bytes.fromhex(fields[1].split(":")[0])
            words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # each 32-bit word is host-order
            out.append(str(ipaddress.ip_address(words)))
    return out


def _is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


LISTEN_SCRIPT = """
import sys
from collector.spark_aggregate import spark_session
session = spark_session("local[1]", "ldp-telemetry test")
conf = session.sparkContext.getConf()
print(session.sparkContext._gateway.proc.pid, conf.get("spark.driver.host"), conf.get("spark.driver.bindAddress"),
      session.sparkContext.pythonExec, flush=True)
sys.stdin.read()
session.stop()
"""


def test_local_mode_listens_on_loopback_only_and_shows_spark_output_when_asked():
    "Without a log file (what --verbose does) Spark's output reaches stderr; every listening socket is loopback"
    require_java()
    script = subprocess.Popen([sys.executable, "-c", LISTEN_SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=_environment())
    try:
        pid, host, bind_address, python = script.stdout.readline().split()
        addresses = _listening_addresses(int(pid))
    finally:
        _, stderr = script.communicate("", timeout=120)
    assert (host, bind_address, python) == ("127.0.0.1", "127.0.0.1", sys.executable)
    assert addresses and all(_is_loopback(address) for address in addresses), addresses
    assert "log4j" in stderr  # Spark's own output, shown
    assert "resolves to a loopback address" not in stderr  # it did not go looking for another interface


def test_the_spark_command_prints_only_its_result(tmp_path):
    "Spark's output goes to a temporary log file, removed after a success"
    require_java()
    archive, out, temporary = _archive(tmp_path), tmp_path / "grr.json", tmp_path / "tmp"
    temporary.mkdir()
    done = subprocess.run([sys.executable, "-c", "from ldp_telemetry.cli import main; main()", "spark", "aggregate",
                           str(archive), "--campaign", "grr", "--out", str(out)],
                          capture_output=True, text=True, env={**_environment(), "TMPDIR": str(temporary)},
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.endswith(f"-> {out}\n") and done.stdout.count("\n") == 1
    assert not list(temporary.glob("ldp-spark-*"))


def test_verbose_reaches_the_session(monkeypatch, tmp_path):
    import collector.spark_aggregate as job

    seen = {}

    def fake_run(*args, **kwargs):
        seen.update(kwargs)
        raise job.ArchiveError("stop here")

    monkeypatch.setattr(job, "run", fake_run)
    result = CliRunner().invoke(main, ["spark", "aggregate", str(tmp_path), "--campaign", "x", "--verbose"])
    assert result.exit_code == 1 and "stop here" in result.output
    assert seen["verbose"] is True
