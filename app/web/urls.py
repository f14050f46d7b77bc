"""url_for that remembers: Starlette's walks every route for each link and raises an exception per miss.

A page builds dozens of links (every tag, category and fix), and that walk was most of its cost. The
path of a route name with given parameters never changes under a running app, so it is looked up once.
"""

from __future__ import annotations

from typing import Any

from jinja2 import pass_context
from starlette.datastructures import URL
from starlette.requests import Request

from app.lru import LRU

PATHS_ATTRIBUTE = "_kb_url_paths"  # kept on the router itself: routers are unhashable
PATHS_KEPT = 8192


def url_for(request: Request, name: str, /, **params: Any) -> URL:
    """The absolute URL of route ``name``, as ``request.url_for`` would give it."""
    return URL(_absolute(request, name, params))


@pass_context
def template_url_for(context: dict, name: str, /, **params: Any) -> str:
    return _absolute(context["request"], name, params)


def _absolute(request: Request, name: str, params: dict[str, Any]) -> str:
    # keyed by the base URL too: the same route reached through another host or proxy prefix differs
    router = request.scope.get("router") or request.scope.get("app")
    urls = getattr(router, PATHS_ATTRIBUTE, None)
    if urls is None:
        urls = LRU(PATHS_KEPT)
        setattr(router, PATHS_ATTRIBUTE, urls)
    base = str(request.base_url)  # Starlette works it out once per request
    key = (base, name, *sorted(params.items()))
    url = urls.get(key)
    if url is None:
        url = str(router.url_path_for(name, **params).make_absolute_url(base_url=base))
        urls.put(key, url)
    return url
