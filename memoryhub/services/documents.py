"""Writes of memory documents. Every writer goes through here: the memory tool (actor
``assistant``), the documents API (``app``) and the web pages (``user``), each naming itself
with a ``Writer`` (``memoryhub.services.writer``: tenant, actor, the memory tool's turn).

Every write:

- refuses content that is not text (a ``str`` that encodes to UTF-8, so no unpaired
  surrogate, and no NUL), a description that is not one line of at most 200 characters, and
  anything shaped like a credential (content, description or path: ``memoryhub.credentials``);
- checks the tenant's limits (``memoryhub.services.limits``), and records the
  ``memory.pressure`` event of a write the scope limit refuses;
- bumps ``version`` by exactly 1 (1 on create), sets ``updated_by`` and ``bytes``, keeps
  recall's passages in step (saved with a new document by ``document_insert_with_passages``,
  else ``document_passages_rebuild``) and records ``memory.changed`` as its last statement,
  all in the caller's transaction (``tenant_context`` always opens one).

Concurrency. A write first takes the person's *write lock*: ``SELECT ... FOR NO KEY UPDATE``
on the end user's row (``end_user_get_or_create``, ``end_user_find(for_update=True)``, or
``_lock`` here). So every write of one person is serialized: a read-modify-write (str_replace,
insert, append, rename, and create's existence check) cannot lose an update, two creates of
one path cannot race into the unique constraint, each location stays a tree (no path is both a
document and a directory), and the scope total a limit reads stays true until the write
lands. ``NO KEY`` because inserting a document checks its foreign key with ``KEY SHARE``,
which ``FOR UPDATE`` would block. The document rows a change reads are locked as well
(``select_for_update``), against writers that delete without the person's lock (retention).
The ``memory_*`` functions are the memory tool's commands; they expect the caller to hold the
lock already (it took it with the same query that loaded the person).

Errors. Every check runs before anything is modified. A caller that turns a refusal into a
reply (the memory tool answers HTTP 200, and its transaction commits) therefore commits only
what must survive the refusal: the ``memory.pressure`` event of a write refused by
``max_scope_bytes``. A caller that answers with an HTTP error must not roll back the request's
transaction if it wants to keep that event.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from django.db import OperationalError
from django.db.models import Q
from django.utils import timezone

from memoryhub.credentials import credential_message, find_credential
from memoryhub.errors import (
    CredentialDetected,
    DocumentNotFound,
    InvalidPathError,
    InvalidScope,
    MemoryDisabled,
    NotText,
    ToolError,
    VersionMismatch,
)
from memoryhub.identifiers import is_one_line
from memoryhub.memory_tool.texts import (
    already_exists,
    delete_does_not_exist,
    delete_ok,
    delete_root,
    does_not_exist,
    not_a_file,
    rename_destination_exists,
    rename_does_not_exist,
    rename_ok,
    rename_root,
)
from memoryhub.models import Actor, EndUser, MemoryDocument, Scope
from memoryhub.paths import (
    ROOT,
    InvalidPath,
    display_path,
    has_memories_prefix,
    invalid_path_message,
    is_under,
    normalize_path,
    parent_dirs,
    reparent,
)
from memoryhub.selectors.documents import (
    Location,
    directory_location,
    document_resolve,
    end_user_find,
    memory_disabled_reason,
    obstacles_and_location_bytes,
)
from memoryhub.services.events import (
    changed_event,
    changed_event_prepared,
    event_recorded,
    pressure_event,
)
from memoryhub.services.limits import (
    ScopeOverLimit,
    document_size_check,
    scope_bytes_check,
    write_tally_take,
)
from memoryhub.services.passages import document_insert_with_passages, document_passages_rebuild
from memoryhub.services.writer import Writer
from memoryhub.store.documents import document_update
from tenants.models import Tenant

DESCRIPTION_MAX_CHARS = 200

# An edit of the memory tool: old content -> (new content, the text for the model).
Edit = Callable[[str], tuple[str, str]]


# --- end users -----------------------------------------------------------------------------


def end_user_get_or_create(*, tenant: Tenant, user_id: str) -> EndUser:
    """The end user, created on first write; returns it holding the person's write lock.

    Race-safe: ``INSERT ... ON CONFLICT DO NOTHING`` waits for a concurrent insert of the same
    person to commit, and the ``SELECT`` after it (a new statement) then sees that row. A
    forget can delete that row before the ``SELECT`` locks it (it waits for the forget, then
    finds nothing): then the person is created again, so the write lands after the forget on
    a new, empty person, as ``end_user_forget`` promises.
    """
    found = end_user_find(user_id=user_id, for_update=True)
    for _ in range(_CREATE_TRIES):
        if found is not None:
            return found
        EndUser.objects.bulk_create([EndUser(tenant=tenant, user_id=user_id)],
                                    ignore_conflicts=True)
        found = end_user_find(user_id=user_id, for_update=True)
    if found is None:  # forgotten again each time: the database's retry, 503 with Retry-After
        raise OperationalError(f"end user {user_id!r} was deleted as often as it was created")
    return found


# Each try lost only to a forget that committed in between: one more is almost always enough.
_CREATE_TRIES = 5


def _lock(end_user: EndUser) -> EndUser | None:
    """Take the person's write lock, and read the row again (``memory_enabled`` may have
    changed); None when the person was forgotten since ``end_user`` was read without the lock
    (the lock waited for that forget's commit and found no row)."""
    return EndUser.objects.select_for_update(no_key=True).filter(pk=end_user.pk).first()


def memory_disabled_error(reason: str) -> MemoryDisabled:
    return MemoryDisabled(
        f"Error: memory is disabled {reason}; continue without reading or saving memories."
    )


# --- content rules ---------------------------------------------------------------------------


def canonical_path(raw: object) -> str:
    """The stored form of a path as written; ``InvalidPathError`` with the contract's text."""
    try:
        return normalize_path(raw)
    except InvalidPath as exc:
        raise InvalidPathError(str(exc)) from exc


def _shown(canonical: str, like: str) -> str:
    """A canonical path spelled like the caller's own path (with or without ``/memories``)."""
    return display_path(canonical) if has_memories_prefix(like) else canonical


def text_check(content: object) -> str:
    """Content must be text: a str, encodable as UTF-8 (no unpaired surrogate), without NUL."""
    if not isinstance(content, str):
        raise NotText("Error: the content must be a string of text.")
    if "\x00" in content:
        raise NotText(
            "Error: the content contains a NUL character; memory stores text only. "
            "Remove it and try again."
        )
    try:
        content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise NotText(
            "Error: the content is not valid UTF-8 (it contains an unpaired surrogate); "
            "send plain text and try again."
        ) from exc
    return content


def description_check(description: object) -> str | None:
    """``None`` (keep or leave empty), or one line of at most 200 characters."""
    if description is None:
        return None
    if (
        not isinstance(description, str)
        or len(description) > DESCRIPTION_MAX_CHARS
        or not is_one_line(description)
    ):
        raise NotText(
            f"Error: description must be one line of text of at most {DESCRIPTION_MAX_CHARS} "
            "characters; shorten it and try again."
        )
    return description


def credential_check(*texts: str | None) -> None:
    """``CredentialDetected`` when one of the texts is shaped like a credential (documents'
    and facts' rule, whoever writes them: the content, and the path, description, triple or
    metadata stored and shown beside it)."""
    for text in texts:
        name = find_credential(text) if text else None
        if name is not None:
            raise CredentialDetected(credential_message(name))


def _count_write(*, writer: Writer, end_user: EndUser) -> None:
    """``max_writes_per_turn`` counts the memory tool's writes only (see memoryhub.services.limits)."""
    if writer.actor == Actor.ASSISTANT:
        write_tally_take(tenant=writer.tenant, end_user=end_user, turn_id=writer.turn_id,
                         session_id=writer.session_id)


def _write_checks(
    *, writer: Writer, end_user: EndUser, location: Location, label: str, content: str,
    old_bytes: int, scope_bytes: int | None = None,
) -> int:
    """Every rule a new content must pass, cheapest first; returns its UTF-8 size."""
    text_check(content)
    credential_check(content)
    size = len(content.encode("utf-8"))
    document_size_check(tenant=writer.tenant, label=label, size=size)
    try:
        scope_bytes_check(
            tenant=writer.tenant, end_user=end_user, scope=location[0], scope_key=location[1],
            old_bytes=old_bytes, new_bytes=size, used=scope_bytes,
        )
    except ScopeOverLimit as refusal:
        # Recorded before anything of the write is modified: the caller commits the event
        # when it turns the refusal into a reply, and there is nothing else to roll back.
        pressure_event(
            tenant_id=writer.tenant.id, user_id=end_user.user_id, actor=writer.actor,
            scope=refusal.scope, scope_key=refusal.scope_key, used_bytes=refusal.used_bytes,
            limit_bytes=refusal.limit_bytes,
        )
        raise
    _count_write(writer=writer, end_user=end_user)
    return size


def _location_check(scope: str, scope_key: str) -> Location:
    if scope not in Scope.values:
        raise InvalidScope("Error: scope must be one of session, profile, global.")
    if (scope == Scope.GLOBAL) != (scope_key == ""):
        raise InvalidScope("Error: a global document has no scope key; session and profile "
                           "documents need one.")
    return (scope, scope_key)


# --- the tree of one location ----------------------------------------------------------------


def _in(end_user: EndUser, location: Location) -> Q:
    return Q(end_user=end_user, scope=location[0], scope_key=location[1])


def _path_conflict(
    *, end_user: EndUser, location: Location, path: str
) -> tuple[str | None, int]:
    """What keeps a *new* document at ``path`` out of its location, and the location's size.

    ``"exists"`` (a document there), ``"directory"`` (documents below it), or the canonical
    path of a document that would have to be a directory above it; ``None`` when free. The
    size is the location's total bytes, for ``max_scope_bytes`` (read in the same statement).
    """
    ancestors = parent_dirs(path)[1:]  # the root is always a directory
    found, used = obstacles_and_location_bytes(
        end_user=end_user, location=location, path=path, ancestors=ancestors, limit=2
    )
    if path in found:
        return "exists", used
    if any(is_under(other, path) for other in found):
        return "directory", used
    return (found[0] if found else None), used


def _under_a_document(ancestor: str, label: str) -> InvalidPathError:
    return InvalidPathError(
        f"Error: {_shown(ancestor, label)} is a document, not a directory, so {label} cannot "
        "be written under it; choose another path."
    )


# --- the three primitive changes --------------------------------------------------------------


def _create(
    *, tenant: Tenant, end_user: EndUser, location: Location, path: str, content: str,
    size: int, description: str | None, confidence: float | None, actor: str,
) -> MemoryDocument:
    document = MemoryDocument(
        tenant=tenant, end_user=end_user, scope=location[0], scope_key=location[1], path=path,
        content=content, bytes=size, version=1, updated_by=actor, description=description or "",
        confidence=1.0 if confidence is None else confidence,
    )
    event = changed_event_prepared(tenant_id=tenant.id, user_id=end_user.user_id, actor=actor,
                                   change="created", path=path, scope=location[0],
                                   scope_key=location[1])
    event_recorded(tenant_id=tenant.id,
                   saved=document_insert_with_passages(document=document, event=event))
    return document


def _update(
    *, tenant: Tenant, end_user: EndUser, document: MemoryDocument, content: str, size: int,
    description: str | None, confidence: float | None, actor: str,
) -> MemoryDocument:
    document.content = content
    document.bytes = size
    document.version += 1
    document.updated_by = actor
    document.updated_at = timezone.now()
    fields = ["content", "bytes", "version", "updated_by", "updated_at"]
    if description is not None:
        document.description = description
        fields.append("description")
    if confidence is not None:
        document.confidence = confidence
        fields.append("confidence")
    document_update(document=document, fields=fields)
    document_passages_rebuild(document=document)
    changed_event(tenant_id=tenant.id, user_id=end_user.user_id, actor=actor, change="updated",
                  path=document.path, scope=document.scope, scope_key=document.scope_key)
    return document


def _delete(*, tenant: Tenant, end_user: EndUser, documents: Sequence[MemoryDocument],
            actor: str) -> None:
    MemoryDocument.objects.filter(pk__in=[document.pk for document in documents]).delete()
    for document in documents:
        changed_event(tenant_id=tenant.id, user_id=end_user.user_id, actor=actor,
                      change="deleted", path=document.path, scope=document.scope,
                      scope_key=document.scope_key)


# --- the documents API and the web pages ------------------------------------------------------


def document_put(
    *, writer: Writer, end_user: EndUser, scope: str, scope_key: str, path: str, content: str,
    description: str | None = None, confidence: float | None = None,
    expected_version: int | None = None, create_only: bool = False, end_user_locked: bool = False,
) -> tuple[MemoryDocument, bool]:
    """Create or replace the document at ``(scope, scope_key, path)``; returns ``(doc, created)``.

    ``end_user_locked``: the caller read ``end_user`` with the person's write lock in this
    transaction (``end_user_get_or_create``, or the API key's statement for a view that
    declares it writes), so it is current and not read again.

    ``path`` as the caller wrote it (``/memories/a.md`` or ``/a.md``). ``description`` and
    ``confidence`` of ``None`` keep the current values (empty and 1.0 on create).
    ``expected_version`` replaces only that version and ``create_only`` only creates, else
    ``VersionMismatch``. Raises ``InvalidPathError`` (also for the root, a directory, or a path
    below a document), ``InvalidScope``, ``NotText``, ``CredentialDetected``,
    ``DocumentTooLarge``, ``ScopeFull``, ``TooManyWrites`` (actor assistant only),
    ``MemoryDisabled``.
    """
    canonical = canonical_path(path)
    if canonical == ROOT:
        raise InvalidPathError(invalid_path_message(path))
    location = _location_check(scope, scope_key)
    description = description_check(description)
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        raise ValueError("confidence must be between 0 and 1")
    if not end_user_locked:
        locked = _lock(end_user)
        if locked is None:  # forgotten since read: their documents went with them
            if expected_version is not None:
                raise VersionMismatch(f"Error: {path} does not exist, not version "
                                      f"{expected_version}; read it again and retry.")
            # Lands after the forget, on a new, empty person (as end_user_forget promises).
            locked = end_user_get_or_create(tenant=writer.tenant, user_id=end_user.user_id)
        end_user = locked
    reason = memory_disabled_reason(
        tenant=writer.tenant, end_user=end_user,
        profile=scope_key if scope == Scope.PROFILE else None,
    )
    if reason is not None:
        raise memory_disabled_error(reason)
    existing = document_resolve(end_user=end_user, locations=[location], path=canonical,
                                lock=True)
    if existing is not None and create_only:
        raise VersionMismatch(f"Error: {path} already exists (version {existing.version}).")
    if expected_version is not None and (existing is None or existing.version != expected_version):
        current = "does not exist" if existing is None else f"is at version {existing.version}"
        raise VersionMismatch(
            f"Error: {path} {current}, not version {expected_version}; read it again and retry."
        )
    used = existing.scope_bytes if existing is not None else None  # the location's size
    if existing is None:
        conflict, used = _path_conflict(end_user=end_user, location=location, path=canonical)
        if conflict == "directory":
            raise InvalidPathError(
                f"Error: {path} is a directory (documents are stored below it); choose "
                "another path."
            )
        if conflict is not None:
            raise _under_a_document(conflict, path)
    credential_check(canonical, description)
    size = _write_checks(
        writer=writer, end_user=end_user, location=location, label=path, content=content,
        old_bytes=existing.bytes if existing else 0, scope_bytes=used,
    )
    if existing is None:
        created = _create(
            tenant=writer.tenant, end_user=end_user, location=location, path=canonical,
            content=content, size=size, description=description, confidence=confidence,
            actor=writer.actor,
        )
        return created, True
    updated = _update(
        tenant=writer.tenant, end_user=end_user, document=existing, content=content, size=size,
        description=description, confidence=confidence, actor=writer.actor,
    )
    return updated, False


def document_remove(
    *, writer: Writer, end_user: EndUser, document: MemoryDocument,
    expected_version: int | None = None,
) -> None:
    """Delete one document; ``expected_version`` deletes only that version (``VersionMismatch``).

    Allowed while memory is disabled: a person can always remove what is stored about them.
    Raises ``DocumentNotFound`` when it is already gone, or no longer where the caller found
    it: a rename committed while this waited for the lock moved the row to another path, and
    deleting it would delete a document the caller did not name.
    """
    locked = _lock(end_user)
    current = (
        MemoryDocument.objects.select_for_update()
        .filter(pk=document.pk, scope=document.scope, scope_key=document.scope_key,
                path=document.path)
        .first()
        if locked is not None else None  # a person forgotten since: the document too
    )
    if locked is None or current is None:
        raise DocumentNotFound("Error: the document does not exist.")
    if expected_version is not None and current.version != expected_version:
        raise VersionMismatch(
            f"Error: the document is at version {current.version}, not {expected_version}; "
            "read it again and retry."
        )
    _delete(tenant=writer.tenant, end_user=locked, documents=[current], actor=writer.actor)


# --- the memory tool's commands (the caller holds the person's write lock) ---------------------


def memory_create(
    *, writer: Writer, end_user: EndUser, location: Location, path: str, label: str,
    content: str, description: str | None,
) -> MemoryDocument:
    """``create``: a new document only (``File <label> already exists`` for a document, a
    directory or the root, like the reference). ``path`` canonical, ``label`` as written."""
    if path == ROOT:
        raise ToolError(already_exists(label))
    conflict, used = _path_conflict(end_user=end_user, location=location, path=path)
    if conflict in ("exists", "directory"):
        raise ToolError(already_exists(label))
    if conflict is not None:
        raise _under_a_document(conflict, label)
    description = description_check(description)
    credential_check(path, description)
    size = _write_checks(
        writer=writer, end_user=end_user, location=location, label=label, content=content,
        old_bytes=0, scope_bytes=used,
    )
    return _create(tenant=writer.tenant, end_user=end_user, location=location, path=path,
                   content=content, size=size, description=description, confidence=None,
                   actor=writer.actor)


def memory_edit(
    *, writer: Writer, end_user: EndUser | None, locations: Sequence[Location], path: str,
    label: str, edit: Edit,
) -> str:
    """str_replace, insert, append: lock the document the lookup finds, apply ``edit``, save.

    ``edit`` raises ``ToolError`` for the reference's own refusals (no match, bad line).
    """
    if path == ROOT:
        raise ToolError(not_a_file(label))
    if end_user is None:
        raise ToolError(does_not_exist(label))
    document = document_resolve(end_user=end_user, locations=locations, path=path, lock=True)
    if document is None:
        if directory_location(end_user=end_user, locations=locations, path=path):
            raise ToolError(not_a_file(label))
        raise ToolError(does_not_exist(label))
    content, message = edit(document.content)
    size = _write_checks(
        writer=writer, end_user=end_user, location=(document.scope, document.scope_key),
        label=label, content=content, old_bytes=document.bytes,
        scope_bytes=document.scope_bytes,
    )
    _update(tenant=writer.tenant, end_user=end_user, document=document, content=content,
            size=size, description=None, confidence=None, actor=writer.actor)
    return message


def memory_delete(
    *, writer: Writer, end_user: EndUser | None, locations: Sequence[Location], path: str,
    label: str,
) -> str:
    """``delete``: the document the lookup finds, else the directory in its first location
    with everything below it."""
    if path == ROOT:
        raise ToolError(delete_root())
    if end_user is None:
        raise ToolError(delete_does_not_exist(label))
    document = document_resolve(end_user=end_user, locations=locations, path=path, lock=True)
    if document is not None:
        doomed = [document]
    else:
        location = directory_location(end_user=end_user, locations=locations, path=path)
        if location is None:
            raise ToolError(delete_does_not_exist(label))
        doomed = list(
            MemoryDocument.objects.select_for_update()
            .filter(_in(end_user, location), path__startswith=path + "/")
            .only("id", "path", "scope", "scope_key")
        )
    _count_write(writer=writer, end_user=end_user)
    _delete(tenant=writer.tenant, end_user=end_user, documents=doomed, actor=writer.actor)
    return delete_ok(label)


def _taken(*, end_user: EndUser, locations: Sequence[Location], path: str) -> bool:
    """Whether ``path`` names a document or a directory in any of ``locations``."""
    if path == ROOT:
        return True
    where = Q(pk__in=[])
    for location in locations:
        where |= _in(end_user, location)
    return MemoryDocument.objects.filter(
        where, Q(path=path) | Q(path__startswith=path + "/")
    ).exists()


def memory_rename(
    *, writer: Writer, end_user: EndUser | None, locations: Sequence[Location], old: str,
    new: str, old_label: str, new_label: str,
) -> str:
    """``rename`` a document or a directory within the location the lookup finds it in.

    The reference's order of refusals: the root, an existing destination (checked even when
    the source is missing), a missing source. Then this service's own: a directory into
    itself, a destination below a document, a moved path over the path limits.
    """
    if old == ROOT:
        raise ToolError(rename_root())
    if end_user is None:
        if new == ROOT:
            raise ToolError(rename_destination_exists(new_label))
        raise ToolError(rename_does_not_exist(old_label))
    source = document_resolve(end_user=end_user, locations=locations, path=old, lock=True)
    location = (
        (source.scope, source.scope_key) if source is not None
        else directory_location(end_user=end_user, locations=locations, path=old)
    )
    if _taken(end_user=end_user, locations=[location] if location else locations, path=new):
        raise ToolError(rename_destination_exists(new_label))
    if location is None:
        raise ToolError(rename_does_not_exist(old_label))
    if source is None and is_under(new, old):
        raise InvalidPathError(
            f"Error: cannot move {old_label} into itself ({new_label}); choose a destination "
            "outside it."
        )
    conflict, _ = _path_conflict(end_user=end_user, location=location, path=new)
    if conflict is not None and conflict not in ("exists", "directory"):
        raise _under_a_document(conflict, new_label)
    credential_check(new)
    if source is not None:
        moves = [(source, new)]
    else:
        below = (
            MemoryDocument.objects.select_for_update()
            .filter(_in(end_user, location), path__startswith=old + "/")
        )
        moves = [(document, reparent(document.path, old, new)) for document in below]
    for _, moved in moves:
        try:
            normalize_path(moved)
        except InvalidPath as exc:
            raise InvalidPathError(invalid_path_message(_shown(moved, new_label))) from exc
    _count_write(writer=writer, end_user=end_user)
    now = timezone.now()
    renamed: list[tuple[str, MemoryDocument]] = []
    for document, moved in moves:
        renamed.append((document.path, document))
        document.path = moved
        document.version += 1
        document.updated_by = writer.actor
        document.updated_at = now
    MemoryDocument.objects.bulk_update(
        [document for _, document in renamed], ["path", "version", "updated_by", "updated_at"]
    )
    for _, document in renamed:
        document_passages_rebuild(document=document)
    for old_path, document in renamed:
        changed_event(tenant_id=writer.tenant.id, user_id=end_user.user_id, actor=writer.actor,
                      change="renamed", path=document.path, old_path=old_path,
                      scope=document.scope, scope_key=document.scope_key)
    return rename_ok(old_label, new_label)
