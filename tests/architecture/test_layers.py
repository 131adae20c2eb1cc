"""Every module of the project has a place in the layers contract (pyproject.toml).

import-linter checks only the modules a contract names; a new module beside the layers
would be free to import anything. So each child of ``memoryhub`` must be a layer (or inside
one), and the other root packages are layers as a whole.
"""

from __future__ import annotations

import tomllib

from tests.architecture.check_cycles import REPO_ROOT, ROOT_PACKAGES, import_graph

# Django's migrations: generated, they import only what the schema needs (tenants.rls).
OUTSIDE_THE_LAYERS = {"memoryhub.migrations"}


def _config() -> dict:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def _layered_modules() -> set[str]:
    [contract] = [c for c in _config()["contracts"] if c["id"] == "layers"]
    return {name.strip("() ") for layer in contract["layers"]
            for name in layer.replace("|", ":").split(":")}


def test_the_contracts_cover_the_root_packages() -> None:
    assert tuple(_config()["root_packages"]) == ROOT_PACKAGES


def test_every_module_sits_in_a_layer() -> None:
    graph = import_graph()
    layered = _layered_modules()
    candidates = {child for root in ROOT_PACKAGES for child in graph.find_children(root)}

    def placed(module: str) -> bool:
        # In a layer, or a package (memoryhub.memory_tool) whose every module is in one.
        if module.split(".")[0] in layered or any(
            module == layer or module.startswith(f"{layer}.") for layer in layered
        ):
            return True
        children = graph.find_children(module)
        return bool(children) and all(placed(child) for child in children)

    unplaced = sorted(module for module in candidates - OUTSIDE_THE_LAYERS if not placed(module))
    assert unplaced == [], "place these in a layer of [tool.importlinter] in pyproject.toml"
