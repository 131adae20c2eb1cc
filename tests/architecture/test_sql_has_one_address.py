"""Hand-written SQL has one address, ``memoryhub/store/``: no other module of the application
opens a cursor, reaches for ``django.db.connection(s)``, writes ``RawSQL`` or needs an S608
suppression. ruff's banned-api (TID251) checks the imports on every lint; this checks what an
import rule cannot see (a cursor reached another way, a raw expression)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("api", "memoryhub", "tenants")
# The tenant setting itself, the embedded cluster's setup, the adapters and grants.
ALLOWED = {"tenants/context.py", "memoryhub/infra/embedded_db.py", "memoryhub/infra/db.py"}


def application_modules() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if "/migrations/" in name or name.startswith("memoryhub/store/") or name in ALLOWED:
                continue
            found.append(name)
    return found


def sql_access(source: str) -> list[str]:
    """What in ``source`` reaches the database around the ORM and the store."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "django.db":
            found += [f"imports {a.name}" for a in node.names
                      if a.name in ("connection", "connections")]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "cursor":
                found.append(".cursor()")
            elif node.func.attr == "raw" and _is_manager(node.func.value):
                found.append(".objects.raw()")
        elif isinstance(node, ast.Name) and node.id == "RawSQL":
            found.append("RawSQL")
    if "noqa: S608" in source:
        found.append("an S608 suppression")
    return found


def _is_manager(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr.endswith("objects")


def test_the_scan_sees_what_it_looks_for() -> None:
    assert sql_access("from django.db import connection\nconnection.cursor()") == [
        "imports connection", ".cursor()"]
    assert sql_access("Passage.objects.raw('SELECT 1')") == [".objects.raw()"]
    assert sql_access("x = RawSQL('1', [])") == ["RawSQL"]
    assert sql_access("q = f'SELECT {t}'  # noqa: S608") == ["an S608 suppression"]
    assert sql_access("from django.db import transaction\ntransaction.atomic()") == []


@pytest.mark.parametrize("module", application_modules())
def test_no_sql_outside_the_store(module: str) -> None:
    assert sql_access((ROOT / module).read_text()) == []
