"""Repeated collection: the same devices every period, for years, on one budget (Ding, Kulkarni, Yekhanin,
"Collecting Telemetry Data Privately", NeurIPS 2017: 1BitMean with alpha-point rounding, dBitFlip, memoization and
output perturbation).  Device side, standard library only: :mod:`.params`, :mod:`.device`, :mod:`.codec`.

The guarantee, exactly
----------------------
A device memoizes one answer per rounded value and sends, every period, the answer of that period's rounded value.
The rounded value is the rounding point (mean: one of s points, chosen by the device's secret alpha) or the key of
the bucket (histogram: one of the d sampled buckets, or "other" for every bucket not sampled).  Each memoized answer
is an epsilon-LDP randomized response of its rounded value (mean: one bit; histogram: d bits, each with ratio at
most e^(eps/2), at most two of which change between two keys), drawn once and independently of the others.

1. **Unchanged value: epsilon for all time.**  While a device's rounded value does not change it sends the same
   answer every period: everything the collector ever receives from it is one epsilon-LDP report, however many
   periods it reports for.
2. **Changes: epsilon per distinct memoized answer.**  A device whose reports used D distinct memoized answers has
   spent at most D * epsilon over its lifetime: for any two histories of values whose rounded values change at the
   same periods, the likelihood ratio of all the device's reports is at most e^(D epsilon).  D <= s (mean) and
   D <= min(d + 1, k) (histogram), so no device ever spends more than s * epsilon, resp. min(d + 1, k) * epsilon.
   The device ledger charges epsilon when a new answer is memoized and nothing when one is reused, so it holds
   exactly D * epsilon.
3. **What a change reveals.**  Without gamma, a period whose answer differs from the previous one proves that the
   rounded value changed then (not to what: the new answer is itself an epsilon-LDP response).  Equal answers
   prove nothing: two rounded values may have equal answers.
4. **What gamma buys.**  With output perturbation every sent bit is flipped with probability gamma, afresh each
   period.  This is post-processing of the memoized answers, independent of the values: points 1 and 2 stand and
   nothing more is charged.  In addition no sequence of reports is impossible under any history: for two
   histories using the same memoized answers that differ in L periods (a change one period earlier: L = 1), the
   likelihood ratio of all reports is at most ((1 - gamma) / gamma)^(b L), b = 1 (mean) or d (histogram), so the
   time of a change is hidden to that degree.  Averaging a device's reports over many periods recovers its
   memoized answer (point 1 still bounds what that reveals), not its value.  The price: the estimators' variance
   grows by about 1 / (1 - 2 gamma)^2.

The state (alpha, the sampled buckets, the memoized answers) is drawn once from the OS CSPRNG and kept; clearing
the app's state is the only way to redraw it, and every answer used afterwards costs epsilon again.
"""

from .codec import check_payload, check_report, encode_payload, encode_report
from .device import answer_count, bucket_of, draw_buckets, make_report, new_state, rounded_point
from .params import (
    FIELDS,
    KIND_NAME,
    MODES,
    PERIOD_SECONDS,
    RepeatedParams,
    identity,
    json_schema,
    parse_params,
    to_dict,
)
from .periods import period_label_start, period_of, period_start

__all__ = ["FIELDS", "KIND_NAME", "MODES", "PERIOD_SECONDS", "RepeatedParams", "answer_count", "bucket_of",
           "check_payload", "check_report", "draw_buckets", "encode_payload", "encode_report", "identity",
           "json_schema", "make_report", "new_state", "parse_params", "period_label_start", "period_of", "period_start",
           "rounded_point", "to_dict"]
