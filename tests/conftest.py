"""Session-wide: no test touches files beside the repository (tests/outside_reads.py)."""

pytest_plugins = ("tests.outside_reads",)
