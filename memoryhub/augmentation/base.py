"""The one interface every extractor implements, chosen by ``AUGMENTATION_PROVIDER``.

An extractor gets a conversation's messages that augmentation has not seen yet, in order,
and returns candidate facts, each naming the message it came from. It must be
deterministic for the same messages (``rules`` is), so that the stable key of a candidate
(``candidate_key``: the message and the normalised statement) means the same thing on every
run.
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


class Extractor(Protocol):
    name: str

    def extract(self, messages: Sequence[SourceMessage]) -> list[Candidate]: ...
