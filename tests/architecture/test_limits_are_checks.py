"""The tenant's limits are checks: ``memoryhub.services.limits`` raises refusals and imports
no service (the ``memory.pressure`` event of a refusal is recorded by the write service that
catches it), so every writer can call it without an import cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import memoryhub.services.limits as limits


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_limits_import_no_service_and_no_task() -> None:
    upward = {name for name in imported_modules(Path(limits.__file__))
              if name.startswith(("memoryhub.services", "memoryhub.tasks", "memoryhub.infra"))}
    assert upward == set()


def test_the_scope_refusal_carries_what_the_pressure_event_reports() -> None:
    """No database here: given the location's size, the check writes and reads nothing."""
    from memoryhub.models import EndUser
    from tenants.models import Tenant

    with pytest.raises(limits.ScopeOverLimit) as caught:
        limits.scope_bytes_check(
            tenant=Tenant(max_scope_bytes=20), end_user=EndUser(), scope="session",
            scope_key="s1", old_bytes=5, new_bytes=10, used=18,
        )
    refusal = caught.value
    assert (refusal.scope, refusal.scope_key, refusal.used_bytes, refusal.limit_bytes) == (
        "session", "s1", 18, 20)
    assert refusal.message.startswith(
        "Error: this write would take the session 's1' memory to 23 bytes")
