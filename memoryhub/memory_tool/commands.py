"""The memory tool: one command of Claude's ``memory_20250818`` for one end user (API v1, "The
memory tool").

``tool_run`` parses the tool input and its context fields, resolves the scopes to look in,
calls one service or selector, and returns ``(content, is_error)``: what the SDK's tool runner
would put in the ``tool_result``. Every outcome of the command itself is such a pair, never an
exception: the reference's texts (``memoryhub.memory_tool.texts``) for what the reference does, this
service's own ``Error: ...`` texts for the rest (malformed input, limits, disabled memory,
credentials, bad paths). Like the runner, unpaired surrogates in the text become U+FFFD.

Paths in texts are echoed as the caller wrote them; documents are stored under the canonical
form (``memoryhub.paths``). Scope (API v1, "Scope"): with ``scope`` the command works there
only; without it ``create`` writes to global and every other command looks in session, then
profile, then global (``memoryhub.selectors.documents``).

Decisions where the contract is silent: ``append`` to a missing document answers like
``insert`` (does not exist) rather than creating it; ``turn_id`` follows the session_id rules
(1-128 characters of ``A-Z a-z 0-9 . _ @ : + | -``); an empty string for a context field
means it is absent, as in the query strings.

The arguments are read as the reference reads them (``reference_input``): its ``call`` validates
the input against the SDK's pydantic model of the command, lax, and runs the command with the
coerced values when that succeeds (``insert_line: "2"`` or ``2.0`` is line 2, ``view_range:
["1", "3"]`` is ``[1, 3]``, ``true`` is 1), with the input as sent otherwise; only what
it could not run is this service's own error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import transaction
from pydantic import BaseModel, ConfigDict, ValidationError

from memoryhub.errors import InvalidScope, MemoryRefusal, ToolError, echo
from memoryhub.identifiers import (
    PROFILE_RULE,
    USER_ID_RULE,
    is_profile_name,
    is_session_id,
)
from memoryhub.memory_tool.edits import apply_append, apply_insert, apply_str_replace
from memoryhub.memory_tool.texts import (
    already_exists,
    append_ok,
    check_view_range,
    create_ok,
    directory_entries,
    directory_view,
    does_not_exist,
    file_view,
    truncate_view,
    well_formed,
)
from memoryhub.models import EndUser, Scope
from memoryhub.paths import ROOT
from memoryhub.selectors.documents import (
    GLOBAL,
    Location,
    end_user_find,
    lookup_locations,
    memory_disabled_reason,
    path_view,
)
from memoryhub.services.documents import (
    canonical_path,
    end_user_get_or_create,
    memory_create,
    memory_delete,
    memory_disabled_error,
    memory_edit,
    memory_rename,
)
from memoryhub.services.limits import ScopeOverLimit
from memoryhub.services.writer import Writer
from tenants.models import Tenant

ACTOR = "assistant"
COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename", "append", "replace")
READ_COMMANDS = frozenset({"view"})
_ID_RULE = USER_ID_RULE  # session_id and turn_id follow the user_id rule
T = TypeVar("T")


@dataclass(frozen=True)
class ToolContext:
    """The optional context fields next to the tool input."""

    session_id: str | None = None
    profile: str | None = None
    scope: str | None = None
    turn_id: str | None = None

    def _explicit(self) -> Location:
        keys: dict[str | None, str | None] = {Scope.SESSION: self.session_id, Scope.PROFILE: self.profile}
        key = keys.get(self.scope, "")
        return (self.scope, key or "")  # type: ignore[return-value]

    def lookup(self) -> list[Location]:
        """Where a command other than create looks, first match first."""
        if self.scope:
            return [self._explicit()]
        return lookup_locations(session_id=self.session_id, profile=self.profile)

    def create_location(self) -> Location:
        return self._explicit() if self.scope else GLOBAL


@dataclass(frozen=True)
class Call:
    """One command being run: who for, by whom, with what input."""

    writer: Writer  # the tenant, the assistant, the context's turn and session
    user_id: str
    end_user: EndUser | None  # locked when the command writes
    context: ToolContext
    command: str
    payload: Mapping[str, Any]


def tool_run(
    *, tenant: Tenant, user_id: str, end_user: EndUser | None, end_user_locked: bool,
    payload: Mapping[str, Any],
) -> tuple[str, bool]:
    """Run one memory tool command for ``user_id``; returns ``(content, is_error)``.

    ``end_user`` is that person as the caller read them in this transaction (None when
    unknown), with the person's write lock if ``end_user_locked``: the API reads them with its
    key, locked when ``command_writes(payload)``. A command that writes a person read without
    the lock reads them again with it. Runs inside ``tenant_context``; a read never creates
    the person.
    """
    try:
        message = _run(tenant=tenant, user_id=user_id, end_user=end_user,
                       end_user_locked=end_user_locked, payload=payload)
        return well_formed(message), False
    except MemoryRefusal as exc:
        return well_formed(exc.message), True


def _run(
    *, tenant: Tenant, user_id: str, end_user: EndUser | None, end_user_locked: bool,
    payload: Mapping[str, Any],
) -> str:
    # Memory switched off answers "memory is disabled" whatever else is wrong with the input
    # (API v1: "every memory tool command answers Error: memory is disabled ..."): the model
    # must learn that first, not fix its arguments and try again. The tenant's and the
    # person's switches need no input; the profile's needs a valid profile name.
    command = payload.get("command")
    if command_writes(payload) and not end_user_locked:
        # Every write runs under the person's write lock (memoryhub.services.documents), and
        # the row must be read with it: the switch or the person may have changed since.
        end_user = end_user_find(user_id=user_id, for_update=True)
    _check_enabled(tenant=tenant, end_user=end_user, profile=None)
    _check_enabled(tenant=tenant, end_user=end_user, profile=_profile(payload))
    context = _context(payload)
    if command is None or command == "":
        raise ToolError(f"Error: the input needs a `command`: one of {', '.join(COMMANDS)}.")
    if not isinstance(command, str) or command not in _HANDLERS:
        raise ToolError(
            f"Error: unknown command {echo(repr(command))}; use one of {', '.join(COMMANDS)}."
        )
    writer = Writer(tenant=tenant, actor=ACTOR, turn_id=context.turn_id,
                    session_id=context.session_id)
    call = Call(writer=writer, user_id=user_id, end_user=end_user, context=context,
                command=command, payload=reference_input(command, payload))
    return _HANDLERS[command](call)


class _ReferenceInput(BaseModel):
    """The arguments of one command as the SDK's models declare them (``anthropic.types.beta.
    BetaMemoryTool20250818*Command``): pydantic, lax, other keys allowed."""

    model_config = ConfigDict(extra="allow")


class _ViewInput(_ReferenceInput):
    path: str
    view_range: list[int] | None = None


class _CreateInput(_ReferenceInput):
    path: str
    file_text: str


class _StrReplaceInput(_ReferenceInput):
    path: str
    old_str: str
    new_str: str


class _InsertInput(_ReferenceInput):
    path: str
    insert_line: int
    insert_text: str


class _DeleteInput(_ReferenceInput):
    path: str


class _RenameInput(_ReferenceInput):
    old_path: str
    new_path: str


_REFERENCE_INPUTS: dict[str, type[_ReferenceInput]] = {
    "view": _ViewInput, "create": _CreateInput, "str_replace": _StrReplaceInput,
    "replace": _StrReplaceInput, "insert": _InsertInput, "delete": _DeleteInput,
    "rename": _RenameInput,
}


def reference_input(command: str, payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """``payload`` with the command's arguments as the reference's ``call`` reads them.

    The reference (``construct_type_unchecked``) first validates the input against its model,
    lax: a valid input runs with the coerced values (``"2"``, ``2.0`` or ``true`` for an
    integer, each item of ``view_range`` alike); an input that fails anywhere runs as sent,
    which this service's own checks then answer. Arguments not sent stay absent.
    """
    model = _REFERENCE_INPUTS.get(command)
    if model is None:  # append: this service's own command
        return payload
    try:
        parsed = model.model_validate(dict(payload))
    except ValidationError:
        return payload
    coerced = {name: getattr(parsed, name) for name in model.model_fields if name in payload}
    return {**payload, **coerced}


def command_writes(payload: object) -> bool:
    """Whether the tool input names a command that writes (it takes the person's write lock)."""
    command = payload.get("command") if isinstance(payload, Mapping) else None
    return isinstance(command, str) and command in _HANDLERS and command not in READ_COMMANDS


def _check_enabled(*, tenant: Tenant, end_user: EndUser | None, profile: str | None) -> None:
    reason = memory_disabled_reason(tenant=tenant, end_user=end_user, profile=profile)
    if reason is not None:
        raise memory_disabled_error(reason)


# --- input parsing ----------------------------------------------------------------------------


def _optional_id(payload: Mapping[str, Any], name: str, valid: Callable[[object], bool],
                 rule: str) -> str | None:
    value = payload.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not valid(value):  # isinstance: for the type checker
        raise InvalidScope(f"Error: {name} must be {rule}; got {echo(repr(value))}.")
    return value


def _profile(payload: Mapping[str, Any]) -> str | None:
    return _optional_id(payload, "profile", is_profile_name, PROFILE_RULE)


def _context(payload: Mapping[str, Any]) -> ToolContext:
    session_id = _optional_id(payload, "session_id", is_session_id, _ID_RULE)
    profile = _profile(payload)
    turn_id = _optional_id(payload, "turn_id", is_session_id, _ID_RULE)
    scope = payload.get("scope")
    if scope is None or scope == "":
        scope = None
    elif scope not in Scope.values:
        raise InvalidScope(
            "Error: scope must be one of session, profile, global (or left out); got "
            f"{echo(repr(scope))}."
        )
    elif scope == Scope.SESSION and not session_id:
        raise InvalidScope('Error: scope "session" needs a session_id; send one or leave '
                           "scope out.")
    elif scope == Scope.PROFILE and not profile:
        raise InvalidScope('Error: scope "profile" needs a profile; send one or leave '
                           "scope out.")
    return ToolContext(session_id=session_id, profile=profile, scope=scope, turn_id=turn_id)


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a decimal number"  # JSON's 2.0 and 2e0: "a line number, not a number" was moot
    if isinstance(value, int):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "null"


def _argument(call: Call, name: str, kind: type[T], what: str) -> T:
    """A required argument of ``kind`` (``int`` excludes booleans), else a tool error."""
    value = call.payload.get(name)
    if value is None or (value == "" and kind is str and name.endswith("path")):
        raise ToolError(
            f"Error: the {call.command} command needs `{name}` ({what}); send it and try again."
        )
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        hint = " (write it without a point or exponent)" if kind is int and isinstance(
            value, float) else ""
        raise ToolError(f"Error: `{name}` must be {what}, not {_json_type(value)}{hint}.")
    return value


def _path(call: Call, name: str = "path") -> tuple[str, str]:
    """``(as written, canonical)``; the canonical form refuses bad paths with the contract's text."""
    raw = _argument(call, name, str, "a path such as /memories/notes.md")
    return raw, canonical_path(raw)


def _text(call: Call, name: str) -> str:
    return _argument(call, name, str, "a string")


# --- commands -----------------------------------------------------------------------------------


def _view(call: Call) -> str:
    raw, path = _path(call)
    found = path_view(end_user=call.end_user, locations=call.context.lookup(), path=path)
    if found is None:
        raise ToolError(does_not_exist(raw))
    if found.content is None:
        return directory_view(raw, directory_entries(path, found.documents))
    view_range = check_view_range(call.payload.get("view_range"))
    if view_range is None:
        return truncate_view(raw, found.content)
    return file_view(raw, found.content, view_range)


def _create(call: Call) -> str:
    raw, path = _path(call)
    content = _text(call, "file_text")

    def create(end_user: EndUser) -> None:
        memory_create(writer=call.writer, end_user=end_user,
                      location=call.context.create_location(), path=path, label=raw,
                      content=content, description=call.payload.get("description"))

    if call.end_user is not None:
        create(call.end_user)
    elif path == ROOT:
        raise ToolError(already_exists(raw))  # what memory_create says, with no person to read
    else:
        # The person's first write creates them; a refused one must not leave them behind,
        # except one refused by max_scope_bytes: its memory.pressure event names them and is
        # kept (as the documents API keeps it), and nothing else of the write was made.
        kept: ScopeOverLimit | None = None
        with transaction.atomic():
            end_user = end_user_get_or_create(tenant=call.writer.tenant, user_id=call.user_id)
            try:
                create(end_user)
            except ScopeOverLimit as refusal:
                kept = refusal
        if kept is not None:
            raise kept
    return create_ok(raw)


def _edit(call: Call, raw: str, path: str, edit: Callable[[str, str], tuple[str, str]]) -> str:
    """A read-modify-write command; ``edit(content, label)`` gives (new content, text)."""
    return memory_edit(writer=call.writer, end_user=call.end_user,
                       locations=call.context.lookup(), path=path, label=raw,
                       edit=lambda content: edit(content, raw))


# Each command checks its path first: the reference refuses a bad path before anything else.


def _str_replace(call: Call) -> str:
    raw, path = _path(call)
    old_str, new_str = _text(call, "old_str"), _text(call, "new_str")
    return _edit(call, raw, path,
                 lambda content, label: apply_str_replace(content, old_str, new_str, label))


def _insert(call: Call) -> str:
    raw, path = _path(call)
    line = _argument(call, "insert_line", int, "a line number (0 inserts at the top)")
    text = _text(call, "insert_text")
    return _edit(call, raw, path, lambda content, label: apply_insert(content, line, text, label))


def _append(call: Call) -> str:
    raw, path = _path(call)
    text = _text(call, "text")
    return _edit(call, raw, path,
                 lambda content, label: (apply_append(content, text), append_ok(label)))


def _delete(call: Call) -> str:
    raw, path = _path(call)
    return memory_delete(writer=call.writer, end_user=call.end_user,
                         locations=call.context.lookup(), path=path, label=raw)


def _rename(call: Call) -> str:
    old_raw, old = _path(call, "old_path")
    new_raw, new = _path(call, "new_path")
    return memory_rename(writer=call.writer, end_user=call.end_user,
                         locations=call.context.lookup(), old=old, new=new, old_label=old_raw,
                         new_label=new_raw)


_HANDLERS: dict[str, Callable[[Call], str]] = {
    "view": _view,
    "create": _create,
    "str_replace": _str_replace,
    "replace": _str_replace,  # the app-facing name of str_replace
    "insert": _insert,
    "append": _append,
    "delete": _delete,
    "rename": _rename,
}
