"""The Parquet archive of raw perturbed reports, and the aggregate file that a re-aggregation writes.

``export_campaign`` copies a campaign's stored reports out of either backend into Parquet files, one per
campaign version and UTC day, hive-partitioned::

    ARCHIVE/campaign=browser/version=1/day=2024-05-01/part-0.parquet

The columns are the campaign kind's (its ``ArchiveForm``, ``collector.archive_forms``; a heavy_hitters file holds
the day's count table, ``collector.kinds.heavy_hitters.archive``).  A local campaign's file has one column,
``payload`` (binary): the report's payload in ``collector.report_codec``'s tagged form,
exactly the bytes the PostgreSQL store keeps (``decode_payload(mechanism, untagged(b))`` gives back the wire
payload).  Campaign, version and day are the partition columns (in the path).  What is left out: the report id
(a random id that would join an archived row to the live database or to any other copy of the same report) and
the store's internal version id; nothing else is stored per report.  Rows are in the order of their (random)
report ids, so the file order says nothing about arrival.  The file's key-value metadata holds the spec
(``ldp.spec``), its fingerprint, mechanism, campaign, version, day, report and row counts and columns (``ldp.*``).

Reports are read in chunks and written a row group at a time, so memory stays bounded however large a day is.
Each file is written under a temporary dot-name (which Spark and pyarrow skip) and renamed into place: a rerun
replaces a day's file with the same rows, never adds to it, and leaves alone a file that already holds the day's
count of reports under the same fingerprint (days are append-only: same count, same reports).

The aggregate file (:func:`write_aggregate_file`, :func:`read_aggregate_file`) is JSON: the spec and one
mergeable aggregate per day (the form's ``day_json``: a local campaign's ``Aggregate.to_dict``).
``ldp-telemetry report --aggregate FILE`` reads it, and ``estimators.estimate_aggregate(spec, aggregate)`` takes
what :func:`read_aggregate_file` returns for a local campaign.
pyarrow is imported by the functions that need it (the ``archive`` extra).
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from client_sdk.errors import LDPError
from client_sdk.spec import Spec, load_spec

from .archive_forms import ArchiveForm
from .errors import ArchiveError, CampaignNotFound
from .kinds import collector_kind
from .storage import CampaignVersion, StorageBase

ARCHIVE_FORMAT = "ldp-telemetry-archive/1"
AGGREGATE_FORMAT = "ldp-telemetry-aggregate/1"
PART_FILE = "part-0.parquet"
ROW_GROUP_ROWS = 100_000  # rows buffered before a row group is written (about 13 MB for OUE over 1,024 values)
META_PREFIX = "ldp."


@dataclass
class ExportResult:
    "What an export did: files written, files left as they were (same reports), and the reports in both"

    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    reports: int = 0


def partition_dir(root: str | Path, campaign: str, version: int, day: str) -> Path:
    "The directory of one campaign version's day (campaign names need no escaping: letters, digits, _ . -)"
    return Path(root) / f"campaign={campaign}" / f"version={version}" / f"day={day}"


def export_campaign(storage: StorageBase, name: str, out: str | Path, *, since: str | None = None,
                    until: str | None = None) -> ExportResult:
    "Export every version of campaign ``name``, the days in [since, until] that have reports; idempotent"
    versions = storage.campaign_versions(name)
    if not versions:
        raise CampaignNotFound(f"no campaign {name!r}")
    result = ExportResult()
    for campaign in versions:
        form = archive_form(campaign.spec)
        for day, reports in form.days(storage, campaign, since, until):
            path = partition_dir(out, campaign.name, campaign.version, day) / PART_FILE
            result.reports += reports
            if _holds(path, campaign, reports):
                result.unchanged.append(path)
                continue
            written = _write_day(path, campaign, day, reports, form, form.day_chunks(storage, campaign, day))
            form.check_written(campaign, day, written, reports)
            result.written.append(path)
    return result


def archive_form(spec: Spec) -> ArchiveForm:
    "The archive form of the spec's kind (``CollectorKind.archive_form``); ArchiveError when it archives nothing"
    form = collector_kind(spec).archive_form(spec)
    if form is None:
        raise ArchiveError(f"campaign {spec.name!r} is a {spec.trust} campaign: its reports are not archived here")
    return form


def file_metadata(campaign: CampaignVersion, day: str, rows: int, reports: int | None = None,
                  columns: Sequence[str] = ("payload",)) -> dict[bytes, bytes]:
    "The key-value metadata of one day's file (``reports``: the day's reports, ``rows`` unless a row is not one)"
    spec = campaign.spec
    values = {"format": ARCHIVE_FORMAT, "campaign": campaign.name, "version": str(campaign.version), "day": day,
              "fingerprint": campaign.fingerprint, "mechanism": spec.mechanism, "spec": spec.to_json(),
              "reports": str(rows if reports is None else reports), "rows": str(rows), "columns": ",".join(columns)}
    if tuple(columns) == ("payload",):
        values["payload_encoding"] = "collector.report_codec.tagged_bytes"
    return {(META_PREFIX + key).encode(): value.encode() for key, value in values.items()}


def read_file_metadata(metadata: dict[bytes, bytes] | None) -> dict[str, str]:
    "The ``ldp.*`` entries of a Parquet file's key-value metadata, as text"
    return {key.decode()[len(META_PREFIX):]: value.decode() for key, value in (metadata or {}).items()
            if key.startswith(META_PREFIX.encode())}


def _holds(path: Path, campaign: CampaignVersion, rows: int) -> bool:
    "True if ``path`` is an archive file of this version with ``rows`` reports"
    # pyarrow: the optional archive extra, imported where used
    import pyarrow.parquet as pq

    if not path.is_file():
        return False
    try:
        meta = pq.read_metadata(path)
    except (OSError, ValueError):  # a damaged file is written again
        return False
    found = read_file_metadata(meta.metadata)
    return (found.get("fingerprint") == campaign.fingerprint and found.get("reports") == str(rows)
            and str(meta.num_rows) == found.get("rows", str(rows)))


def _write_day(path: Path, campaign: CampaignVersion, day: str, reports: int, form: ArchiveForm,
               chunks: Iterator[dict[str, list]]) -> int:
    "Write the day's rows (``form``'s columns) to a temporary name, then rename it to ``path``; the number of rows"
    # pyarrow: the optional archive extra, imported where used
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f".{PART_FILE}.*.tmp"):  # left by an export that was killed
        stale.unlink(missing_ok=True)
    temporary = path.parent / f".{PART_FILE}.{secrets.token_hex(8)}.tmp"
    schema = form.schema()
    rows = 0
    try:
        with pq.ParquetWriter(temporary, schema, compression="zstd", use_dictionary=False,
                              write_statistics=False) as writer:
            buffered: dict[str, list] = {name: [] for name in schema.names}
            for chunk in chunks:
                for name in schema.names:
                    buffered[name].extend(chunk[name])
                if len(buffered[schema.names[0]]) >= ROW_GROUP_ROWS:
                    rows += _write_rows(writer, schema, buffered)
            if buffered[schema.names[0]]:
                rows += _write_rows(writer, schema, buffered)
            writer.add_key_value_metadata(file_metadata(campaign, day, rows, reports, schema.names))
        _fsync(temporary)
        os.replace(temporary, path)
        _fsync(path.parent)
    finally:
        temporary.unlink(missing_ok=True)
    return rows


def _write_rows(writer: Any, schema: Any, buffered: dict[str, list]) -> int:
    "Write the buffered columns as one row group and empty them; the rows written"
    # pyarrow: the optional archive extra, imported where used
    import pyarrow as pa

    rows = len(buffered[schema.names[0]])
    writer.write_table(pa.table({field.name: pa.array(buffered[field.name], field.type) for field in schema},
                                schema=schema))
    for values in buffered.values():
        values.clear()
    return rows


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- the aggregate file ---------------------------------------------------------------------------------------
@dataclass
class AggregateFile:
    "A campaign version's per-day aggregates with its spec, as a re-aggregation writes them"

    spec: Spec
    days: list[tuple[str, Any]]  # the spec's archive form's aggregates (``ArchiveForm``)
    source: str = ""

    def total(self, since: str | None = None, until: str | None = None) -> Any:
        "The merged aggregate of the days in [since, until]"
        total = archive_form(self.spec).empty(self.spec)
        for _, aggregate in self.window(since, until):
            total = total.merge(aggregate)
        return total

    def reports(self) -> int:
        "The reports the days' aggregates count"
        form = archive_form(self.spec)
        return sum(form.reports(aggregate) for _, aggregate in self.days)

    def window(self, since: str | None = None, until: str | None = None) -> list[tuple[str, Any]]:
        return [(day, a) for day, a in self.days if (since or "") <= day <= (until or "9999-12-31")]

    def to_dict(self) -> dict:
        return {"format": AGGREGATE_FORMAT, "campaign": self.spec.name, "version": self.spec.version,
                "fingerprint": self.spec.fingerprint, "source": self.source, "spec": self.spec.to_dict(),
                "days": [{"day": day, **archive_form(self.spec).day_json(a)} for day, a in self.days]}

    @classmethod
    def from_dict(cls, data: Any) -> AggregateFile:
        if not isinstance(data, dict) or data.get("format") != AGGREGATE_FORMAT:
            raise ArchiveError(f"not an aggregate file (format {AGGREGATE_FORMAT!r} expected)")
        spec = load_spec(data["spec"])
        if spec.fingerprint != data.get("fingerprint"):
            raise ArchiveError("the aggregate file's spec does not have the fingerprint it names")
        form = archive_form(spec)
        days = [(str(entry["day"]), form.day_from_json(spec, entry)) for entry in data["days"]]
        return cls(spec, days, str(data.get("source", "")))


def write_aggregate_file(target: str | Path, data: AggregateFile) -> None:
    """Write ``data`` as JSON to a local path or any URI pyarrow's filesystems take (s3://, hdfs://, gs://), through
    a temporary name where the filesystem can rename"""
    text = (json.dumps(data.to_dict(), separators=(",", ":")) + "\n").encode()
    if "://" not in str(target):
        path = Path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp"
        try:
            temporary.write_bytes(text)
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)
        return
    # pyarrow: the optional archive extra, imported where used
    import pyarrow.fs

    filesystem, where = pyarrow.fs.FileSystem.from_uri(str(target))
    with filesystem.open_output_stream(where) as stream:
        stream.write(text)


def read_aggregate_file(path: str | Path) -> AggregateFile:
    "An aggregate file written by :func:`write_aggregate_file` (ArchiveError if it is not one)"
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ArchiveError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError:
        raise ArchiveError(f"{path} is not JSON") from None
    try:
        return AggregateFile.from_dict(data)
    except (KeyError, TypeError, ValueError, LDPError) as exc:
        if isinstance(exc, ArchiveError):
            raise
        raise ArchiveError(f"{path} is not a valid aggregate file ({exc})") from None


__all__: Sequence[str] = [
    "AGGREGATE_FORMAT", "ARCHIVE_FORMAT", "AggregateFile", "ArchiveError", "ExportResult", "export_campaign",
    "file_metadata", "partition_dir", "read_aggregate_file", "read_file_metadata", "write_aggregate_file",
]
