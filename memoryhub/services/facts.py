"""Writes of facts (spec: Facts): the API's create, edit and delete, and what augmentation
learns.

Every write takes the person's write lock first (as documents do:
``memoryhub.services.documents``), locks the fact rows it changes, bumps ``version`` by
exactly 1 (1 on create), appends a ``FactVersion`` history row, and records ``fact.changed``
as its last statement. Content rules are the documents' (``text_check``, the credential
filter) plus a size limit of ``MAX_FACT_BYTES``.

Learning (``fact_learn``), for augmentation: a candidate whose stable key
(``candidate_key``) was seen before changes nothing, so the same messages never change
anything twice, and a fact the person or the app edited or deleted is not made again from
the messages it came from. A candidate equal to a valid fact (same normalised text, or same
type, subject, predicate and object) is merged into it: its message joins the fact's source
and the higher confidence is kept (``merged``); so is a near duplicate, a candidate whose
embedding (augmentation embeds what it learns with the configured provider, in its run) has
a cosine similarity of at least ``AUGMENTATION_MERGE_SIMILARITY`` with a valid fact of the
same type (``_near_duplicate`` says which are never merged this way). A candidate that contradicts valid facts
(``memoryhub.facts.contradicts``) invalidates the older ones (``invalid_at`` = its
``valid_at``, history ``invalidated`` naming the new fact); it is itself created invalid
when a contradicting fact is newer than it. Nothing is ever deleted by augmentation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from memoryhub.augmentation.base import Candidate, candidate_key
from memoryhub.errors import FactTimesOutOfOrder, FactTooLarge, NotText, VersionMismatch
from memoryhub.facts import MAX_FACT_BYTES, OPPOSITES, contradicts, normalized_text, same_object
from memoryhub.models import (
    Actor,
    EndUser,
    Fact,
    FactEvent,
    FactSourceKey,
    FactType,
    FactVersion,
    Message,
)
from memoryhub.selectors.conversations import parse_uuid
from memoryhub.selectors.documents import memory_disabled_reason
from memoryhub.services.documents import credential_check, memory_disabled_error, text_check
from memoryhub.services.events import fact_changed_event
from memoryhub.services.metadata import metadata_checked, metadata_texts
from memoryhub.services.passages import record_embedding_schedule
from memoryhub.store.facts import fact_nearest
from tenants.models import Tenant

UNSET: Any = object()
Vector = tuple[list[float], str]  # an embedding and its provider key


def fact_content_check(content: object) -> str:
    """Text, not blank, no credential, at most MAX_FACT_BYTES of UTF-8."""
    text = text_check(content)
    if not text.strip():
        raise NotText("Error: a fact's content must not be empty.")
    credential_check(text)
    size = len(text.encode("utf-8"))
    if size > MAX_FACT_BYTES:
        raise FactTooLarge(f"Error: the fact is {size} bytes, over the limit of {MAX_FACT_BYTES} "
                           "bytes; a fact is one short statement.")
    return text


@dataclass
class FactInput:
    content: str
    type: str = "fact"
    subject: str = ""
    predicate: str = ""
    object: str = ""
    process: str = ""
    confidence: float = 1.0
    valid_at: datetime | None = None
    invalid_at: datetime | None = None  # a fact that was true once (an import of history)
    source: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)  # the app's own (mem0's metadata)


def _source(conversation_id: str | None, message_ids: list[str]) -> dict[str, Any]:
    return {"conversation_id": conversation_id, "message_ids": message_ids}


def _history(fact: Fact, event: str, actor: str, related: UUID | None = None, *,
             content: str | None = None) -> None:
    FactVersion.objects.create(
        tenant_id=fact.tenant_id, end_user_id=fact.end_user_id, fact_id=fact.id,
        version=fact.version, event=event,
        content=fact.content if content is None else content, actor=actor,
        related_fact_id=related, at=fact.updated_at,
    )


def _changed(fact: Fact, *, user_id: str, actor: str, change: str) -> None:
    fact_changed_event(tenant_id=fact.tenant_id, user_id=user_id, actor=actor, change=change,
                       fact_id=str(fact.id), fact_type=fact.type)


def _valid_duplicate(end_user: EndUser, normalized: str, fact_type: str,
                     process: str) -> Fact | None:
    return (Fact.objects.select_for_update(of=("self",))
            .filter(_of_the_process(fact_type, process), end_user=end_user,
                    normalized=normalized, invalid_at__isnull=True)
            .order_by("id").first())


def _of_the_process(fact_type: str, process: str) -> Q:
    """A process attribute is a tag of one process (the contract's ``onboarding-complete``):
    the same tag of another process is another fact, never its duplicate."""
    return Q(process=process) if fact_type == FactType.PROCESS_ATTRIBUTE else Q()


def _insert(*, end_user: EndUser, data: FactInput, actor: str, invalid_at: datetime | None = None,
            vector: Vector | None = None) -> Fact:
    """``vector``: the content's embedding (vector, provider key) when the caller has it;
    else the embedding worker is asked for one on commit."""
    now = timezone.now()
    fact = Fact(
        tenant_id=end_user.tenant_id, end_user=end_user, type=data.type, content=data.content,
        normalized=normalized_text(data.content), subject=data.subject,
        predicate=data.predicate, object=data.object, process=data.process,
        confidence=data.confidence, valid_at=data.valid_at or now, invalid_at=invalid_at,
        source=data.source or _source(None, []), metadata=data.metadata, version=1,
        updated_by=actor,
        embedding=None if vector is None else vector[0],
        embedding_provider="" if vector is None else vector[1],
    )
    fact.save(force_insert=True)
    _history(fact, FactEvent.CREATED, actor)
    if vector is None:
        record_embedding_schedule(tenant_id=fact.tenant_id, kind="fact", record_id=fact.id)
    return fact


# --- the API's writes ------------------------------------------------------------------------


def fact_create(*, tenant: Tenant, end_user: EndUser, data: FactInput, actor: str) -> tuple[Fact, bool]:
    """Create a fact, or return the valid fact with the same normalised text (False); a fact
    that is no longer true (``invalid_at``) is always a new one, as augmentation's are."""
    reason = memory_disabled_reason(tenant=tenant, end_user=end_user, profile=None)
    if reason is not None:
        raise memory_disabled_error(reason)
    data.content = fact_content_check(data.content)
    data.metadata = metadata_checked(data.metadata, "metadata")
    credential_check(data.subject, data.predicate, data.object, *metadata_texts(data.metadata))
    if data.valid_at is None and data.invalid_at is not None:
        # A fact of the past with no time it was stated: it was true until then at least, not
        # stated now, after it stopped being true.
        data.valid_at = min(timezone.now(), data.invalid_at)
    _times_in_order(data.valid_at or timezone.now(), data.invalid_at)
    if data.invalid_at is None:
        existing = _valid_duplicate(end_user, normalized_text(data.content), data.type,
                                    data.process)
        if existing is not None:
            return existing, False
    fact = _insert(end_user=end_user, data=data, actor=actor, invalid_at=data.invalid_at)
    _changed(fact, user_id=end_user.user_id, actor=actor, change=FactEvent.CREATED)
    return fact, True


def _times_in_order(valid_at: datetime, invalid_at: datetime | None) -> None:
    if invalid_at is not None and invalid_at < valid_at:
        raise FactTimesOutOfOrder(
            f"invalid_at ({invalid_at.isoformat()}) is before valid_at ({valid_at.isoformat()}):"
            " a fact can stop being true only after it was stated.")


def _version_check(fact: Fact, expected_version: int | None) -> None:
    if expected_version is not None and fact.version != expected_version:
        raise VersionMismatch("If-Match: the fact is not at that version.")


def fact_update(
    *, end_user: EndUser, fact: Fact, actor: str, expected_version: int | None = None,
    content: Any = UNSET, confidence: Any = UNSET, invalid_at: Any = UNSET,
    metadata: Any = UNSET, valid_at: Any = UNSET,
) -> Fact:
    """Edit a fact (``fact`` read with ``for_update``); one version, one history row, one
    event: ``invalidated`` when it becomes invalid, else ``updated``. No change: no write.
    ``valid_at``: when it was stated (mem0's ``timestamp``, api/mem0)."""
    _version_check(fact, expected_version)
    changed = False
    if content is not UNSET:
        content = fact_content_check(content)
        if content != fact.content:
            fact.content, fact.normalized, changed = content, normalized_text(content), True
            fact.embedding, fact.embedding_provider = None, ""  # the worker embeds the new text
            record_embedding_schedule(tenant_id=fact.tenant_id, kind="fact", record_id=fact.id)
            _triple_kept_true(fact)
    if confidence is not UNSET and confidence != fact.confidence:
        fact.confidence, changed = confidence, True
    if metadata is not UNSET:
        metadata = metadata_checked(metadata, "metadata")
        credential_check(*metadata_texts(metadata))
        if metadata != fact.metadata:
            fact.metadata, changed = metadata, True
    if valid_at is not UNSET and valid_at != fact.valid_at:
        fact.valid_at, changed = valid_at, True
    invalidated = False
    if invalid_at is not UNSET and invalid_at != fact.invalid_at:
        invalidated = invalid_at is not None and fact.invalid_at is None
        fact.invalid_at, changed = invalid_at, True
    if not changed:
        return fact
    fact.version += 1
    fact.updated_by = actor
    fact.save()
    event = FactEvent.INVALIDATED if invalidated else FactEvent.UPDATED
    _history(fact, event, actor)
    _changed(fact, user_id=end_user.user_id, actor=actor, change=event)
    return fact


def _triple_kept_true(fact: Fact) -> None:
    """A triple describes the text it was taken from: an edit that no longer names its object
    ("lives in Lisbon" made "lives in Porto") leaves the fact unstructured. Kept, the old
    triple would be shown beside the new text, and a later "I live in Lisbon" would merge into
    the edited fact by it (or a move to Porto contradict it)."""
    if fact.object and normalized_text(fact.object) not in fact.normalized:
        fact.subject = fact.predicate = fact.object = ""


def fact_delete(*, end_user: EndUser, fact: Fact, actor: str, expected_version: int | None = None) -> None:
    """Delete a fact. Its history stays, as what happened and when (the person's download
    shows it), but without the fact's text: every version of it is blanked, so deleting "I'm
    pregnant" leaves no copy of it behind (it stayed in the history until the person was
    forgotten). Augmentation's keys for it stay too, so it is not learnt again."""
    _version_check(fact, expected_version)
    fact.version += 1
    fact.updated_at = timezone.now()
    FactVersion.objects.filter(end_user_id=fact.end_user_id, fact_id=fact.id).update(content="")
    _history(fact, FactEvent.DELETED, actor, content="")
    Fact.objects.filter(id=fact.id).delete()
    _changed(fact, user_id=end_user.user_id, actor=actor, change=FactEvent.DELETED)


def facts_forget(*, end_user: EndUser, actor: str) -> int:
    """Delete every fact of the person (valid or not), each as ``fact_delete`` does (the caller
    holds the person's write lock); their documents and conversations stay. How many."""
    facts = list(Fact.objects.select_for_update(of=("self",)).filter(end_user=end_user)
                 .order_by("id"))
    for fact in facts:
        fact_delete(end_user=end_user, fact=fact, actor=actor)
    return len(facts)


# --- learning ----------------------------------------------------------------------------------


def _same(fact: Fact, candidate: Candidate, normalized: str, process: str) -> bool:
    if candidate.type == FactType.PROCESS_ATTRIBUTE and fact.process != process:
        return False  # _of_the_process
    if fact.normalized == normalized:
        return True
    return bool(candidate.predicate) and (
        fact.type == candidate.type and fact.subject == candidate.subject
        and fact.predicate == candidate.predicate
        and same_object(fact.predicate, fact.object, candidate.object)
    )


def _near_duplicate(end_user: EndUser, candidate: Candidate, vector: Vector | None,
                    process: str) -> Fact | None:
    """The valid fact of the candidate's type whose vector is at least
    ``AUGMENTATION_MERGE_SIMILARITY`` similar to the candidate's, locked; None without a
    vector or such a fact. Never a structured fact when the candidate is structured too: those
    compare by their triple ("likes tea" and "likes coffee" are two facts, "lives in Lisbon"
    and "lives in Porto" a contradiction, however similar their words)."""
    if vector is None:
        return None
    nearest = fact_nearest(end_user_id=end_user.pk, type_=candidate.type, vector=vector[0],
                           provider=vector[1])
    if nearest is None or nearest[1] < settings.AUGMENTATION_MERGE_SIMILARITY:
        return None
    fact = (Fact.objects.select_for_update(of=("self",))
            .filter(_of_the_process(candidate.type, process), id=nearest[0],
                    invalid_at__isnull=True).first())
    if fact is None or (candidate.predicate and fact.predicate):
        return None  # two structured facts: contradictions and merges go by the triple
    return fact


def fact_learn(
    *, end_user: EndUser, candidate: Candidate, conversation_id: str, process: str = "",
    vector: Vector | None = None,
) -> str:
    """Apply one candidate of augmentation (the caller holds the person's write lock);
    returns what happened: ``known``, ``merged`` or ``created``. ``vector``: the candidate
    content's embedding, for the near-duplicate merge and the new fact's vector."""
    key = candidate_key(candidate)
    if FactSourceKey.objects.filter(end_user=end_user, key=key).exists():
        return "known"
    normalized = normalized_text(candidate.content)
    predicates = [candidate.predicate, *OPPOSITES.get(candidate.predicate, ())]
    related = list(
        Fact.objects.select_for_update(of=("self",))
        .filter(Q(normalized=normalized) | Q(subject=candidate.subject, predicate__in=predicates)
                if candidate.predicate else Q(normalized=normalized),
                end_user=end_user, invalid_at__isnull=True)
        .order_by("id")
    )
    same = next((fact for fact in related if _same(fact, candidate, normalized, process)), None)
    if same is None:
        same = _near_duplicate(end_user, candidate, vector, process)
    if same is not None:
        _merge(same, candidate, end_user=end_user, conversation_id=conversation_id)
        outcome, fact_id = "merged", same.id
    else:
        fact_id = _learn_new(end_user, candidate, related, conversation_id, process, vector).id
        outcome = "created"
    FactSourceKey.objects.create(tenant_id=end_user.tenant_id, end_user=end_user, key=key,
                                 fact_id=fact_id)
    return outcome


def _merge(fact: Fact, candidate: Candidate, *, end_user: EndUser, conversation_id: str) -> None:
    message_ids = list(fact.source.get("message_ids") or [])
    if candidate.message_id in message_ids and candidate.confidence <= fact.confidence:
        return
    if candidate.message_id not in message_ids:
        message_ids.append(candidate.message_id)
    # A fact the app made has no conversation: its first source message's becomes it.
    fact.source = {**fact.source, "message_ids": message_ids,
                   "conversation_id": fact.source.get("conversation_id") or conversation_id}
    fact.confidence = max(fact.confidence, candidate.confidence)
    fact.version += 1
    fact.save()
    _history(fact, FactEvent.MERGED, Actor.AUGMENTATION)
    _changed(fact, user_id=end_user.user_id, actor=Actor.AUGMENTATION, change=FactEvent.MERGED)


def _learn_new(end_user: EndUser, candidate: Candidate, related: list[Fact],
               conversation_id: str, process: str, vector: Vector | None) -> Fact:
    contradicted = [
        fact for fact in related
        if fact.subject == candidate.subject and contradicts(
            predicate=candidate.predicate, object_=candidate.object,
            other_predicate=fact.predicate, other_object=fact.object)
    ]
    newer = sorted((fact for fact in contradicted if fact.valid_at > candidate.valid_at),
                   key=lambda fact: fact.valid_at)
    fact = _insert(end_user=end_user, actor=Actor.AUGMENTATION,
                   invalid_at=newer[0].valid_at if newer else None,
                   vector=vector, data=FactInput(
                       content=candidate.content, type=candidate.type, subject=candidate.subject,
                       predicate=candidate.predicate, object=candidate.object, process=process,
                       confidence=candidate.confidence, valid_at=candidate.valid_at,
                       source=_source(conversation_id, [candidate.message_id])))
    _changed(fact, user_id=end_user.user_id, actor=Actor.AUGMENTATION, change=FactEvent.CREATED)
    if newer:  # stated before what contradicts it, and learnt after: its history says by what
        fact.version += 1
        fact.save(update_fields=["version"])
        _history(fact, FactEvent.INVALIDATED, Actor.AUGMENTATION, related=newer[0].id)
    for old in contradicted:
        if old.valid_at <= candidate.valid_at:
            old.invalid_at = candidate.valid_at
            old.version += 1
            old.save()
            _history(old, FactEvent.INVALIDATED, Actor.AUGMENTATION, related=fact.id)
            _changed(old, user_id=end_user.user_id, actor=Actor.AUGMENTATION,
                     change=FactEvent.INVALIDATED)
    return fact


# --- a conversation deleted --------------------------------------------------------------------


def facts_sources_drop(*, user_id: str, message_ids: Sequence[UUID | str], actor: str) -> tuple[int, int]:
    """What augmentation took from these messages goes with them (spec: "DELETE also removes
    what augmentation took only from it"): a fact augmentation made, and nobody edited since,
    whose every source message is among them is deleted (``deleted``, its keys with it: the
    messages they named are gone); any other fact they are sources of only loses these
    (``updated``; its ``conversation_id`` becomes the one of its first remaining message): one
    with other sources, one the app made, which augmentation only merged a message into (or
    whose source the app named itself), and one the person or the app edited, which is theirs
    now (their edit wins over augmentation). A fact with no source messages is not touched.
    Returns (deleted, updated)."""
    gone = {str(message_id) for message_id in message_ids}
    if not gone:
        return 0, 0
    touched = list(
        Fact.objects.select_for_update(of=("self",))
        .filter(end_user__user_id=user_id, source__message_ids__has_any_keys=sorted(gone))
        .order_by("id")
    )
    deleted, updated = [], 0
    for fact in touched:
        kept = [m for m in fact.source.get("message_ids") or [] if m not in gone]
        # updated_by: the last writer but augmentation's merges, which keep it; so
        # augmentation's only while augmentation made the fact and nobody else changed it.
        if not kept and fact.updated_by == Actor.AUGMENTATION:
            deleted.append(fact.id)
            fact.version += 1
            fact.updated_at = timezone.now()
            _history(fact, FactEvent.DELETED, actor)
            _changed(fact, user_id=user_id, actor=actor, change=FactEvent.DELETED)
            continue
        # The API takes any string as a source message id (the app's own, "m-1"): one that is
        # no id of ours names no message, and so no conversation.
        first = parse_uuid(kept[0]) if kept else None
        conversation_id = None if first is None else (
            Message.objects.filter(id=first, end_user_id=fact.end_user_id)
            .values_list("conversation_id", flat=True).first())
        fact.source = _source(str(conversation_id) if conversation_id else None, kept)
        fact.version += 1
        fact.updated_by = actor
        fact.save()
        _history(fact, FactEvent.UPDATED, actor)
        _changed(fact, user_id=user_id, actor=actor, change=FactEvent.UPDATED)
        updated += 1
    if deleted:
        Fact.objects.filter(id__in=deleted).delete()
        FactSourceKey.objects.filter(fact_id__in=deleted).delete()
        updated += _invalidations_undone(user_id=user_id, by=deleted, actor=actor)
    return len(deleted), updated


def _invalidations_undone(*, user_id: str, by: Sequence[UUID], actor: str) -> int:
    """What augmentation did with the deleted facts goes with them too: a fact they
    invalidated (or that was learnt already invalid because of one of them) is true again
    (``invalid_at`` null, ``updated``), if nothing changed it since and no valid fact still
    contradicts it. "I moved to Porto" deleted with its conversation leaves "I live in
    Lisbon" true, as it was before. How many."""
    gone = set(by)
    candidates = list(
        Fact.objects.select_for_update(of=("self",))
        .filter(end_user__user_id=user_id, invalid_at__isnull=False,
                id__in=FactVersion.objects.filter(event=FactEvent.INVALIDATED,
                                                  actor=Actor.AUGMENTATION,
                                                  related_fact_id__in=list(gone))
                .values("fact_id"))
        .order_by("id")
    )
    revived = 0
    for fact in candidates:
        last = (FactVersion.objects.filter(end_user_id=fact.end_user_id, fact_id=fact.id)
                .order_by("-id").first())
        if (last is None or last.event != FactEvent.INVALIDATED or last.related_fact_id not in gone
                or last.actor != Actor.AUGMENTATION or last.version != fact.version):
            continue  # changed since it was invalidated: whoever did it decided
        predicates = [fact.predicate, *OPPOSITES.get(fact.predicate, ())]
        still = Fact.objects.filter(end_user_id=fact.end_user_id, invalid_at__isnull=True,
                                    subject=fact.subject, predicate__in=predicates)
        if fact.predicate and any(
                contradicts(predicate=other.predicate, object_=other.object,
                            other_predicate=fact.predicate, other_object=fact.object)
                for other in still):
            continue
        fact.invalid_at = None
        fact.version += 1
        fact.save()
        _history(fact, FactEvent.UPDATED, actor)
        _changed(fact, user_id=user_id, actor=actor, change=FactEvent.UPDATED)
        revived += 1
    return revived
