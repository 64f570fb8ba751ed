"""The quantiles kind, collector side: :mod:`.kind` (the CollectorKind, registered on import), :mod:`.store` (its
own tables and statements), :mod:`.api` (its estimate view hook)."""

from .kind import QUANTILES, QuantilesCampaigns, accept
from .store import MIGRATIONS, QuantilesStore

__all__ = ["MIGRATIONS", "QUANTILES", "QuantilesCampaigns", "QuantilesStore", "accept"]
