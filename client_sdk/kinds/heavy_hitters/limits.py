"""The name, fields, bounds and defaults of a heavy_hitters campaign's parameters (one definition, for params,
planning and the kind's registration: this module imports nothing, so registering the kind loads no mechanism)."""

from __future__ import annotations

HASH_FAMILIES = ("multiply_shift",)
MAX_LENGTH = 64
MAX_ALPHABET = 255
MAX_LEVEL_BRANCHING = 4096  # B**segment_length: the extensions of one kept prefix that a level tests
MAX_FRAGMENT_CANDIDATES = 1 << 24  # 256 * B**fragment_length: the (puzzle, fragment) pairs a position tests
MIN_EXPECTED_REPORTS, MAX_EXPECTED_REPORTS = 100, 1 << 40
DEFAULT_SKETCH_WIDTH, DEFAULT_SKETCH_DEPTH = 1024, 16
MAX_SKETCH_CELLS = 1 << 20  # sketch_width * sketch_depth: the count table of a group
# PEM's OLH: a public family of hash_count functions (``encoding.olh_seed``), g at most PEM_MAX_RANGE, so a group's
# aggregate is a hash_count x g count table of at most MAX_OLH_CELLS cells; the default hash_count gives
# hash_count * g ~ DEFAULT_OLH_CELLS (a pair of strings collides in a fraction 1/g +- sqrt(1/(g hash_count)) of it)
PEM_MAX_RANGE = 4096
MAX_OLH_CELLS = 1 << 20
MAX_HASH_COUNT = 1 << 16
DEFAULT_OLH_CELLS = 1 << 12
# so a payload (a report's cell: ``device.report_cell``) is below groups * 2 * 2**20 <= 65 * 2**21 < 2**31
assert (MAX_LENGTH + 1) * 2 * max(MAX_OLH_CELLS, MAX_SKETCH_CELLS) < 1 << 31

KIND_NAME = "heavy_hitters"
PEM_FIELDS = ("segment_length", "hash_count")
SFP_FIELDS = ("sketch_width", "sketch_depth", "fragment_length", "hash_family")
FIELDS = frozenset(("max_length", "alphabet", "overflow", "algorithm", "expected_reports") + PEM_FIELDS
                   + SFP_FIELDS)
