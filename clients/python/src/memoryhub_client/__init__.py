"""MemoryHub's Python client: the REST API (``MemoryHub``, ``AsyncMemoryHub``), Claude's memory
tool (``MemoryHubMemoryTool``), the chat middleware (``with_memory``) and the pre-compaction
flush (``flush_to_memory``). See README.md.

The adapters import their SDK only when first used: ``pip install memoryhub-client`` needs
httpx alone, and the ``anthropic`` and ``openai`` extras bring the SDKs."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from memoryhub_client._hub import AsyncMemoryHub, MemoryHub
from memoryhub_client.errors import MemoryHubError

if TYPE_CHECKING:
    from memoryhub_client.flush import Flushed, flush_to_memory
    from memoryhub_client.memory_tool import AsyncMemoryHubMemoryTool, MemoryHubMemoryTool
    from memoryhub_client.middleware import with_memory

_LAZY = {
    "MemoryHubMemoryTool": "memoryhub_client.memory_tool",
    "AsyncMemoryHubMemoryTool": "memoryhub_client.memory_tool",
    "with_memory": "memoryhub_client.middleware",
    "flush_to_memory": "memoryhub_client.flush",
    "Flushed": "memoryhub_client.flush",
}

__all__ = ["AsyncMemoryHub", "AsyncMemoryHubMemoryTool", "Flushed", "MemoryHub",
           "MemoryHubError", "MemoryHubMemoryTool", "flush_to_memory", "with_memory"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'memoryhub_client' has no attribute {name!r}")
