"""The analysts' dashboard, served by ``serve`` (standalone and leader) at ``/dashboard/`` when ``DASHBOARD`` is on.

:mod:`.pages` serves the page and its three assets (one HTML shell, one script, one style sheet, all in this
package) under a strict Content-Security-Policy; :mod:`.api` adds the two admin read routes the page needs beyond
the admin API (a campaign listing from the stored sums, and a campaign's panel, which its kind's report side
builds: ``estimators.report.panel``).  The page holds no secret in a URL or a cookie: the admin key the analyst
types is kept in the tab's sessionStorage and sent as ``Authorization: Bearer``.
"""

from .api import blueprint as api_blueprint
from .pages import CSP
from .pages import blueprint as pages_blueprint

__all__ = ["CSP", "api_blueprint", "pages_blueprint"]
