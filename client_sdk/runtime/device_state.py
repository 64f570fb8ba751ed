"""The device's RAPPOR state: a random secret (and the cohort derived from it).

Since state file version 3 the :class:`~client_sdk.Client` keeps the secret in its state database (table
``device``, see ``client.py``), written in the transaction of the first report drawn with it; a secret file left by
an older SDK is imported once by :func:`import_legacy_secret` and removed only after the import committed.  This
module still reads and writes the file format for that import (and for apps that call
:func:`load_or_create_device_state` themselves).

The file lives under the SDK's ``state_dir`` (created with mode 0700) and is written once, atomically, with mode
0600: a temporary file is written and fsynced, then hard-linked into place, so two processes starting at once
end up with the same secret.  The secret never leaves the device and never appears in a report.

Losing the file means a new secret, hence new permanent randomized responses: every value reported again
spends another epsilon_inf.  A damaged file is therefore an error (:class:`DeviceStateError`), never silently
replaced.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DeviceStateError
from ..randomness import SECURE_RANDOM, RandomSource
from ..rappor import MIN_SECRET_BYTES, cohort_from_secret

STATE_FILE_NAME = "rappor_device.json"
STATE_VERSION = 1
SECRET_BYTES = 32


@dataclass(frozen=True)
class DeviceState:
    "A device's RAPPOR secret; the cohort for any power-of-two cohort count derives from it"

    secret: bytes = field(repr=False)

    def cohort_for(self, m: int) -> int:
        "This device's stable cohort among ``m`` cohorts"
        return cohort_from_secret(self.secret, m)

    def to_dict(self) -> dict:
        return {"version": STATE_VERSION, "secret": self.secret.hex()}

    @classmethod
    def from_dict(cls, data: object) -> DeviceState:
        "Parse the JSON object stored on disk; DeviceStateError names the bad field"
        if not isinstance(data, dict):
            raise DeviceStateError("state", "must be a JSON object")
        if data.get("version") != STATE_VERSION:
            raise DeviceStateError("state.version", f"must be {STATE_VERSION}")
        text = data.get("secret")
        try:
            secret = bytes.fromhex(text) if isinstance(text, str) else b""
        except ValueError:
            raise DeviceStateError("state.secret", "must be a hex string") from None
        if len(secret) < MIN_SECRET_BYTES:
            raise DeviceStateError("state.secret", f"must hold at least {MIN_SECRET_BYTES} bytes")
        return cls(secret)


def load_or_create_device_state(
    state_dir: str | os.PathLike, *, rng: RandomSource | None = None, file_name: str = STATE_FILE_NAME
) -> DeviceState:
    "The state stored under ``state_dir``, created with a fresh secret from ``rng`` (the CSPRNG) if absent"
    directory = Path(state_dir)
    path = directory / file_name
    if os.path.exists(path):
        return _load(path)
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    fresh = DeviceState((rng or SECURE_RANDOM).token_bytes(SECRET_BYTES))
    if _create_exclusively(path, json.dumps(fresh.to_dict()).encode()):
        return fresh  # what this call wrote (0600, fsynced): no need to read it back
    return _load(path)


def import_legacy_secret(state_dir: str | os.PathLike, store: Callable[[bytes], bytes]) -> bytes | None:
    """The secret of an older SDK's file under ``state_dir``, handed to ``store`` (which commits it durably and
    returns the secret stored), then the file removed; None if there is no file.  A crash between the commit and
    the removal leaves the file, which :func:`remove_legacy_file` takes away later: the stored secret rules."""
    path = Path(state_dir) / STATE_FILE_NAME
    if not os.path.exists(path):
        return None
    stored = store(_load(path).secret)  # a damaged file is a DeviceStateError, never a new secret
    path.unlink(missing_ok=True)
    return stored


def remove_legacy_file(state_dir: str | os.PathLike) -> None:
    "Remove an older SDK's secret file whose import committed (left by a crash just after the import)"
    (Path(state_dir) / STATE_FILE_NAME).unlink(missing_ok=True)


def _load(path: Path) -> DeviceState:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DeviceStateError("state", f"cannot read {path}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise DeviceStateError("state", f"{path} is not valid JSON") from None
    _restrict_permissions(path)
    return DeviceState.from_dict(data)


def _create_exclusively(path: Path, content: bytes) -> bool:
    "Write ``content`` to ``path`` with mode 0600 unless another process created it first; True if this call did"
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL  # a new file, so its mode is 0600 (or tighter, by the umask)
    try:
        descriptor = os.open(temporary, flags, 0o600)
    except FileExistsError:  # left by a crashed process that had this pid
        temporary.unlink()
        descriptor = os.open(temporary, flags, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, path)  # fails if the file appeared meanwhile: keep the first secret
        except FileExistsError:
            return False
        return True
    finally:
        temporary.unlink(missing_ok=True)


def _restrict_permissions(path: Path) -> None:
    "Tighten a state file that group or others can read (POSIX only)"
    if os.name != "posix":
        return
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        os.chmod(path, 0o600)
