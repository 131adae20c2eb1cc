"""Fail when any of the project's modules import each other in a cycle.

The layers contract (pyproject.toml, ``lint-imports``) forbids imports upwards between
layers, but not a cycle inside one layer (two services importing each other) or inside a
module outside the layers. This check finds every cycle: it builds grimp's import graph of
the project (the one import-linter uses, which counts imports inside functions, so a cycle
is not hidden by deferring one of its imports) and reports each strongly connected component
of more than one module, with the import lines that close it.

Run by ``make lint`` (``python tests/architecture/check_cycles.py``; exit status 1 on a
cycle) and by tests/architecture/test_cycles.py.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

import grimp

REPO_ROOT = Path(__file__).resolve().parents[2]
ROOT_PACKAGES = ("memoryhub", "tenants", "api")


def import_graph() -> grimp.ImportGraph:
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))  # run as a script, the packages sit beside tests/
    return grimp.build_graph(*ROOT_PACKAGES, cache_dir=None)


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively: the
    graph's depth would exceed Python's recursion limit on a larger project), sorted."""
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []

    def successors(module: str) -> Iterable[str]:
        return sorted(graph.find_modules_directly_imported_by(module))

    for root in sorted(graph.modules):
        if root in index:
            continue
        index[root] = lowlink[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(successors(root)))]
        while work:
            module, pending = work[-1]
            for successor in pending:
                if successor not in index:
                    index[successor] = lowlink[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(successors(successor))))
                    break
                if successor in on_stack:
                    lowlink[module] = min(lowlink[module], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    lowlink[parent] = min(lowlink[parent], lowlink[module])
                if lowlink[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return sorted(components)


def describe(graph: grimp.ImportGraph, component: list[str]) -> str:
    """The component's modules and each import between two of them, with its line."""
    members = set(component)
    lines = [f"{len(component)} modules import each other in a cycle:"]
    for importer in component:
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & members):
            for detail in graph.get_import_details(importer=importer, imported=imported):
                lines.append(f"  {importer} -> {imported} (l.{detail['line_number']}: "
                             f"{detail['line_contents']})")
    return "\n".join(lines)


def main() -> int:
    graph = import_graph()
    cycles = import_cycles(graph)
    for component in cycles:
        print(describe(graph, component), file=sys.stderr)
    if cycles:
        print(f"{len(cycles)} import cycle(s): cut each one (see memoryhub/infra/jobs.py for "
              "enqueueing a task by name).", file=sys.stderr)
        return 1
    print(f"No import cycles among {len(graph.modules)} modules.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
