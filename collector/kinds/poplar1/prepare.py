"""One aggregator's preparation of a level of a poplar1 walk: the draft's two-round sketch, batched over the
level's reports, then the aggregate share with this aggregator's own noise.  No I/O here.

``round_one`` checks the level against this aggregator's own records (``rules.check_level``), records it, opens
each report's input share, evaluates the IDPF at the candidate prefixes (``Poplar1.verify_init_indices``, every
candidate in one pass per report) and returns the first sketch shares.  ``round_two`` combines them with the
peer's into the sketch and returns the second shares.  ``finish`` combines the second shares: a report whose
sketch is not zero (its IDPF keys do not share a zero or one-hot vector: a malformed key, an altered share) is
rejected ``invalid-measurement``; the others' output shares are added, the accepted count must still reach
``min_batch``, and this aggregator adds its noise (calibrated so that its noise alone protects the walk:
``estimators.kinds.poplar1.accounting``).  A report is rejected by name and counted (``rejections``).

``first_shares`` (round one without the checks) and ``aggregate`` (finish without the noise) run the same steps
over one chunk of a level: the helper's, which checks the level and adds up its chunks on its own records
(``helper``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from client_sdk.distributed import ctx_for
from client_sdk.distributed_messages import ProtocolError
from client_sdk.errors import ShareRejected, VerifyError
from client_sdk.kinds.poplar1.device import poplar1_for
from client_sdk.randomness import SECURE_RANDOM, RandomSource
from client_sdk.spec import Spec
from estimators.kinds.poplar1.accounting import walk_noise

from .rules import AggParam, LevelRecords, LevelRefusal, LevelRefused, check_level, check_min_batch

# (report id, public share, the sealed or plain input share as the aggregator received it) -> encoded input share
Opener = Callable[[bytes, bytes, Any], bytes]


def prefix_int(prefix: Sequence[bool]) -> int:
    value = 0
    for bit in prefix:
        value = value << 1 | int(bit)
    return value


@dataclass
class LevelState:
    "A level in preparation: its parameter, each report's state and first share, and the rejected reports"

    batch: str
    agg_param: AggParam
    states: dict[bytes, Any] = field(default_factory=dict)
    shares: dict[bytes, list[int]] = field(default_factory=dict)
    rejected: dict[bytes, str] = field(default_factory=dict)


class Poplar1Aggregator:
    "One aggregator (agg_id 0: the leader, 1: the helper) of one poplar1 campaign, over its own level records"

    def __init__(self, spec: Spec, verify_key: bytes, agg_id: int, opener: Opener, *,
                 records: LevelRecords | None = None, rng: RandomSource = SECURE_RANDOM) -> None:
        self.spec, self.params = spec, spec.params
        self.vdaf = poplar1_for(self.params.bits)
        self.ctx = ctx_for(spec)
        self.verify_key, self.agg_id, self.opener = verify_key, agg_id, opener
        self.records = records if records is not None else LevelRecords()
        self.rng = rng
        self.noise = walk_noise(spec.epsilon, float(spec.delta or 0.0), len(self.params.levels))
        self.rejections: Counter = Counter()
        self.level: LevelState | None = None
        # each report's shares, opened and decoded at its first level: (public share, sealed share, both decoded)
        self._opened: dict[bytes, tuple[bytes, Any, Any, Any]] = {}

    def round_one(self, batch: str, agg_param: AggParam,
                  reports: Sequence[tuple[bytes, bytes, Any]]) -> dict[bytes, list[int] | str]:
        "The first sketch share of each report (or why it is rejected); LevelRefused for a level refused"
        ids = [report_id for report_id, _, _ in reports]
        check_level(self.vdaf, self.params, self.records.history(batch), agg_param, ids)
        self.records.record(batch, agg_param)
        return self.first_shares(batch, agg_param, reports)

    def first_shares(self, batch: str, agg_param: AggParam,
                     reports: Sequence[tuple[bytes, bytes, Any]]) -> dict[bytes, list[int] | str]:
        "Round one over ``reports`` at a level the caller checked on its own records (a level, or a chunk of one)"
        level, prefixes = agg_param
        indices = [prefix_int(prefix) for prefix in prefixes]
        state = self.level = LevelState(batch, agg_param)
        out: dict[bytes, list[int] | str] = {}
        for report_id, public_share, sealed in reports:
            try:
                public, share = self._shares(report_id, public_share, sealed)
                verify_state, sketch = self.vdaf.verify_init_indices(
                    self.verify_key, self.ctx, self.agg_id, level, indices, report_id, public, share)
            except ShareRejected as exc:
                out[report_id] = self._reject(state, report_id, str(exc.reason))
                continue
            except (VerifyError, ValueError, IndexError):
                out[report_id] = self._reject(state, report_id, str(ProtocolError.INVALID_MESSAGE))
                continue
            state.states[report_id], state.shares[report_id] = verify_state, sketch
            out[report_id] = sketch
        return out

    def round_two(self, peer: dict[bytes, list[int] | str]) -> dict[bytes, list[int] | str]:
        "The second sketch share of each report, from the sketch both first shares make"
        state = self._current()
        out: dict[bytes, list[int] | str] = {}
        for report_id in list(state.states):
            theirs = peer.get(report_id)
            if not isinstance(theirs, list):  # the peer rejected it: so does this aggregator
                out[report_id] = self._reject(state, report_id, str(ProtocolError.REJECTED_BY_HELPER)
                                              if isinstance(theirs, str) else str(ProtocolError.JOB_MISMATCH))
                continue
            pair = [state.shares[report_id], theirs][:: 1 if self.agg_id == 0 else -1]
            try:
                sketch = self.vdaf.verifier_shares_to_message(self.ctx, state.agg_param, pair)
                stepped = self.vdaf.verify_next(self.ctx, state.states[report_id], sketch)
            except VerifyError:
                out[report_id] = self._reject(state, report_id, str(ProtocolError.INVALID_MEASUREMENT))
                continue
            assert isinstance(stepped, tuple)  # round one's step: the next state and the second share
            state.states[report_id], second = stepped
            state.shares[report_id] = second
            out[report_id] = second
        return out

    def finish(self, peer: dict[bytes, list[int] | str]) -> tuple[list[bytes], list[int]]:
        "The accepted reports and this aggregator's noisy aggregate share; LevelRefused below min_batch"
        level = self._current().agg_param[0]
        accepted, total = self.aggregate(peer)
        check_min_batch(self.params, len(accepted), "reports passed the sketch")
        return accepted, self.noisy(level, total)

    def noisy(self, level: int, total: Sequence[int]) -> list[int]:
        "A level's aggregate share with this aggregator's noise added, drawn now"
        p = self.vdaf.idpf.current_field(level).MODULUS
        return [(a + n) % p for a, n in zip(total, self.share_noise(len(total)))]

    def aggregate(self, peer: dict[bytes, list[int] | str]) -> tuple[list[bytes], list[int]]:
        "The reports whose sketch is zero and the sum of their output shares (no noise: never released as is)"
        state = self._current()
        level, prefixes = state.agg_param
        p = self.vdaf.idpf.current_field(level).MODULUS
        total = [0] * len(prefixes)
        accepted = []
        for report_id in list(state.states):
            theirs = peer.get(report_id)
            if not isinstance(theirs, list):
                self._reject(state, report_id, str(ProtocolError.REJECTED_BY_HELPER))
                continue
            pair = [state.shares[report_id], theirs][:: 1 if self.agg_id == 0 else -1]
            try:
                if self.vdaf.verifier_shares_to_message(self.ctx, state.agg_param, pair) is not None:
                    raise VerifyError("the second sketch message must be empty")
                out_share = self.vdaf.verify_next(self.ctx, state.states[report_id], None)
            except VerifyError:
                self._reject(state, report_id, str(ProtocolError.INVALID_MEASUREMENT))
                continue
            assert isinstance(out_share, list)
            total = [(a + b) % p for a, b in zip(total, out_share)]
            accepted.append(report_id)
        self.level = None
        return accepted, total

    def _shares(self, report_id: bytes, public_share: bytes, sealed: Any) -> tuple[Any, Any]:
        """The report's decoded public and input shares, opened and decoded once for the whole walk (while the
        public and sealed shares are the same)"""
        known = self._opened.get(report_id)
        if known is not None and known[0] == public_share and known[1] == sealed:
            return known[2], known[3]
        share = self.vdaf.decode_input_share(self.agg_id, self.opener(report_id, public_share, sealed))
        public = self.vdaf.decode_public_share(public_share)
        self._opened[report_id] = (public_share, sealed, public, share)
        return public, share

    def share_noise(self, length: int) -> list[int]:
        "This aggregator's own noise on a level's counts: exact discrete Gaussian draws from its CSPRNG"
        return self.noise.share_noise(length, self.rng)

    def _current(self) -> LevelState:
        if self.level is None:
            raise LevelRefused(LevelRefusal.LEVEL_NOT_INCREASING, "no level in preparation")
        return self.level

    def _reject(self, state: LevelState, report_id: bytes, reason: str) -> str:
        state.states.pop(report_id, None)
        state.shares.pop(report_id, None)
        state.rejected[report_id] = reason
        self.rejections[reason] += 1
        return reason
