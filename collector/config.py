"""The collector's configuration, lowest precedence first: :data:`DEFAULTS`, ``LDP_``-prefixed environment variables
(``LDP_DATABASE``, ``LDP_RATE_LIMIT``, ...) and the ``config`` argument of ``create_app``.  Keys are upper case;
values from the environment are converted to the type of the default (a tuple from comma-separated text).

Apart from the app (``collector.app``), so that the CLI and the demo read a default without loading Flask and the API.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

DEFAULTS: dict[str, Any] = {
    "DATABASE": "",  # path of the SQLite file or a postgresql:// URL (LDP_DATABASE_URL) (required)
    "MAX_BODY_BYTES": 8 * 1024 * 1024,  # request body limit, after gzip decompression
    "MAX_BATCH_REPORTS": 5000,  # reports per POST /v1/reports
    "MAX_SHUFFLED_BATCH_REPORTS": 100_000,  # reports per POST /v1/shuffled-batches (one shuffler's batch)
    "MAX_SHUFFLED_BATCH_BYTES": 256 * 1024 * 1024,  # its body limit, after gzip decompression
    "RATE_LIMIT": 200.0,  # requests per second per key; 0 turns rate limiting off
    "RATE_BURST": 400.0,  # bucket size
    # public keys (embedded in web pages, shared by all their visitors and by anyone who copies them): stricter
    "PUBLIC_RATE_LIMIT": 20.0,  # requests per second per public key; 0 turns it off
    "PUBLIC_RATE_BURST": 100.0,
    "PUBLIC_MAX_BATCH_REPORTS": 100,  # reports per POST /v1/reports of a public key
    "BUSY_TIMEOUT_MS": 10_000,  # how long a writer waits for the SQLite write lock
    "MIN_FREE_DISK_BYTES": 64 * 1024 * 1024,  # /readyz fails below this
    "METRICS_DIR": "",  # prometheus multiprocess directory; empty: PROMETHEUS_MULTIPROC_DIR or a default
    "MAX_ESTIMATE_DAYS": 366,  # per-day estimates answer at most this many days
    "ROLE": "standalone",  # distributed campaigns: "leader" or "helper" (collector.distributed); or "shuffler"
    "PEER_RATE_LIMIT": 50.0,  # helper: requests per second from the leader (peer token); 0 turns it off
    "PEER_RATE_BURST": 200.0,
    "HELPER_URL": "",  # the leader's helper: https://..., or http:// to a loopback host only
    "PEER_TOKEN": "",  # aggregator-to-aggregator bearer token, the same on both sides (LDP_PEER_TOKEN)
    "PEER_TIMEOUT": 30.0,  # seconds the leader waits for one answer of the helper
    # leader: reports x candidate prefixes per peer request of a poplar1 level, which bounds the helper's time on it
    # (about 75 us of CPU each at the leaf level: 1.5 s; collector.kinds.poplar1.levels.Chunking)
    "POPLAR1_CHUNK_EVALUATIONS": 20_000,
    "AGGREGATE_INTERVAL": 2.0,  # leader: seconds between rounds of the aggregation driver (0: no driver thread)
    "JOB_LEASE": 60.0,  # leader: seconds a claimed aggregation job stays with its driver (collector.distributed.leader)
    "COLLECT_GRACE": 3600.0,  # leader and helper: seconds after a batch has ended before it is collected
    "HPKE_OVERLAP_DAYS": 7,  # leader and helper: days an older HPKE key still opens reports after a rotation
    "HPKE_REFRESH_INTERVAL": 300.0,  # leader: seconds between reads of the helper's HPKE configs by the driver
    "UPSTREAM_URL": "",  # shuffler: the collector it forwards batches to (LDP_UPSTREAM_URL)
    "UPSTREAM_TOKEN": "",  # shuffler: its own ingest key at that collector (LDP_UPSTREAM_TOKEN)
    "FORWARD_INTERVAL": 0.2,  # shuffler: seconds between forwarding rounds when nothing is due (0: no forwarder)
    "DASHBOARD": 1,  # 1: serve the analysts' dashboard at /dashboard/ (collector.dashboard); 0: off (LDP_DASHBOARD=0)
    "CORS_ORIGINS": (),  # web origins allowed to call the spec and report routes (LDP_CORS_ORIGINS: comma-separated)
}
ENV_PREFIX = "LDP_"


def load_config(config: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> dict:
    "Defaults, overridden by LDP_* environment variables, overridden by ``config``"
    environ = os.environ if environ is None else environ
    out = dict(DEFAULTS)
    for key, default in DEFAULTS.items():
        raw = environ.get(ENV_PREFIX + key)
        if raw is None:
            continue
        try:
            out[key] = raw if isinstance(default, str) else raw.split(",") if isinstance(default, tuple) \
                else type(default)(raw)
        except ValueError:
            raise ValueError(f"{ENV_PREFIX}{key} must be a {type(default).__name__}, got {raw!r}") from None
    for key, value in (config or {}).items():
        out[key.upper()] = value
    if not out["DATABASE"]:
        out["DATABASE"] = environ.get("LDP_DATABASE_URL", "")
    if not out["DATABASE"]:
        raise ValueError("DATABASE (LDP_DATABASE or LDP_DATABASE_URL) must name the SQLite file or a postgresql:// URL")
    return out
