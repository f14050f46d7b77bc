"""The Jinja2 environment shared by pages, fragments and embeds."""

from __future__ import annotations

from fastapi.templating import Jinja2Templates

from app.settings import ROOT
from app.web import locale
from app.web.urls import template_url_for

STATIC_VERSION = "4"  # bump with any change under static/: browsers then fetch the new files

templates = Jinja2Templates(directory=ROOT / "templates")
# Templates ship with the code and never change under a running server; checking every included
# file's mtime on each render cost a tenth of an entry page.
templates.env.auto_reload = False
locale.install(templates.env)  # `_()` and `{% trans %}` translate into the rendered page's `lang`
templates.env.globals.update(static_version=STATIC_VERSION, url_for=template_url_for)
