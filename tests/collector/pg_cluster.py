"""A throwaway PostgreSQL cluster for the tests, started from the server binaries (initdb, pg_ctl).

The cluster lives in a temporary directory, listens on 127.0.0.1 on a free port (and on a unix socket in that
directory), trusts local connections and is stopped and removed at the end.  PostgreSQL refuses to run as root:
as root, initdb and pg_ctl run as the ``postgres`` user (``runuser``) in a directory owned by it.  Where the
binaries are: ``LDP_PG_BINDIR``, else the newest ``/usr/lib/postgresql/*/bin``, else ``pg_ctl`` on the PATH.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg

from .ports import free_port

SERVER_USER = "postgres"
# Test settings: no fsync (the tests kill collectors, never the server or the machine) and enough connections
# for several collector processes with their pools.
SERVER_OPTIONS = "-c max_connections=300 -c shared_buffers=64MB -c listen_addresses=127.0.0.1"
NO_FSYNC = "-c fsync=off -c full_page_writes=off"


class ServerNotFound(RuntimeError):
    "No PostgreSQL server binaries on this machine"


def find_bindir() -> Path:
    "The directory holding initdb and pg_ctl"
    candidates = [os.environ.get("LDP_PG_BINDIR", "")]
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name),
                         reverse=True)
    on_path = shutil.which("pg_ctl")
    candidates.append(str(Path(on_path).parent) if on_path else "")
    for directory in candidates:
        if directory and (Path(directory) / "initdb").is_file() and (Path(directory) / "pg_ctl").is_file():
            return Path(directory)
    raise ServerNotFound("PostgreSQL server binaries (initdb, pg_ctl) not found: install the distribution's "
                         "postgresql package (scripts/test does) or set LDP_PG_BINDIR")


class PostgresCluster:
    "initdb + pg_ctl start in a temporary directory; ``url(dbname)`` connects as the superuser"

    def __init__(self, *, durable: bool = False) -> None:
        "``durable``: fsync as in production (benchmarks); the tests run without it"
        self.bindir = find_bindir()
        self.as_root = os.geteuid() == 0
        self.root = Path(tempfile.mkdtemp(prefix="ldp-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = free_port()
        self.user = SERVER_USER if self.as_root else pwd.getpwuid(os.geteuid()).pw_name
        if self.as_root:
            entry = pwd.getpwnam(SERVER_USER)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", self.user, "--auth=trust", "-E", "UTF8", "--locale=C",
                  "--no-sync")
        try:
            self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-o",
                      f"-p {self.port} -k {self.root} {SERVER_OPTIONS} {'' if durable else NO_FSYNC}", "start")
        except subprocess.CalledProcessError as exc:
            log = self.log.read_text(errors="replace") if self.log.exists() else ""
            raise RuntimeError(f"PostgreSQL did not start: {exc.stderr}\n{log}") from exc
        self._databases = 0

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bindir / tool), *args]
        if self.as_root:
            command = ["runuser", "-u", SERVER_USER, "--", *command]
        subprocess.run(command, check=True, capture_output=True, text=True, cwd=self.root)

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, prefix: str = "ldp") -> str:
        "A new empty database; its URL"
        self._databases += 1
        name = f"{prefix}_{self._databases}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


KEPT_TABLES = ("schema_migrations", "kind_migrations")  # what says the schema is there; every other table emptied


def empty_database(url: str) -> None:
    "Delete every row of the collector's tables (distributed, kinds' and the shuffler's too); the schema stays"
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [row[0] for row in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename")
                  if row[0] not in KEPT_TABLES]
        if tables:
            conn.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY")
