"""The request path is explicit (issue 12, section 3): the view tells authentication what to
load and hands the end user to the services; nothing travels beside the call."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from api import authentication
from api.base import TenantAPIView

ROOT = Path(__file__).resolve().parents[2]
# Where the end user travels from authentication to the services.
PATH_PACKAGES = ("api", "memoryhub/selectors", "memoryhub/services", "memoryhub/memory_tool")


def test_authentication_never_asks_the_view_what_to_load() -> None:
    source = inspect.getsource(authentication)
    assert "parser_context" not in source
    assert "getattr(view" not in source


def test_no_context_variable_or_request_attribute_carries_the_end_user() -> None:
    """The tenant's ContextVar (tenants/context.py) is the one documented exception."""
    files = [path for package in PATH_PACKAGES for path in (ROOT / package).rglob("*.py")]
    assert len(files) > 20
    for name in files:
        for node in ast.walk(ast.parse(name.read_text())):
            assert not (isinstance(node, ast.Name) and node.id == "ContextVar"), name
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    assert not (isinstance(target, ast.Attribute)
                                and isinstance(target.value, ast.Name)
                                and target.value.id == "request"
                                and target.attr not in ("user", "auth")), name


def test_a_view_declares_what_it_writes() -> None:
    from api.views.documents import GlobalDocumentView
    from api.views.memory import MemoryIndexView, MemoryToolView

    # DELETE as PUT: it reads the person with their write lock (a rename must not slip in).
    assert GlobalDocumentView.writing_methods == frozenset({"PUT", "DELETE"})
    assert MemoryIndexView.writing_methods == frozenset()
    # The one view that needs its body to know: its own hook.
    assert MemoryToolView.writes_end_user is not TenantAPIView.writes_end_user
