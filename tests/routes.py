"""Every (route, method) the URL conf serves, for the guards that want a test case for each:
the API's cross-tenant matrix (tests/isolation/test_cross_tenant.py), the pages' access
matrix (tests/pages/test_access.py) and the inventory of everything else
(tests/architecture/test_routes.py).

A route is its URL name with its namespace (``api:user``, ``web:tenant_people``); a method
is what its view accepts: a class-based view's handlers (DRF's or Django's), or the list a
function view gives Django's ``require_http_methods`` (``require_GET``, ``require_POST``).
HEAD and OPTIONS are left out: Django and DRF answer them for every view the same way.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver

IMPLICIT_METHODS = {"HEAD", "OPTIONS", "TRACE"}


@dataclass(frozen=True)
class Route:
    name: str  # "namespace:name", or the pattern when the route has no name
    pattern: str  # the whole URL pattern, for messages
    callback: Callable[..., Any]


def routes(namespace: str | None = None) -> list[Route]:
    """The URL conf's routes, all of them or those of one namespace."""
    return [route for route in _walk(get_resolver().url_patterns, "", "")
            if namespace is None or route.name.startswith(f"{namespace}:")]


def _walk(patterns: Iterable[Any], prefix: str, namespace: str) -> Iterator[Route]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = ":".join(n for n in (namespace, pattern.namespace or "") if n)
            yield from _walk(pattern.url_patterns, prefix + str(pattern.pattern), inner)
        elif isinstance(pattern, URLPattern):
            whole = prefix + str(pattern.pattern)
            name = f"{namespace}:{pattern.name}" if namespace else (pattern.name or whole)
            yield Route(name=name, pattern=whole, callback=pattern.callback)


def view_methods(callback: Callable[..., Any]) -> set[str] | None:
    """The HTTP methods the view accepts, or None when it does not declare them."""
    view_class = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
    if view_class is not None:
        return {m.upper() for m in view_class.http_method_names
                if hasattr(view_class, m)} - IMPLICIT_METHODS
    function: Callable[..., Any] | None = callback
    while function is not None:  # through the decorators (functools.wraps keeps __wrapped__)
        declared = inspect.getclosurevars(function).nonlocals.get("request_method_list")
        if declared is not None:
            return {m.upper() for m in declared} - IMPLICIT_METHODS
        function = getattr(function, "__wrapped__", None)
    return None


def served(namespace: str) -> set[tuple[str, str]]:
    """Every (route, method) of the namespace; a view that declares no methods is an error."""
    pairs = set()
    names = [route.name for route in routes(namespace)]
    twice = sorted({name for name in names if names.count(name) > 1})
    assert not twice, f"routes {twice} share a name: give each its own, so each needs cases"
    for route in routes(namespace):
        methods = view_methods(route.callback)
        assert methods is not None, (
            f"{route.name} ({route.pattern}) accepts any method: declare them with "
            "require_http_methods / require_GET / require_POST")
        pairs |= {(route.name, method) for method in methods}
    return pairs


def uncovered(served: set[tuple[str, str]], covered: set[tuple[str, str]],
              where: str) -> list[str]:
    """One line per (route, method) without a case, saying where to add it."""
    return [f"{method} {name} has no case: add one to {where}"
            for name, method in sorted(served - covered)]
