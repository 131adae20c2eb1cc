"""Recall for one end user's session: who may see what, the query's vector, the prompt block.

``memory_recall`` answers ``POST /api/v1/users/{user_id}/recall``. Memory switched off for
the tenant, for the session's profile or by the person yields no results (as does an end
user nobody has written for). Otherwise the query is embedded with the configured provider
(timed separately, so callers and the benchmark can tell model time from search time) and
``memoryhub.store.recall`` ranks the documents the session can see, facts and messages.

``sources`` chooses what is searched: ``documents`` (the session's visible documents),
``facts`` (the person's valid facts; invalid ones too with ``include_invalid``) and
``messages`` (the person's captured messages, every session's); documents and facts by
default. Each source is ranked exactly by the same score (``memoryhub.store.recall``), its
best ``limit`` taken, and the sources merged by score: the result equals one ranking of
everything.

``context`` is the ``<memori_context>`` block of the contract, built from the results that
pass the threshold (with ``relaxed`` the results also show the ones that did not, for
debugging, but the block never does); empty when none passes. A document's line is
``- <passage> Stated at <last change>``, a fact's ``- <content>. Stated at <valid_at>``
(the contract's), a message's ``- The <role> said: <content> Stated at <created_at>``
(times in UTC, ``%Y-%m-%d %H:%M:%S``).
"""

from __future__ import annotations

import re
import time
import unicodedata
from dataclasses import dataclass, replace
from datetime import datetime
from uuid import UUID

from django.conf import settings
from django.utils import timezone

from memoryhub.infra.embeddings import get_provider, provider_key
from memoryhub.models import Conversation, EndUser, Fact
from memoryhub.selectors.conversations import utc_text
from memoryhub.selectors.documents import block_tag_neutralised, memory_enabled
from memoryhub.store.recall import (
    Ranking,
    RecallHit,
    Search,
    Visibility,
    documents_search,
    records_search,
    searches_run,
)
from tenants.models import Tenant

CONTEXT_HEADER = (
    "<memori_context>\n"
    "Only use the relevant context if it is relevant to the user's query.\n"
    "Relevant context about the user:\n"
)
CONTEXT_FOOTER = "</memori_context>"
CONTEXT_TAG = "memori_context"
_WHITESPACE = re.compile(r"\s+")

_WORD = re.compile(r"\w+")
# English function words: in a question ("what does she eat?") they match every memory.
_STOPWORDS = frozenset(
    """
    a an the and or but if then so than that this these those there here of to in on at by
    for with from into onto as about over under up down out off is am are was were be been
    being do does did done have has had having it its i me my mine we us our you your he him
    his she her hers they them their what which who whom whose when where why how not no
    all any some can could will would shall should may might must just also very know tell
    """.split()
)
_MIN_TERM_CHARS = 2
# Scores are given to this many decimal places (the API's results), and the threshold is
# compared with the score as given: a result shown with score 0.5 passes threshold 0.5,
# although its exact score, a shade under (recency is below 1 a moment after the write),
# did not. The search itself keeps everything within one place of the threshold.
SCORE_PLACES = 4
_SCORE_SLACK = 10.0 ** -SCORE_PLACES
SOURCES = ("documents", "facts", "messages")
DEFAULT_SOURCES = ("documents", "facts")
_KIND_OF_SOURCE = {"facts": "fact", "messages": "message"}


@dataclass(frozen=True)
class Recall:
    results: list[RecallHit]
    context: str
    embed_seconds: float  # the provider call for the query; 0 when it did not run
    search_seconds: float


EMPTY = Recall(results=[], context="", embed_seconds=0.0, search_seconds=0.0)


def query_terms(query: str, *, limit: int) -> list[str]:
    """The query's words for lexical matching: casefolded, deduplicated, stop words dropped
    unless nothing else is left, at most ``limit`` (``memoryhub.store.recall``)."""
    words = _WORD.findall(unicodedata.normalize("NFKC", query).casefold())
    unique = list(dict.fromkeys(words))
    long_enough = [w for w in unique if len(w) >= _MIN_TERM_CHARS] or unique
    content = [w for w in long_enough if w not in _STOPWORDS] or long_enough
    return content[:limit]


def ranking_settings() -> Ranking:
    config = settings.MEMORYHUB_RECALL
    return Ranking(
        lexical_weight=float(config["lexical_weight"]),
        recency_weight=float(config["recency_weight"]),
        max_query_terms=int(config["max_query_terms"]),
        fuzzy_candidates=int(config["fuzzy_candidates"]),
    )


def _visible_end_user(
    *, tenant: Tenant, end_user: EndUser | None, profile: str | None
) -> EndUser | None:
    """The end user whose memory this session may read, or None when it gets no memory."""
    if end_user is None or not memory_enabled(tenant=tenant, end_user=end_user, profile=profile):
        return None
    return end_user


def query_embed(query: str) -> tuple[list[float] | None, str, float]:
    """(vector or None for a query with nothing to embed, provider key, seconds taken)."""
    provider = get_provider()
    started = time.perf_counter()
    vector = provider.embed([query])[0]
    elapsed = time.perf_counter() - started
    if not any(vector):  # the zero vector: no similarity is defined
        return None, provider_key(provider), elapsed
    return vector, provider_key(provider), elapsed


