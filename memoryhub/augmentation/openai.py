"""The ``openai`` extractor: any OpenAI-compatible chat completions endpoint that answers in
JSON (``AUGMENTATION_URL``, ``AUGMENTATION_API_KEY``, ``AUGMENTATION_MODEL``).

The prompt holds the conversation's rolling summary, the person's existing facts most like
the new messages (so the model does not restate them, and names what a new statement
replaces), and the new messages, numbered. The model answers one JSON object::

    {"facts": [{"message": 2, "type": "preference", "content": "User prefers dark mode",
                "subject": "user", "predicate": "prefers", "object": "dark mode",
                "confidence": 0.9}],
     "summary": "..."}

Validation is all or nothing: an answer that is not such an object (not JSON, a fact
without content, an unknown type, a message number that is not one of the new messages, a
confidence outside 0..1, a summary over ``MAX_SUMMARY_CHARS``) is ``ExtractionFailed``
(``malformed``), and the run writes nothing. A fact whose content holds a credential, or is
over ``MAX_FACT_BYTES``, is left out (the same rules as the API's), not the whole answer;
a summary holding a credential is not stored.
Transport failures (timeouts, 429/5xx after their retries with ``Retry-After``) are
``ExtractionFailed`` too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memoryhub.augmentation.base import (
    Candidate,
    Extraction,
    ExtractionContext,
    ExtractionFailed,
    SourceMessage,
)
from memoryhub.credentials import find_credential
from memoryhub.facts import FACT_TYPES, MAX_FACT_BYTES
from memoryhub.infra.chat import ChatClient, ChatError

MAX_SUMMARY_CHARS = 2000
MAX_FIELD_CHARS = 500
MAX_MESSAGE_CHARS = 4000  # of each message in the prompt

SYSTEM_PROMPT = """\
You extract durable facts about the user from a conversation between the user and an \
assistant, for a memory service. Answer with one JSON object and nothing else:
{"facts": [{"message": <the number of the message that states it>, "type": "fact" | \
"preference" | "profile" | "triple" | "process_attribute", "content": "<one short sentence \
about the user, starting with 'User'>", "subject": "user", "predicate": "<a short verb or \
relation, e.g. name, home, employer, job, diet, birthday, likes, dislikes, no_longer_likes, \
wife, dog>", "object": "<what the predicate is about>", "confidence": <0 to 1>}], \
"summary": "<the conversation so far in at most 600 characters>"}
Only what the user says about themselves, as true now: no questions, hypotheticals, wishes, \
plans, or other people's preferences. Do not repeat a known fact unless the user restates \
it. Use an empty list when there is nothing to learn."""


class OpenAIExtractor:
    name = "openai"
    wants_known_facts = True

    def __init__(self, client: ChatClient) -> None:
        self.client = client

    def extract(self, messages: Sequence[SourceMessage], context: ExtractionContext) -> Extraction:
        if not messages:
            return Extraction(candidates=[])
        try:
            reply = self.client.complete_json([
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": prompt(messages, context)},
            ])
        except ChatError as error:
            raise ExtractionFailed(str(error)) from error
        return parsed(reply, messages)


def prompt(messages: Sequence[SourceMessage], context: ExtractionContext) -> str:
    """The user turn of the request: what is known, then the new messages, numbered."""
    known = "\n".join(f"- {fact}" for fact in context.known_facts) or "(none)"
    said = "\n".join(f"[{number}] {m.role}: {m.content[:MAX_MESSAGE_CHARS]}"
                     for number, m in enumerate(messages, start=1))
    return (f"Summary of the conversation so far:\n{context.previous_summary or '(none)'}\n\n"
            f"Facts already known about the user:\n{known}\n\nNew messages:\n{said}")


def parsed(reply: str, messages: Sequence[SourceMessage]) -> Extraction:
    """The extraction the reply states, or ExtractionFailed(malformed) naming what is wrong
    (never quoting the reply: it may hold what the person said)."""
    try:
        body = json.loads(reply)
    except ValueError:
        raise ExtractionFailed("the model's answer is not JSON", malformed=True) from None
    if not isinstance(body, dict) or not isinstance(body.get("facts", []), list):
        raise ExtractionFailed('the model\'s answer is not an object with a "facts" list',
                               malformed=True)
    summary = body.get("summary")
    if summary is not None and (not isinstance(summary, str) or len(summary) > MAX_SUMMARY_CHARS):
        raise ExtractionFailed(f"the model's summary is not a text of at most "
                               f"{MAX_SUMMARY_CHARS} characters", malformed=True)
    candidates = []
    for index, item in enumerate(body.get("facts", []), start=1):
        candidate = _candidate(item, messages, where=f"fact {index}")
        if candidate is not None:
            candidates.append(candidate)
    if summary and find_credential(summary) is not None:
        summary = None  # the API's content rules: not stored, the old summary kept
    return Extraction(candidates=candidates, summary=summary.strip() if summary else None)


def _candidate(item: Any, messages: Sequence[SourceMessage], *, where: str) -> Candidate | None:
    if not isinstance(item, dict):
        raise ExtractionFailed(f"{where} is not an object", malformed=True)
    number = item.get("message")
    if type(number) is not int or not 1 <= number <= len(messages):
        raise ExtractionFailed(f"{where}: message is not a number from 1 to {len(messages)}",
                               malformed=True)
    content = item.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ExtractionFailed(f"{where}: content is not a text", malformed=True)
    kind = item.get("type", "fact")
    if kind not in FACT_TYPES:
        raise ExtractionFailed(f"{where}: type is not one of {', '.join(FACT_TYPES)}",
                               malformed=True)
    confidence = item.get("confidence", 0.8)
    if type(confidence) not in (int, float) or not 0 <= confidence <= 1:
        raise ExtractionFailed(f"{where}: confidence is not a number from 0 to 1", malformed=True)
    fields = {}
    for name in ("subject", "predicate", "object"):
        value = item.get(name) or ""
        if not isinstance(value, str) or len(value) > MAX_FIELD_CHARS:
            raise ExtractionFailed(f"{where}: {name} is not a text of at most "
                                   f"{MAX_FIELD_CHARS} characters", malformed=True)
        fields[name] = value.strip()
    content = content.strip()
    if find_credential(content) is not None or len(content.encode()) > MAX_FACT_BYTES:
        return None  # the API's content rules: left out, the rest kept
    source = messages[number - 1]
    return Candidate(type=kind, content=content, message_id=source.id, valid_at=source.created_at,
                     subject=fields["subject"], predicate=fields["predicate"].lower(),
                     object=fields["object"], confidence=float(confidence))
