"""The SDK's reference memory tool, run the way the SDK's tool runner runs it.

``BetaLocalFilesystemMemoryTool`` (anthropic 2.16.0) is the yardstick of the memory tool's
texts: the spec tests, the API's differential test and the domain's text tests all compare with
it byte for byte. What the runner sends the model is ``tool_result_content(result)``, or
``tool_error_content(exc)`` with ``is_error``; any exception other than the tool's own
``ToolError`` it sends the same way, and :func:`reference_outcome` reports it as ``crashed``
so a test can tell the reference's own failures from the texts it promises.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool
from anthropic.lib.tools._beta_functions import ToolError as ReferenceToolError
from anthropic.lib.tools._tool_dispatch import tool_error_content, tool_result_content

from memoryhub.memory_tool.texts import DIRECTORY_SIZE
from tests.memory_commands import Command

# A directory's line in a listing: its size (4K, 60B, ...), a tab, a path ending in "/".
_DIRECTORY_LINE = re.compile(r"^[0-9.]+[BKMG]\t(.*/)$", re.MULTILINE)


class ReferenceOutcome(NamedTuple):
    content: str
    is_error: bool
    crashed: bool  # the reference raised something other than its ToolError


@contextmanager
def reference_tool() -> Iterator[BetaLocalFilesystemMemoryTool]:
    """A reference tool over a fresh temporary directory, removed afterwards."""
    with tempfile.TemporaryDirectory() as base:
        yield BetaLocalFilesystemMemoryTool(base_path=base)


def reference_outcome(reference: BetaLocalFilesystemMemoryTool,
                      command: Command) -> ReferenceOutcome:
    """What the SDK's tool runner puts in the tool_result for ``command``."""
    try:
        return ReferenceOutcome(tool_result_content(reference.call(command)), False, False)
    except ReferenceToolError as exc:
        return ReferenceOutcome(tool_error_content(exc), True, False)
    except Exception as exc:
        return ReferenceOutcome(tool_error_content(exc), True, True)


def prune_empty_directories(root: Path) -> None:
    """Directories exist in MemoryHub only through documents: drop the reference's empty ones."""
    for directory, _, _ in sorted(os.walk(root), key=lambda entry: -len(entry[0])):
        if Path(directory) != root and not os.listdir(directory):
            os.rmdir(directory)


def without_directory_sizes(text: str) -> str:
    """The text with every directory's size masked (a directory view's own line included)."""
    text = _DIRECTORY_LINE.sub(r"<dir>\t\1", text)
    if text.startswith("Here're the files"):
        header, first, *rest = text.split("\n")
        text = "\n".join([header, "<dir>\t" + first.split("\t", 1)[1], *rest])
    return text


def comparable(text: str, root: Path) -> str:
    """Directory sizes are the filesystem's: compared verbatim where the reference's directories
    have the size the memory tool prints (ext4's 4096 bytes), masked elsewhere (tmpfs, btrfs)."""
    if os.stat(root).st_size == DIRECTORY_SIZE:
        return text
    return without_directory_sizes(text)
