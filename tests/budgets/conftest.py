"""Budgets: tests that pin what the code costs (SQL statements, fsyncs, pages, requests, imported modules, the
mutation check's code snippets), not what it does.  See README.md here.

The collector's budgets run over the same fresh app, database and storage as its behaviour tests: those fixtures
are shared from tests/collector/conftest.py, not copied.
"""

from tests.collector.conftest import app, backend, campaign, db_path, http, keys, storage  # noqa: F401
