"""API keys and rate limits.

Keys travel as ``Authorization: Bearer <key>``; the database stores only their SHA-256 (``storage.hash_key``).
Roles: ``ingest`` may send reports and read campaign specs, ``admin`` may do everything, ``shuffler`` (a
shuffler's key at its upstream collector) may read campaign specs and is the only role that posts shuffled
batches (``POST /v1/shuffled-batches``: a device's ingest key cannot pass its reports off as shuffled).  A
missing or unknown key is 401 (with ``WWW-Authenticate: Bearer``), a known key without the role is 403.  An
ingest key may be scoped to some campaigns (the rest are 403 to read, and their reports are rejected by name), and
a *public* key (one embedded in web pages, which anyone can copy) always is, with its own, stricter limits:
``PUBLIC_RATE_LIMIT``, ``PUBLIC_RATE_BURST`` and ``PUBLIC_MAX_BATCH_REPORTS``.

Rate limits are a token bucket per key kept in the database (``rate_buckets``), so the limit holds for the whole
service however many gunicorn workers serve it.  Every request with a known key is charged one token, whatever
its outcome (403, 400, 413 included), and all of it happens in :func:`require`:

* most views take their token in a small transaction of their own before the view runs;
* report ingestion (``take_token=False``) first peeks read-only, so an exhausted key is refused before its body is
  read; a valid batch then takes its token inside the insert transaction (no extra commit, no extra fsync), and a
  request that fails before the insert is charged by ``require`` on its way out.

When the disk is full, a read (GET/HEAD) whose token cannot be written is checked against the bucket read-only
and served without charge, so reads keep working while writes answer 507.  The bucket keeps no precise time:
see ``storage.RateRule``.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable
from functools import wraps
from typing import Any

from flask import current_app, g, request

from client_sdk.clock import utc_day

from .db import get_storage
from .problems import Problem
from .storage import ApiKey, DiskFull, RateLimited, RateRule, StorageUnavailable

Role = str


# Tests and the demo let days pass without waiting for midnight: ``LDP_CLOCK_OFFSET`` (seconds, read when the
# process starts) moves this collector's clock of days, for everything that depends on the day (which batch a
# distributed report enters, which batches have ended and may be collected, expiry of keys and campaigns).
# Production leaves it unset.  The device's clock (``client_sdk.clock``) never reads it.
CLOCK_OFFSET = float(os.environ.get("LDP_CLOCK_OFFSET") or 0)


def clock_now() -> float:
    "The collector's clock: POSIX time now, moved by ``LDP_CLOCK_OFFSET``"
    return time.time() + CLOCK_OFFSET


def utc_today() -> str:
    "The collector's UTC day, YYYY-MM-DD: ``client_sdk.clock.utc_day`` of now, moved by ``LDP_CLOCK_OFFSET``"
    return utc_day(clock_now())


def rate_rule(key: ApiKey) -> RateRule | None:
    "The token bucket configured for ``key`` (PUBLIC_RATE_* for a public key), or None when it is off"
    prefix = "PUBLIC_" if key.public else ""
    rate = float(current_app.config[prefix + "RATE_LIMIT"])
    if rate <= 0:
        return None
    return RateRule(rate, max(1.0, float(current_app.config[prefix + "RATE_BURST"])))


def max_batch_reports(key: ApiKey) -> int:
    "The most reports one POST /v1/reports of ``key`` may carry"
    return int(current_app.config["PUBLIC_MAX_BATCH_REPORTS" if key.public else "MAX_BATCH_REPORTS"])


def require_scope(key: ApiKey, campaign: str) -> None:
    "403 naming the campaign unless ``key`` may read and report to it"
    if not key.may_use(campaign):
        raise Problem(403, f"this key is not scoped to campaign {campaign[:100]!r}", field="name",
                      slug="out-of-scope", title="Campaign out of the key's scope")


def too_many(retry_after: float) -> Problem:
    seconds = max(1, math.ceil(retry_after))
    return Problem(429, f"rate limit of this key exceeded; retry after {seconds} s", field="Authorization",
                   headers={"Retry-After": str(seconds)}, retry_after=seconds)


def identify() -> ApiKey:
    "The request's key; raises 401 if it is missing, malformed or unknown"
    header = request.environ.get("HTTP_AUTHORIZATION", "")  # request.headers["Authorization"], without its lookup
    scheme, _, token = header.partition(" ")
    if not header:
        raise Problem(401, "missing API key: send 'Authorization: Bearer <key>'", field="Authorization",
                      headers={"WWW-Authenticate": 'Bearer realm="ldp-telemetry"'})
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > 200:
        raise Problem(401, "malformed Authorization header: expected 'Bearer <key>'", field="Authorization",
                      headers={"WWW-Authenticate": 'Bearer realm="ldp-telemetry", error="invalid_request"'})
    key = get_storage().find_key(token)
    if key is None:
        raise Problem(401, "unknown API key", field="Authorization",
                      headers={"WWW-Authenticate": 'Bearer realm="ldp-telemetry", error="invalid_token"'})
    day = utc_today()
    if key.expired_on(day):
        raise Problem(401, f"API key expired on {key.expires_day}", field="Authorization",
                      headers={"WWW-Authenticate": 'Bearer realm="ldp-telemetry", error="invalid_token"'})
    if key.last_used_day != day:  # the day only, written at most once per key per day
        with contextlib.suppress(StorageUnavailable):  # best effort: a full disk must not refuse the request
            get_storage().mark_key_used(key, day)
    g.api_key = key
    return key


def authorize(key: ApiKey, *roles: Role) -> None:
    "403 unless ``key`` has one of ``roles``"
    if key.role not in roles:
        raise Problem(403, f"this key has role {key.role!r}; the endpoint needs {' or '.join(roles)}",
                      field="Authorization")


def charge(key: ApiKey, rule: RateRule) -> None:
    "Take one token of the key's bucket now; 429 if it is empty"
    try:
        get_storage().take_token(key.key_hash, rule, time.time())
    except RateLimited as limited:
        raise too_many(limited.retry_after) from None
    except DiskFull:
        if request.method not in ("GET", "HEAD"):
            raise
        # A read must work on a full disk: check the bucket read-only and serve without charging.
        wait = get_storage().peek_tokens(key.key_hash, rule, time.time())
        if wait > 0:
            raise too_many(wait) from None


def require(*roles: Role, take_token: bool = True) -> Callable:
    """Decorator: authenticate with one of ``roles`` and charge the request one rate token (see the module doc)"""

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            key = identify()
            rule = rate_rule(key)
            if rule is None:
                authorize(key, *roles)
                return view(*args, **kwargs)
            if take_token and key.role in roles:
                charge(key, rule)
                return view(*args, **kwargs)
            wait = get_storage().peek_tokens(key.key_hash, rule, time.time())
            if wait > 0:
                raise too_many(wait)
            try:
                authorize(key, *roles)
                return view(*args, **kwargs)  # a valid batch takes its token inside the insert transaction
            except Problem as problem:
                # A refused request costs a token too (429: the insert's own token was refused; 5xx: a fault
                # whose answer a second write must not replace).
                if problem.status < 500 and problem.status != 429:
                    # emptied meanwhile, or a storage fault: the request's own answer stands
                    with contextlib.suppress(Problem, StorageUnavailable):
                        charge(key, rule)
                raise

        return wrapper

    return decorator
