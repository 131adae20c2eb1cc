"""The one interface every extractor implements, chosen by ``AUGMENTATION_PROVIDER``.

An extractor gets a conversation's messages that augmentation has not seen yet, in order,
with what is already known (``ExtractionContext``: the conversation's rolling summary and
the person's facts most like these messages), and returns an ``Extraction``: candidate
facts, each naming the message it came from, and the new rolling summary (None: keep the
old one). The stable key of a candidate (``candidate_key``: the message and the normalised
statement) means the same thing on every run; ``rules`` is deterministic, so the same
messages give the same keys; a model may word a statement differently on a rerun, which
merging by normalised text and triple absorbs.

An extractor that cannot answer raises ``ExtractionFailed`` (the run writes nothing, and is
retried; ``memoryhub.services.augmentation``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from memoryhub.facts import normalized_text


@dataclass(frozen=True)
class SourceMessage:
    id: str
    seq: int
    role: str
    content: str
    created_at: datetime


@dataclass(frozen=True)
class Candidate:
    """A fact an extractor proposes; ``subject``/``predicate``/``object`` empty when it could
    not structure it."""

    type: str
    content: str
    message_id: str
    valid_at: datetime
    subject: str = ""
    predicate: str = ""
    object: str = ""
    confidence: float = 0.8


def candidate_key(candidate: Candidate) -> str:
    """The candidate's stable key: the same statement of the same message, on any run."""
    raw = f"{candidate.message_id}\0{normalized_text(candidate.content)}".encode()
    return hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True)
class ExtractionContext:
    """What augmentation already knows when it reads new messages."""

    previous_summary: str = ""
    known_facts: Sequence[str] = ()
    # The conversation's earlier messages' text is not here: the summary stands for them.


@dataclass(frozen=True)
class Extraction:
    candidates: list[Candidate]
    summary: str | None = None


class ExtractionFailed(Exception):
    """The extractor could not give an answer: the provider failed or timed out after its
    retries, or answered with something that is not a valid extraction (``malformed``)."""

    def __init__(self, message: str, *, malformed: bool = False) -> None:
        super().__init__(message)
        self.malformed = malformed


class Extractor(Protocol):
    name: str
    wants_known_facts: bool  # whether the context should hold the person's similar facts

    def extract(self, messages: Sequence[SourceMessage],
                context: ExtractionContext) -> Extraction: ...
