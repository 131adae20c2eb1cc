"""No module imports another in a cycle, counting imports deferred into functions."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import grimp

from tests.architecture.check_cycles import REPO_ROOT, describe, import_cycles, import_graph


def test_the_project_has_no_import_cycle() -> None:
    graph = import_graph()
    assert [describe(graph, c) for c in import_cycles(graph)] == []


def _package(root: Path, files: dict[str, str]) -> None:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))


def test_a_cycle_closed_by_an_import_inside_a_function_is_found(tmp_path: Path) -> None:
    _package(tmp_path, {
        "loop/__init__.py": "",
        "loop/service.py": """
            def enqueue() -> None:
                from loop.tasks import run  # deferred: Python would not notice the cycle
                run()
            """,
        "loop/tasks.py": "from loop.service import enqueue\n\ndef run() -> None: ...\n",
        "loop/leaf.py": "from loop import service\n",
    })
    sys.path.insert(0, str(tmp_path))
    try:
        graph = grimp.build_graph("loop", cache_dir=None)
    finally:
        sys.path.remove(str(tmp_path))
    assert import_cycles(graph) == [["loop.service", "loop.tasks"]]
    assert "loop.service -> loop.tasks (l.3:" in describe(graph, ["loop.service", "loop.tasks"])


def test_the_script_fails_on_a_cycle_and_passes_without_one() -> None:
    """``make lint`` runs it as a script; its exit status is what fails the lint."""
    script = REPO_ROOT / "tests" / "architecture" / "check_cycles.py"
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            cwd=REPO_ROOT, check=False)
    assert result.returncode == 0, result.stderr
    assert "No import cycles" in result.stdout
