"""The poplar1 kind, collector side: the aggregators' rules on their own records (``rules``), one aggregator's
batched preparation of a level with its noise (``prepare``), and the leader's walk (``walk``)."""

from .prepare import Poplar1Aggregator
from .rules import LevelRecords, LevelRefusal, LevelRefused, check_level
from .walk import LevelRelease, WalkRelease, extensions, walk

__all__ = ["LevelRecords", "LevelRefusal", "LevelRefused", "LevelRelease", "Poplar1Aggregator", "WalkRelease",
           "check_level", "extensions", "walk"]
