"""The dashboard's page and assets: static files of this package, with a strict Content-Security-Policy.

The page needs no key to load (it holds no data: the script asks the admin API for everything, with the key);
every data route it calls is under the admin role.  The policy allows scripts, styles, images and connections
from this origin only, no inline script or style, no framing, no form posts elsewhere."""

from __future__ import annotations

from importlib.resources import files

from flask import Blueprint, Response

from ..errors import Problem

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'")
ASSETS = {"index.html": "text/html; charset=utf-8", "dashboard.js": "text/javascript; charset=utf-8",
          "dashboard.css": "text/css; charset=utf-8"}
SECURITY_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                    "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"}

blueprint = Blueprint("dashboard", __name__)


def asset_bytes(name: str) -> bytes:
    "One of the page's files, read from this package"
    return files(__package__).joinpath("static", name).read_bytes()


@blueprint.get("/dashboard/")
def index() -> Response:
    "The dashboard's HTML shell"
    return _asset("index.html")


@blueprint.get("/dashboard/<asset>")
def asset(asset: str) -> Response:
    "The dashboard's script or style sheet"
    if asset not in ASSETS:
        raise Problem(404, f"no dashboard asset {asset[:100]!r}", field="asset")
    return _asset(asset)


def _asset(name: str) -> Response:
    response = Response(asset_bytes(name), mimetype=ASSETS[name].split(";")[0])
    response.headers["Content-Type"] = ASSETS[name]
    response.headers.update(SECURITY_HEADERS)
    return response
