"""MemoryHub's Python client: the REST API (``MemoryHub``, ``AsyncMemoryHub``), Claude's memory
tool (``memoryhub_client.anthropic``), the chat middleware (``with_memory``) and the
pre-compaction flush (``flush_to_memory``). See README.md."""

from memoryhub_client._hub import AsyncMemoryHub, MemoryHub
from memoryhub_client.errors import MemoryHubError

__all__ = ["AsyncMemoryHub", "MemoryHub", "MemoryHubError"]
__version__ = "0.1.0"
