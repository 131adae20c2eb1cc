"""Memory tool inputs, as a model would send them, for the tests that drive the tool."""

from __future__ import annotations

from typing import Any

Command = dict[str, Any]


def create(path: str, text: str = "x", **extra: Any) -> Command:
    return {"command": "create", "path": path, "file_text": text, **extra}


def view(path: str, view_range: list[int] | None = None) -> Command:
    """``view_range`` is sent whenever it is given, even empty (the reference ignores ``[]``)."""
    command: Command = {"command": "view", "path": path}
    if view_range is not None:
        command["view_range"] = view_range
    return command


def str_replace(path: str, old: str, new: str) -> Command:
    return {"command": "str_replace", "path": path, "old_str": old, "new_str": new}


def insert(path: str, line: int, text: str) -> Command:
    return {"command": "insert", "path": path, "insert_line": line, "insert_text": text}


def delete(path: str) -> Command:
    return {"command": "delete", "path": path}


def rename(old: str, new: str) -> Command:
    return {"command": "rename", "old_path": old, "new_path": new}
