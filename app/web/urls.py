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
    router = request.scope.get("router") or request.scope.get("app")
    paths = getattr(router, PATHS_ATTRIBUTE, None)
    if paths is None:
        paths = LRU(PATHS_KEPT)
        setattr(router, PATHS_ATTRIBUTE, paths)
    key = (name, *sorted(params.items()))
    path = paths.get(key)
    if path is None:
        path = router.url_path_for(name, **params)
        paths.put(key, path)
    return path.make_absolute_url(base_url=request.base_url)


@pass_context
def template_url_for(context: dict, name: str, /, **params: Any) -> URL:
    return url_for(context["request"], name, **params)
