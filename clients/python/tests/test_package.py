"""The package as its users install it: httpx alone, the SDKs only for their adapters."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_depends_on_httpx_alone() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert [d.split(">")[0] for d in project["dependencies"]] == ["httpx"]
    assert set(project["optional-dependencies"]) == {"anthropic", "openai"}
    assert (ROOT / "src" / "memoryhub_client" / "py.typed").exists()


def test_the_client_imports_without_either_sdk() -> None:
    script = (
        "import sys; sys.modules['anthropic'] = None; sys.modules['openai'] = None\n"
        "import memoryhub_client as m\n"
        "m.MemoryHub('http://127.0.0.1:9', 'k').close()\n"
        "print(m.with_memory.__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    assert done.stdout == "with_memory\n"
