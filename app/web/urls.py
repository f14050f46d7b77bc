"""url_for that remembers: Starlette's walks every route for each link and raises an exception per miss.

A page builds dozens of links (every tag, category and fix), and that walk was most of its cost. The
URL of a route name with given parameters, seen through one base URL, never changes under a running
app, so it is built once.
"""

from __future__ import annotations

from typing import Any

from jinja2 import pass_context
from starlette.datastructures import URL
from starlette.requests import Request

from app.lru import LRU

URLS_ATTRIBUTE = "_kb_urls"  # kept on the router itself: routers are unhashable
URLS_KEPT = 8192


def url_for(request: Request, name: str, /, **params: Any) -> URL:
    """The absolute URL of route ``name``, as ``request.url_for`` would give it."""
    return URL(_absolute(request, name, params))


@pass_context
def template_url_for(context: dict, name: str, /, **params: Any) -> str:
    return _absolute(context["request"], name, params)


def _absolute(request: Request, name: str, params: dict[str, Any]) -> str:
    # keyed by the base URL too: the same route reached through another host or proxy prefix differs
    router = request.scope.get("router") or request.scope.get("app")
    urls = getattr(router, URLS_ATTRIBUTE, None)
    if urls is None:
        urls = LRU(URLS_KEPT)
        setattr(router, URLS_ATTRIBUTE, urls)
    base = str(request.base_url)  # Starlette works it out once per request
    key = (base, name, *sorted(params.items()))
    url = urls.get(key)
    if url is None:
        url = str(router.url_path_for(name, **params).make_absolute_url(base_url=base))
        urls.put(key, url)
    return url
