"""Keeping recall's passages in step with documents (owned by the recall work; see issue 5).

``document_indexed`` is called by every document write, inside its transaction.
"""

from __future__ import annotations

from memoryhub.models import MemoryDocument


def document_indexed(*, document: MemoryDocument) -> None:
    """Placeholder until recall lands: passages are built here from the document's content."""
    return None
