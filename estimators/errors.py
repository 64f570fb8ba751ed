"""Errors the estimators raise on purpose."""


class NoReports(ValueError):
    "There are no reports to estimate from (an empty aggregate or window)"
