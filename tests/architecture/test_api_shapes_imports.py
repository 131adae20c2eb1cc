"""Who may import what of the API package (issue 12, "One definition of every API shape").

- No view module imports another: what two views share has a module of its own
  (api/representations.py for answers, api/serializers.py for bodies and pages).
- The web pages import only ``api.representations`` of the API (the export file is the API's
  export), and so does ``manage.py export_tenant`` (a person's record is their API export);
  the domain below them (memory tool, services, selectors, store, models, tenants) imports
  nothing of it: identifier rules live in ``memoryhub.identifiers``.

Imports inside functions count as well. ``memoryhub/urls.py`` (the project's URLconf) and
``memoryhub/settings.py`` (dotted paths only) mount the API and are left out.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MOUNTS_THE_API = {"memoryhub/urls.py"}
WRITES_THE_APIS_SHAPES = {"memoryhub/management/commands/export_tenant.py"}


def imported_modules(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def sources(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py")
                  if "migrations" not in p.parts)


def name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_no_view_module_imports_another() -> None:
    found = []
    for path in sources("api/views"):
        own = "api.views." + path.stem
        for module in imported_modules(path):
            if module.startswith("api.views.") and not module.startswith(own):
                found.append((name(path), module))
    assert found == []


def test_the_web_pages_import_only_the_apis_representations() -> None:
    exports = [ROOT / path for path in WRITES_THE_APIS_SHAPES]
    found = [(name(path), module) for path in sources("memoryhub/web") + exports
             for module in imported_modules(path)
             if (module == "api" or module.startswith("api."))
             and not module.startswith("api.representations")]
    assert found == []


def test_the_domain_imports_nothing_of_the_api() -> None:
    found = [(name(path), module)
             for path in sources("memoryhub", "tenants")
             if not name(path).startswith("memoryhub/web/")
             and name(path) not in MOUNTS_THE_API | WRITES_THE_APIS_SHAPES
             for module in imported_modules(path)
             if module == "api" or module.startswith("api.")]
    assert found == []
