"""Devices of both SDKs, interleaved, through a real shuffler to a real collector; then the collector as attacker.

Python ``Client`` devices and Node devices of the JavaScript SDK (scripts/shuffled-devices.mjs) take turns: request
after request, each device records REPORTS_PER_REQUEST reports and sends them in one request to a real shuffler
(``serve --role shuffler``), until a batch of the spec's ``shuffle_batch`` is queued; the shuffler forwards it to a
real collector (real SQLite on both).  Recording proxies in front of the shuffler and of the collector keep what
each is sent: the send order, the requests and the SDK of every report (the ground truth the attacker lacks), and
the batch exactly as the collector receives it.

The collector, holding its database files and what it was sent, then tries to learn (a) the order in which the
reports reached the shuffler, or which SDK sent a report, from anything but the payload's value, and (b) which
reports came in one device request.  Every way it can order the reports (the forwarded batch's order; the order
a full-table SELECT returns; each column's values, rowids where a table has them; where each report's cell sits
in the raw database file and its WAL, read by ``tests/collector/disk_reader``) and every way it can group them (the
raw file's pages and WAL frames) is scored against the ground truth: rank correlation with the send order and with
the SDK, reports of one request next to each other, and reports of one request on one page.  One permutation test
over all of them at once (the max of the standardised scores, its null distribution from PERMUTATIONS uniform
relabellings of the ground truth) has a false-alarm rate of at most ALPHA; a collector that could tell any of it
pushes the max past the null's tail.  (c) ``ldp-telemetry report --db`` shows the batch's amplified guarantee.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from client_sdk import Client, ReportPolicy
from estimators.shuffle import amplified_epsilon, closed_form_epsilon
from tests.collector import disk_reader
from tests.collector.helpers import ldp_command, running_server
from tests.collector.shuffler_helpers import (
    SHUFFLED,
    call,
    keys_in,
    recording_proxy,
    shuffler_process,
    stored_ids,
    wait_for,
)

REQUESTS, REPORTS_PER_REQUEST = 40, 5  # 200 reports: one batch of the spec's shuffle_batch
BATCH = REQUESTS * REPORTS_PER_REQUEST
NAME, EPSILON0 = "mixed", 2.0
SPEC: dict[str, Any] = {**SHUFFLED, "name": NAME, "epsilon": EPSILON0, "shuffle_batch": BATCH}
ALPHA = 1e-4  # the test's false-alarm rate: a correct shuffle fails it once in 10,000 runs
PERMUTATIONS = 99_999  # (PERMUTATIONS + 1) * ALPHA = 10: the p-value's resolution is 1e-5
CALIBRATION = 10_000  # further relabellings that standardise each score (kept apart from the null's)
SEED = 37


def _sdk_of(request: int) -> str:
    "The SDK of the request'th request: the two take turns"
    return "python" if request % 2 == 0 else "js"


def _send(sdk: str, values: list[str], url: str, key: str, state: Path, sdk_js: Path) -> None:
    "One device of ``sdk`` records ``values`` and sends them in one request (its flush)"
    if sdk == "python":
        client = Client(url, key, state, policy=ReportPolicy.unlimited(), background=False,
                        campaigns=[NAME])
        for value in values:
            assert client.record(NAME, value)
        result = client.close(timeout=30)
        assert (result.sent, result.rejected) == (len(values), 0), result
        return
    body = {"url": url, "key": key, "devices": [{"dir": str(state), "campaign": NAME, "values": values}]}
    done = subprocess.run([shutil.which("node") or "node", "scripts/shuffled-devices.mjs"], cwd=sdk_js,
                          input=json.dumps(body), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    (outcome,) = json.loads(done.stdout)
    assert (outcome["sent"], outcome["rejected"]) == (len(values), 0), outcome


def run_world(directory: Path, sdk_js: Path) -> dict:
    """Both SDKs' devices through a shuffler to a collector: the requests the shuffler received (in arrival order),
    the batch the collector received, and the collector's database and report"""
    collector_db, shuffler_db = directory / "collector.db", directory / "shuffler.db"
    admin, forwarding = keys_in(collector_db, "admin", "shuffler")
    (device,) = keys_in(shuffler_db, "ingest")
    rng = random.Random(SEED)  # the devices' values, i.i.d. over the domain (their noise: the OS CSPRNG)
    with running_server(collector_db, directory / "collector.log", workers=1) as (collector_url, _), \
            recording_proxy(collector_url) as (to_collector, collector_saw):
        call(collector_url + "/v1/campaigns", admin, "POST", SPEC)
        with shuffler_process(shuffler_db, directory / "shuffler.log", to_collector, forwarding) as (url, _), \
                recording_proxy(url) as (to_shuffler, shuffler_saw):
            for request in range(REQUESTS):
                values = [rng.choice(SPEC["domain"]) for _ in range(REPORTS_PER_REQUEST)]
                _send(_sdk_of(request), values, to_shuffler, device, directory / f"device-{request}", sdk_js)
            wait_for(lambda: len(stored_ids(collector_db)) == BATCH)
            wait_for(lambda: call(collector_url + f"/v1/campaigns/{NAME}/estimate", admin)["shuffle"]
                     ["batches"])
            running = directory / "running"  # the files as the collector's operator finds them while it runs
            running.mkdir()
            for suffix in ("", "-wal"):
                if Path(f"{collector_db}{suffix}").exists():
                    shutil.copyfile(f"{collector_db}{suffix}", running / f"collector.db{suffix}")
    requests = [seen["body"]["reports"] for seen in shuffler_saw if seen["path"] == "/v1/reports"]
    batches = [seen["body"]["reports"] for seen in collector_saw if seen["path"] == "/v1/shuffled-batches"]
    report = subprocess.run(ldp_command("report", NAME, "--db", str(collector_db), "--format", "json"),
                            capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr[-2000:]
    return {"requests": requests, "batches": batches, "db": collector_db, "running": running / "collector.db",
            "report": json.loads(report.stdout)}


# -- what the collector holds: orders and groupings of the stored reports ----------------------------------------
def _sortable(value: Any) -> tuple:
    return (type(value).__name__, value)


def _ranks(values: list[Any]) -> np.ndarray:
    "Average ranks (ties share one)"
    order = sorted(range(len(values)), key=lambda i: _sortable(values[i]))
    ranks = np.empty(len(values))
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            ranks[order[position]] = (start + end) / 2
        start = end + 1
    return ranks


def collector_view(db: Path, label: str, received: list[dict], ids: list[bytes] | None = None
                   ) -> tuple[list[bytes], dict, dict, dict]:
    """What the collector can read, per stored report (keyed by its 16-byte id, in the order ``SELECT * FROM
    reports`` returns them): the orderable quantities (every column, the rowid if the table has one, the
    full-table SELECT's order, the raw file's and WAL's cell positions, the received batch's order), the orders
    among them without ties, and the raw file's groupings (page, WAL frame).  With ``ids``: keyed in that order,
    and the file's quantities named after ``label``"""
    wal = Path(f"{db}-wal")
    stored_raw = db.read_bytes()
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(reports)")]
        rows = conn.execute("SELECT * FROM reports").fetchall()
        try:
            rowids: list[Any] | None = [row[0] for row in conn.execute("SELECT rowid FROM reports")]
        except sqlite3.OperationalError:  # WITHOUT ROWID: no rowid counts arrivals
            rowids = None
    selected = [row[columns.index("report_id")] for row in rows]
    where = {report: j for j, report in enumerate(selected)}
    ids = ids or selected
    at = [where[i] for i in ids]  # the row of each of ids
    quantities: dict[str, list[Any]] = {f"reports.{name}": [rows[j][c] for j in at] for c, name in enumerate(columns)}
    if rowids is not None:
        quantities["reports.rowid"] = [rowids[j] for j in at]
    quantities["SELECT * order"] = at
    wanted = set(ids)
    in_file = disk_reader.database_positions(db, wanted)
    quantities["database file cell (page, offset)"] = [in_file.get(i, (1 << 31, 0)) for i in ids]
    groupings = {"database file page": [in_file.get(i, (0, 0))[0] for i in ids]}
    in_wal = disk_reader.wal_positions(wal, wanted)
    if in_wal:
        quantities["WAL cell (frame, offset)"] = [in_wal.get(i, (1 << 31, 0)) for i in ids]
        groupings["WAL frame"] = [in_wal.get(i, (-1, 0))[0] for i in ids]
    wire = {uuid.UUID(r["report_id"]).bytes: position for position, r in enumerate(received)}
    quantities = {f"{label}: {name}": values for name, values in quantities.items()}
    groupings = {f"{label}: {name}": values for name, values in groupings.items()}
    quantities["order received in the batch"] = [wire[i] for i in ids]
    orders = {name: values for name, values in quantities.items() if len(set(values)) == len(values)}
    assert db.read_bytes() == stored_raw  # read only
    return ids, quantities, orders, groupings


def id_bits(ids: list[bytes]) -> dict[str, list[int]]:
    "Each bit of the stored report ids that is not the same in all (an SDK's id generator would show in its bits)"
    bits = {f"report_id bit {k}": [(int.from_bytes(i, "big") >> (127 - k)) & 1 for i in ids] for k in range(128)}
    return {name: values for name, values in bits.items() if len(set(values)) > 1}


# -- the permutation test --------------------------------------------------------------------------------------
def _centred(ranks: np.ndarray) -> np.ndarray:
    centred = ranks - ranks.mean()
    return centred / np.linalg.norm(centred)


def scores(perm: np.ndarray, truth: dict, quantities: dict, orders: dict, groupings: dict,
           sdk_quantities: dict) -> tuple[list[str], np.ndarray]:
    """Per relabelling (a row of ``perm``: stored report j gets the ground truth of sent report perm[j]): |rank
    correlation| of every quantity with the send order and of every quantity and id bit with the SDK; per order,
    the neighbours sent in one request; per grouping, the pairs of one request in one group"""
    names, columns = [], []
    send = truth["position"][perm].astype(float)
    send -= send.mean(axis=1, keepdims=True)
    send /= np.linalg.norm(send, axis=1, keepdims=True)
    sdk = truth["sdk"][perm].astype(float)
    sdk -= sdk.mean(axis=1, keepdims=True)
    sdk /= np.linalg.norm(sdk, axis=1, keepdims=True)
    for name, values in quantities.items():
        if len(set(values)) > 1:  # a column equal in every row orders nothing
            ranks = _centred(_ranks(values))
            names.append(f"send order ~ {name}")
            columns.append(np.abs(send @ ranks))
    for name, values in {**quantities, **sdk_quantities}.items():
        if len(set(values)) > 1:
            names.append(f"SDK ~ {name}")
            columns.append(np.abs(sdk @ _centred(_ranks(values))))
    request = truth["request"][perm]
    for name, values in orders.items():
        along = request[:, np.argsort(_ranks(values))]
        names.append(f"one request's neighbours in {name}")
        columns.append((along[:, 1:] == along[:, :-1]).sum(axis=1).astype(float))
    for name, groups in groupings.items():
        group = np.unique(_ranks(groups), return_inverse=True)[1].reshape(-1)
        keys = group[None, :] * REQUESTS + request
        width = int(keys.max()) + 1
        counts = np.bincount((np.arange(len(perm))[:, None] * width + keys).ravel(),
                             minlength=len(perm) * width).reshape(len(perm), width)
        names.append(f"pairs of one request in one {name}")
        columns.append((counts * (counts - 1) // 2).sum(axis=1).astype(float))
    return names, np.stack(columns, axis=1)


def permutation_test(truth: dict, observed_perm: np.ndarray, **view: dict) -> tuple[float, str, float]:
    """The p-value of the max standardised score (the standardisation from CALIBRATION relabellings, the null from
    PERMUTATIONS others, all uniform permutations from a seeded generator), the score that is the max, its z"""
    rng = np.random.default_rng(SEED)
    n = observed_perm.size

    def relabelled(count: int) -> np.ndarray:
        return rng.permuted(np.tile(np.arange(n), (count, 1)), axis=1)

    _, calibration = scores(relabelled(CALIBRATION), truth, **view)
    mean, sd = calibration.mean(axis=0), calibration.std(axis=0)
    varies = sd > 0  # a score equal under every relabelling (one group holding all) tells nothing
    names, observed = scores(observed_perm[None, :], truth, **view)
    names = [name for name, kept in zip(names, varies) if kept]
    z = (observed[0, varies] - mean[varies]) / sd[varies]
    exceed = 0
    for start in range(0, PERMUTATIONS, 10_000):
        _, null = scores(relabelled(min(10_000, PERMUTATIONS - start)), truth, **view)
        exceed += int((((null[:, varies] - mean[varies]) / sd[varies]).max(axis=1) >= z.max()).sum())
    worst = int(np.argmax(z))
    return (1 + exceed) / (PERMUTATIONS + 1), names[worst], float(z[worst])


def test_both_sdks_through_a_shuffler_the_collector_learns_no_order_sdk_or_request(sdk_js: Path,
                                                                                   tmp_path: Path) -> None:
    world = run_world(tmp_path, sdk_js)
    requests, batches = world["requests"], world["batches"]
    assert [len(r) for r in requests] == [REPORTS_PER_REQUEST] * REQUESTS  # several reports per request
    assert len(batches) == 1 and len(batches[0]) == BATCH
    sent = [uuid.UUID(r["report_id"]).bytes for request in requests for r in request]
    assert len(set(sent)) == BATCH
    forms = {sdk: {(tuple(sorted(r)), type(r["payload"]).__name__) for i, request in enumerate(requests)
                   if _sdk_of(i) == sdk for r in request} for sdk in ("python", "js")}
    assert forms["python"] == forms["js"] and len(forms["js"]) == 1, forms  # both SDKs' reports look the same

    # what the collector stores: one row per report in `reports`; no other table has a row per report or request,
    # nor any report id (text or bytes)
    db = world["db"]
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        dumped = {table: conn.execute(f'SELECT * FROM "{table}"').fetchall() for table in tables}
    assert sorted(r for r in (row[1] for row in dumped["reports"])) == sorted(sent)
    texts = {uuid.UUID(bytes=i).hex for i in sent} | {str(uuid.UUID(bytes=i)) for i in sent}
    for table, rows in dumped.items():
        if table != "reports":
            assert len(rows) < REQUESTS, table
            cells = [value for row in rows for value in row]
            assert not any(isinstance(v, bytes) and any(i in v for i in sent) for v in cells), table
            assert not any(isinstance(v, str) and any(t in v.replace("-", "") or t in v for t in texts)
                           for v in cells), table

    ids, quantities, orders, groupings = collector_view(db, "files at rest", batches[0])
    _, *running = collector_view(world["running"], "files while it runs", batches[0], ids)
    quantities, orders, groupings = ({**a, **b} for a, b in zip((quantities, orders, groupings), running))
    truth = {"position": np.arange(BATCH),
             "request": np.repeat(np.arange(REQUESTS), REPORTS_PER_REQUEST),
             "sdk": np.repeat([_sdk_of(r) == "js" for r in range(REQUESTS)], REPORTS_PER_REQUEST).astype(int)}
    where = {report: position for position, report in enumerate(sent)}
    observed = np.array([where[i] for i in ids])  # stored report j is the observed[j]'th sent
    p, worst, z = permutation_test(truth, observed, quantities=quantities, orders=orders, groupings=groupings,
                                   sdk_quantities=id_bits(ids))
    assert p > ALPHA, f"the collector learns something: {worst} at z = {z:.1f} (p = {p:.1e})"
    print(f"max standardised score: {worst} at z = {z:.2f}, p = {p:.3f}", file=sys.stderr)

    # (c) the report shows the batch's amplified guarantee beside epsilon0
    block = world["report"]["shuffle"]
    assert block["epsilon0"] == EPSILON0 and block["delta"] == 1e-6
    (row,) = block["batches"]
    assert (row["batch_size"], row["batches"]) == (BATCH, 1)
    assert row["epsilon"] == amplified_epsilon(EPSILON0, BATCH, 1e-6) < EPSILON0
    assert row["closed_form_epsilon"] == closed_form_epsilon(EPSILON0, BATCH, 1e-6)
