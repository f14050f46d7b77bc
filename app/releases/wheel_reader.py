"""Read a verl wheel (as a zip, never installed) into its release facts."""

from __future__ import annotations

import ast
import re
import zipfile
from email.parser import HeaderParser
from pathlib import Path

from app.releases.facts import Layout, RaiseSite, ReleaseFacts

STATEMENT_LINES = 4  # lines of a raise/assert statement kept (its message usually fits)
CONDITION_LINES = 3  # lines of the enclosing `if` kept above a raise
# Fixed text a message template needs to name one statement: "... is not supported" (14 letters) is
# raised in a dozen places and would point at the wrong one.
MIN_TEMPLATE_CHARS = 24


def read_wheel_facts(wheel: Path, version: str) -> ReleaseFacts:
    """Requirements from METADATA, functions and raise sites from every ``verl/**.py`` in the wheel."""
    requires: list[str] = []
    functions: dict[str, list[tuple[str, int, int]]] = {}
    raises: dict[str, list[RaiseSite]] = {}
    files: dict[str, int] = {}
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.endswith(".dist-info/METADATA"):
                metadata = HeaderParser().parsestr(archive.read(name).decode("utf-8", "replace"))
                requires = metadata.get_all("Requires-Dist") or []
            elif name.startswith("verl/") and name.endswith(".py"):
                source = archive.read(name).decode("utf-8", "replace")
                files[name] = source.count("\n") + 1
                spans, sites = _layout(name, source)
                if spans:
                    functions[name] = spans
                if sites:
                    raises[name] = sites
    return ReleaseFacts(version, requires, Layout(functions, raises, files))


def _layout(path: str, source: str) -> tuple[list[tuple[str, int, int]], list[RaiseSite]]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return [], []
    lines = source.splitlines()
    spans: list[tuple[str, int, int]] = []
    sites: list[RaiseSite] = []

    def visit(statements: list[ast.stmt], scope: str, condition: str) -> None:
        # Statements only: a raise or a def never sits inside an expression, and skipping expressions
        # makes this several times faster.
        for child in statements:
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{scope}.{child.name}" if scope else child.name
                if not isinstance(child, ast.ClassDef):
                    spans.append((name, child.lineno, child.end_lineno or child.lineno))
                visit(child.body, name, "")
            elif isinstance(child, (ast.Raise, ast.Assert)):
                sites.append(_site(path, lines, child, scope, condition))
            elif isinstance(child, ast.If):
                test = "\n".join(lines[child.lineno - 1 : (child.test.end_lineno or child.lineno)][:CONDITION_LINES])
                visit(child.body, scope, test)
                visit(child.orelse, scope, "")
            else:
                for name in ("body", "orelse", "finalbody"):
                    visit(getattr(child, name, None) or [], scope, condition)
                for handler in getattr(child, "handlers", None) or []:
                    visit(handler.body, scope, condition)
                for case in getattr(child, "cases", None) or []:
                    visit(case.body, scope, condition)

    visit(tree.body, "", "")
    return spans, sites


def _site(path: str, lines: list[str], node: ast.Raise | ast.Assert, scope: str, condition: str) -> RaiseSite:
    end = node.end_lineno or node.lineno
    statement = "\n".join(lines[node.lineno - 1 : min(end, node.lineno - 1 + STATEMENT_LINES)])
    message = node.msg if isinstance(node, ast.Assert) else _raised_message(node)
    return RaiseSite(
        path,
        node.lineno,
        end,
        scope.rsplit(".", 1)[-1] if scope else "<module>",
        _raised_type(node),
        statement,
        condition.strip(),
        _template(message),
    )


def _raised_type(node: ast.Raise | ast.Assert) -> str:
    if isinstance(node, ast.Assert):
        return "AssertionError"
    target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    return ""


def _raised_message(node: ast.Raise) -> ast.AST | None:
    if isinstance(node.exc, ast.Call) and node.exc.args:
        return node.exc.args[0]
    return None


def _template(message: ast.AST | None) -> str:
    """A regex for a message written as a literal, an f-string, or `"..." % x` / `"...".format(x)`."""
    if isinstance(message, ast.Constant) and isinstance(message.value, str):
        parts = [message.value]
    elif isinstance(message, ast.JoinedStr):
        parts = [value.value if isinstance(value, ast.Constant) else None for value in message.values]
    elif (
        isinstance(message, ast.BinOp)
        and isinstance(message.left, ast.Constant)
        and isinstance(message.left.value, str)
    ):
        parts = re.split(r"(%[-#0 +]*\d*(?:\.\d+)?[sdrfigx])", message.left.value)
        parts = [None if re.fullmatch(r"%[-#0 +]*\d*(?:\.\d+)?[sdrfigx]", part) else part for part in parts]
    elif (
        isinstance(message, ast.Call)
        and isinstance(message.func, ast.Attribute)
        and message.func.attr == "format"
        and isinstance(message.func.value, ast.Constant)
        and isinstance(message.func.value.value, str)
    ):
        parts = [
            None if re.fullmatch(r"\{[^{}]*\}", part) else part
            for part in re.split(r"(\{[^{}]*\})", message.func.value.value)
        ]
    else:
        return ""
    literal = "".join(part or "" for part in parts)
    if len(re.sub(r"\W", "", literal)) < MIN_TEMPLATE_CHARS:
        return ""
    return "".join(re.escape(part) if part is not None else ".*?" for part in parts if part != "")
