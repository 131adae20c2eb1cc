"""Every route of the URL conf has an owner that tests it.

The API's routes (namespace ``api``) have the cross-tenant matrix, which wants a case for
every (route, method) (tests/isolation/test_cross_tenant.py); the pages (namespace ``web``)
have the access matrix, which wants the same (tests/pages/test_access.py). Everything else
is listed here with the test that covers it, so a route added anywhere fails one of the three
until it has its cases.
"""

from __future__ import annotations

from pathlib import Path

from tests.routes import routes

ROOT = Path(__file__).resolve().parents[2]
NAMESPACES = {
    "api": "tests/isolation/test_cross_tenant.py",  # a case per (route, method)
    "mem0": "tests/isolation/test_cross_tenant.py",  # mem0's API (api/mem0): the same
    "web": "tests/pages/test_access.py",  # a case per (route, method)
    "admin": "tests/pages/test_platform_admin.py",  # /platform-admin/: Django's, staff only
}
# Sign-in, sign-up and 2FA (django-allauth), by the package their views come from.
PACKAGES = {"allauth.": "tests/pages/test_sign_in.py"}
# Our own routes outside both namespaces, and the test that covers each.
OTHER_ROUTES = {
    "account_login": "tests/pages/test_sign_in.py",  # allauth's, answering 429 when limited
    "healthz": "tests/platform/test_health.py",
    "readyz": "tests/platform/test_health.py",
    "mcp": "tests/integrations/test_mcp.py",  # its tools' isolation too
    "schema": "tests/api/test_openapi.py",
    "api-docs": "tests/api/test_openapi.py",
    r"^api/(?P<rest>(?s:.*))$": "tests/api/test_error_bodies.py",  # the JSON 404 under /api/
    r"^mem0/(?P<rest>(?s:.*))$": "tests/integrations/test_mem0.py",  # mem0's JSON 404
    "metrics": "tests/platform/test_observability.py",
}


def _owner(route) -> str | None:
    namespace = route.name.split(":")[0] if ":" in route.name else ""
    if namespace in NAMESPACES:
        return NAMESPACES[namespace]
    module = f"{route.callback.__module__}."
    package = next((p for p in PACKAGES if module.startswith(p)), None)
    return PACKAGES[package] if package else OTHER_ROUTES.get(route.name)


def test_every_route_has_an_owner_that_tests_it() -> None:
    orphans = [
        f"{route.name} (/{route.pattern}) is covered by no route guard: put an API route in "
        "api/urls.py (then add its (route, method) cases to CASES in "
        "tests/isolation/test_cross_tenant.py), a page in memoryhub/web/urls.py (then to the "
        "lists of tests/pages/test_access.py); a surface of its own (a namespace) in NAMESPACES "
        "of tests/architecture/test_routes.py with a test that wants a case per (route, "
        "method) (tests/routes.py: served, uncovered); anything else in OTHER_ROUTES there "
        "with the test that covers it"
        for route in routes() if _owner(route) is None
    ]
    assert orphans == [], "\n".join(orphans)


def test_the_listed_routes_and_their_tests_exist() -> None:
    names = {route.name for route in routes()}
    assert set(OTHER_ROUTES) <= names, set(OTHER_ROUTES) - names  # no stale entry
    for test in {*NAMESPACES.values(), *PACKAGES.values(), *OTHER_ROUTES.values()}:
        assert (ROOT / test).is_file(), test
