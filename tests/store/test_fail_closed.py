"""Every public function of the store refuses to run without a tenant, before any SQL.

The functions are found by introspection (every public module of ``memoryhub.store``, every
public function defined there), so a function added later is checked without anyone
remembering to list it. Each is called with dummy arguments built from its signature (the
required ones only; all of them, flags turned on; all of them, ``None`` where allowed), with
no tenant set and the database out of reach: it must raise ``TenantNotSet``, and
pytest-django's blocker (plus an execute wrapper) turns any database access into a different
error. A function that reads no tenant's rows says so by name (``cross_tenant``) and must be
listed here.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import types
import typing
from collections import abc
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any
from unittest import mock

import pytest
from django.db import connection
from django.db.models import Model

import memoryhub.store
from tenants.context import TenantNotSet, current_tenant_id_or_none

# Functions that need no tenant, each for a reason its module states.
CROSS_TENANT = {"memoryhub.store.health.database_ping",
                "memoryhub.store.health.database_role_powers"}


def store_functions() -> Iterator[Callable[..., Any]]:
    for info in pkgutil.iter_modules(memoryhub.store.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"memoryhub.store.{info.name}")
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if not name.startswith("_") and function.__module__ == module.__name__:
                yield function


FUNCTIONS = sorted(store_functions(), key=lambda f: f"{f.__module__}.{f.__qualname__}")


def qualified(function: Callable[..., Any]) -> str:
    return f"{function.__module__}.{function.__qualname__}"


def dummy(annotation: Any, *, none: bool = False) -> Any:
    """A plausible value of the annotated type (``None`` for an optional one if ``none``); a
    mock for anything unforeseen."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if none and len(options) < len(typing.get_args(annotation)):
            return None
        return dummy(options[0]) if options else None
    if origin is not None:
        if isinstance(origin, type) and issubclass(origin, abc.Mapping):
            return {}
        if isinstance(origin, type) and issubclass(origin, abc.Collection):
            args = [arg for arg in typing.get_args(annotation) if arg is not Ellipsis]
            return [dummy(args[0])] if args else []
        return mock.MagicMock()
    simple = {bool: True, int: 1, float: 0.5, str: "x", datetime: datetime(2026, 1, 1, tzinfo=UTC)}
    if annotation in simple:
        return simple[annotation]
    if isinstance(annotation, type) and issubclass(annotation, Model):
        instance = annotation(pk=1)
        if hasattr(instance, "tenant_id"):
            instance.tenant_id = 1  # type: ignore[attr-defined]
        return instance
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        hints = typing.get_type_hints(annotation)
        return annotation(**{field.name: dummy(hints[field.name])
                             for field in dataclasses.fields(annotation) if field.init})
    return mock.MagicMock()


def calls(function: Callable[..., Any]) -> list[tuple[list[Any], dict[str, Any]]]:
    """(args, kwargs): the required parameters only; every parameter; every parameter with
    ``None`` where the type allows it (each branch must ask for the tenant first)."""
    hints = typing.get_type_hints(function)
    variants = []
    for everything, none in ((False, False), (True, False), (True, True)):
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for name, parameter in inspect.signature(function).parameters.items():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                continue
            if parameter.default is not parameter.empty and not everything:
                continue
            value = dummy(hints.get(name, Any), none=none)
            if parameter.kind is parameter.POSITIONAL_ONLY:
                args.append(value)
            else:
                kwargs[name] = value
        variants.append((args, kwargs))
    return variants


def refuse_sql(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
    raise AssertionError(f"SQL ran without a tenant: {sql[:80]}")


def test_the_store_has_functions_to_check() -> None:
    modules = {function.__module__ for function in FUNCTIONS}
    assert {"memoryhub.store.api_keys", "memoryhub.store.documents", "memoryhub.store.events",
            "memoryhub.store.passages", "memoryhub.store.recall",
            "memoryhub.store.write_tallies"} <= modules
    assert len(FUNCTIONS) >= 20


def test_only_the_listed_functions_run_without_a_tenant() -> None:
    marked = {qualified(f) for f in FUNCTIONS if getattr(f, "cross_tenant", False)}
    assert marked == CROSS_TENANT


@pytest.mark.parametrize("function", [f for f in FUNCTIONS if qualified(f) not in CROSS_TENANT],
                         ids=qualified)
def test_without_a_tenant_nothing_runs(function: Callable[..., Any]) -> None:
    assert current_tenant_id_or_none() is None
    for args, kwargs in calls(function):
        with connection.execute_wrapper(refuse_sql), pytest.raises(TenantNotSet):
            function(*args, **kwargs)
