"""Errors the estimators raise on purpose; all under ``EstimatorError`` and so under ``client_sdk.errors.LDPError``
(the whole hierarchy is written out in ``client_sdk.errors``)."""

from __future__ import annotations

from client_sdk.errors import LDPError, PayloadError


class EstimatorError(LDPError, ValueError):
    "Base class of the estimators' errors"


class NoReports(EstimatorError):
    "There are no reports to estimate from (an empty aggregate or window)"


class AggregateMismatch(EstimatorError):
    "Two aggregates (or an aggregate and a batch) of different specs cannot be combined"


class CandidatesRequired(EstimatorError):
    "A Bloom-filter RAPPOR campaign has no candidate strings to decode its reports against"

    field = "candidates"


class SourceError(LDPError):
    "A report's data could not be fetched: unknown campaign, empty window, missing database, unreachable collector"


__all__ = ["AggregateMismatch", "CandidatesRequired", "EstimatorError", "NoReports", "PayloadError", "SourceError"]
