"""The poplar1 campaign kind, device side: distributed heavy hitters over Poplar1 (draft-irtf-cfrg-vdaf-20).

A device secret-shares its string as an IDPF and seals each aggregator's share in the distributed envelope
(``client_sdk.distributed``); the leader and the helper walk the prefix tree (``collector.kinds.poplar1``), and
the release is estimated by ``estimators.kinds.poplar1``.  The kind's registration is ``.kind``."""

from .kind import POPLAR1, Poplar1Kind
from .limits import FIELDS, KIND_NAME

__all__ = ["FIELDS", "KIND_NAME", "POPLAR1", "Poplar1Kind"]