def memory_recall(
    *, tenant: Tenant, end_user: EndUser | None, query: str, limit: int,
    threshold: float | None, relaxed: bool, session_id: str | None, profile: str | None,
    now: datetime | None = None, sources: tuple[str, ...] | list[str] = DEFAULT_SOURCES,
    include_invalid: bool = False,
) -> Recall:
    """``end_user``: the person asking, as read in this transaction (None when unknown)."""
    end_user = _visible_end_user(tenant=tenant, end_user=end_user, profile=profile)
    if end_user is None:
        return EMPTY
    threshold = tenant.recall_threshold if threshold is None else threshold
    ranking = ranking_settings()
    vector, provider, embed_seconds = query_embed(query)
    started = time.perf_counter()
    hits = recall_rank(
        visibility=Visibility(end_user.pk, session_id, profile), query_vector=vector,
        provider=provider, terms=query_terms(query, limit=ranking.max_query_terms), limit=limit,
        threshold=None if relaxed else threshold - _SCORE_SLACK, ranking=ranking,
        now=now or timezone.now(), sources=sources, include_invalid=include_invalid,
    )
    hits = _with_fact_sessions(hits, end_user_id=end_user.pk)
    search_seconds = time.perf_counter() - started
    passing = [hit for hit in hits if round(hit.score, SCORE_PLACES) >= threshold]
    return Recall(hits if relaxed else passing, recall_context(passing), embed_seconds,
                  search_seconds)


def recall_rank(
    *, visibility: Visibility, query_vector: list[float] | None, provider: str,
    terms: list[str], limit: int, threshold: float | None, ranking: Ranking, now: datetime,
    sources: tuple[str, ...] | list[str], include_invalid: bool,
) -> list[RecallHit]:
    """The best ``limit`` of every source (each ranked exactly: ``memoryhub.store.recall``),
    merged by score: the best ``limit`` of one ranking of everything (``make bench-recall``
    checks it against brute force)."""
    searches: list[Search] = []
    if "documents" in sources:
        searches.append(documents_search(
            visibility=visibility, query_vector=query_vector, provider=provider, terms=terms,
            limit=limit, threshold=threshold, ranking=ranking, now=now,
        ))
    for source in SOURCES:
        if source in sources and source in _KIND_OF_SOURCE:
            searches.append(records_search(
                kind=_KIND_OF_SOURCE[source], end_user_id=visibility.end_user_id,
                query_vector=query_vector, provider=provider, terms=terms, limit=limit,
                threshold=threshold, ranking=ranking, now=now, include_invalid=include_invalid,
            ))
    apart_rows = int(settings.MEMORYHUB_RECALL["apart_rows"])
    hits = [hit for found in searches_run(searches, apart_rows=apart_rows) for hit in found]
    hits.sort(key=lambda hit: (-hit.score, -hit.updated_at.timestamp()))  # stable: ties keep order
    return hits[:limit]


def facts_recall(
    *, tenant: Tenant, end_user: EndUser | None, query: str, limit: int, threshold: float | None,
) -> list[tuple[Fact, float]]:
    """Recall over the person's valid facts alone, as the facts themselves with their scores,
    best first (mem0's search, api/mem0): the results of ``memory_recall`` that pass."""
    recall = memory_recall(tenant=tenant, end_user=end_user, query=query, limit=limit,
                           threshold=threshold, relaxed=False, session_id=None, profile=None,
                           sources=("facts",))
    scores = {hit.record_id: hit.score for hit in recall.results}
    facts = {str(fact.id): fact for fact in
             Fact.objects.select_related("end_user").filter(id__in=list(scores))}
    return [(facts[record_id], score) for record_id, score in scores.items()
            if record_id in facts]


def _with_fact_sessions(hits: list[RecallHit], *, end_user_id: int) -> list[RecallHit]:
    """Facts' results with the session of their source conversation (None without one). Only
    the person's own: an app may name any conversation as a fact's source, and another
    person's session must not show through it."""
    wanted = set()
    for hit in hits:
        if hit.kind == "fact" and hit.conversation_id:
            try:
                wanted.add(UUID(hit.conversation_id))
            except ValueError:
                continue  # a source the app named freely: no conversation of ours
    if not wanted:
        return hits
    sessions = {str(pk): session for pk, session in
                Conversation.objects.filter(id__in=wanted, end_user_id=end_user_id)
                .values_list("id", "session_id")}
    return [replace(hit, session_id=sessions.get(hit.conversation_id or ""))
            if hit.kind == "fact" else hit for hit in hits]


def _context_line(hit: RecallHit) -> str:
    text = _WHITESPACE.sub(" ", hit.snippet).strip()
    text = block_tag_neutralised(text, CONTEXT_TAG)
    stated = utc_text(hit.stated_at or hit.updated_at)
    if hit.kind == "fact":
        return f"- {text.rstrip(' .')}. Stated at {stated}\n"
    if hit.kind == "message":
        return f"- The {hit.role} said: {text} Stated at {stated}\n"
    return f"- {text} Stated at {stated}\n"


def recall_context(hits: list[RecallHit]) -> str:
    """The ``<memori_context>`` block for the prompt; empty without hits."""
    if not hits:
        return ""
    return CONTEXT_HEADER + "".join(_context_line(hit) for hit in hits) + CONTEXT_FOOTER
