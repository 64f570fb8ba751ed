"""RAPPOR on the server: aggregate counts, decode them against candidate strings, simulate, and read or write
the reference implementation's CSV files.  See docs/rappor.md."""

from .counts import BitEstimates, check_counts, estimate_bloom_bits, rappor_counts
from .csv_io import (
    RapporFileError,
    read_candidates,
    read_counts_csv,
    read_map_csv,
    read_params_csv,
    write_counts_csv,
    write_map_csv,
    write_params_csv,
)
from .decode import (
    CandidateEstimate,
    RapporResult,
    decode_aggregate,
    decode_rappor,
    detection_frequency,
    estimate_rappor,
)
from .design import CandidateMap
from .simulate import (
    interval_coverage,
    position_table,
    simulate_rappor,
    simulate_rappor_counts,
    simulate_rappor_indices,
)

__all__ = [
    "BitEstimates",
    "CandidateEstimate",
    "CandidateMap",
    "RapporFileError",
    "RapporResult",
    "check_counts",
    "decode_aggregate",
    "decode_rappor",
    "detection_frequency",
    "estimate_bloom_bits",
    "estimate_rappor",
    "interval_coverage",
    "position_table",
    "rappor_counts",
    "read_candidates",
    "read_counts_csv",
    "read_map_csv",
    "read_params_csv",
    "simulate_rappor",
    "simulate_rappor_counts",
    "simulate_rappor_indices",
    "write_counts_csv",
    "write_map_csv",
    "write_params_csv",
]
