"""What a device offers a kind to make one report with (:class:`DeviceContext`): narrow on purpose.

The recorder builds one per report: the random source, the kind's own state slot (a JSON object kept in the
device's state file under the kind's name), an in-memory memo the kind keeps per device (its randomizers), the
device secret, the sealing configurations for kinds that seal to aggregators, and the report's campaign, id and
batch, and ``notes``: the kind's own notes on this one report, from ``make_report`` to its ``ledger_charge`` and
finish function.  A kind that must finish its payload in the record's transaction (after the ledger said yes) passes a
function to :meth:`DeviceContext.finish_in_transaction`."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol

    from ..randomness import RandomSource

    class KindState(Protocol):
        "The kind's slot in the device state file: a JSON object, read and written in the record's transaction"

        def load(self) -> dict: ...

        def save(self, state: dict) -> None: ...

    class DeviceSecret(Protocol):
        "The device's long-term secret (RAPPOR's memoization is keyed by it), stored with the first report"

        @property
        def value(self) -> bytes: ...

        def store(self) -> bytes:
            "Store a freshly drawn secret (in the record's transaction); the stored one (another client's wins)"


class DeviceContext:
    "One report's view of the device (see the module docstring)"

    __slots__ = ("rng", "state", "memo", "secret", "sealing_configs", "log_once", "campaign", "report_id", "batch",
                 "finish", "notes")

    def __init__(self, *, rng: RandomSource | None, state: KindState, memo: dict, secret: DeviceSecret,
                 sealing_configs: Callable[[], Any], log_once: Callable[..., None], campaign: str, report_id: str,
                 batch: str | None) -> None:
        self.rng, self.state, self.memo, self.secret = rng, state, memo, secret
        self.sealing_configs, self.log_once = sealing_configs, log_once
        self.campaign, self.report_id, self.batch = campaign, report_id, batch
        self.finish: Callable[[Any], Any] | None = None
        self.notes: dict = {}

    def finish_in_transaction(self, function: Callable[[Any], Any]) -> None:
        "Have the recorder call ``function(payload)`` in the record's transaction for the payload it queues"
        self.finish = function
