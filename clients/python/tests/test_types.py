"""The typed results are the JSON the live server sends: for each method, the TypedDict its
request builder declares (``Call[...]``, ``memoryhub_client.types``) has every key of the
answer and no other, with values of the declared types."""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, NotRequired, get_args, get_origin, get_type_hints

import pytest
from memoryhub_client import MemoryHub

pytestmark = pytest.mark.django_db(transaction=True)


def mismatches(value: Any, declared: Any, where: str) -> list[str]:
    """Where ``value`` is not of the ``declared`` type (a TypedDict, a list, a union...)."""
    origin = get_origin(declared)
    if declared is Any:
        return []
    if origin in (typing.Union, types.UnionType):
        found = [mismatches(value, option, where) for option in get_args(declared)]
        return [] if [] in found else min(found, key=len)
    if origin is Literal:
        return [] if value in get_args(declared) else [f"{where}: {value!r} is not one of "
                                                        f"{get_args(declared)}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {value!r} is not a list"]
        return [m for i, item in enumerate(value)
                for m in mismatches(item, get_args(declared)[0], f"{where}[{i}]")]
    if typing.is_typeddict(declared):
        return typed_dict_mismatches(value, declared, where)
    expected = {float: (int, float), dict: dict, type(None): type(None)}.get(
        origin or declared, origin or declared)
    if isinstance(value, bool) and declared is not bool or not isinstance(value, expected):
        return [f"{where}: {value!r} is not {declared}"]
    return []


def typed_dict_mismatches(value: Any, declared: Any, where: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: {value!r} is not an object"]
    # include_extras: Python 3.11's __required_keys__ miss NotRequired in string annotations.
    fields = get_type_hints(declared, include_extras=True)
    optional = {name for name, hint in fields.items() if get_origin(hint) is NotRequired}
    required = set() if not declared.__total__ else set(fields) - optional
    found = [f"{where}: no {name!r}" for name in sorted(required - value.keys())]
    found += [f"{where}: {name!r} is not declared" for name in sorted(value.keys() - fields)]
    for name in value.keys() & fields.keys():
        hint = fields[name]
        hint = get_args(hint)[0] if get_origin(hint) is NotRequired else hint
        found += mismatches(value[name], hint, f"{where}.{name}")
    return found


def declared_result(method: str) -> Any:
    """The result type of a method: ``T`` of its request builder's ``Call[T]``."""
    return get_args(get_type_hints(getattr(MemoryHub, method).build)["return"])[0]


class Checked:
    """The hub, with each method's answer checked against its declared type."""

    def __init__(self, hub: MemoryHub) -> None:
        self.hub, self.found, self.called = hub, list[str](), set[str]()

    def __getattr__(self, method: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            answer = getattr(self.hub, method)(*args, **kwargs)
            self.called.add(method)
            self.found.extend(mismatches(answer, declared_result(method), method))
            return answer

        return call


def test_every_answer_is_its_declared_type(hub: MemoryHub, settings: Any) -> None:
    settings.MEMORYHUB_WEBHOOKS = {**settings.MEMORYHUB_WEBHOOKS, "allow_private_urls": True}
    api, user = Checked(hub), "alice"
    api.memory(user, {"command": "create", "path": "/memories/diet.md",
                      "file_text": "Vegetarian, loves tea"})
    api.document_put(user, "/todo.md", "buy tea", session_id="s-1", description="Todo")
    api.document_get(user, "/todo.md", session_id="s-1")
    api.documents(user)
    api.memory_index(user, session_id="s-1")
    api.memory_snapshot(user, session_id="s-1")
    captured = api.capture(user, "s-1", [{"role": "user", "content": "I love tea."},
                                         {"role": "assistant", "content": "Noted."}])
    conversation_id = captured["conversation_id"]
    api.messages(user, "s-1")
    api.conversations(user)
    api.conversation(user, conversation_id)
    api.summary_put(user, conversation_id, "Tea.")
    api.history(user)
    fact = api.fact_create(user, "User loves tea", type="preference")
    api.fact_create(user, "User drinks green tea daily")
    api.fact_update(user, fact["id"], confidence=0.5)
    api.facts(user)
    api.fact(user, fact["id"])
    api.fact_history(user, fact["id"])
    # Each kind of result: a document, a fact and a message.
    found = api.recall(user, "tea", relaxed=True, session_id="s-1",
                       sources=["documents", "facts", "messages"])
    assert {result["kind"] for result in found["results"]} == {"document", "fact", "message"}
    api.context(user, session_id="s-1", query="tea", history=2)
    api.users()
    api.user(user)
    api.user_update(user, memory_enabled=True)
    api.portal_link(user)
    gone = api.fact_create(user, "User likes green tea")
    api.fact_delete(user, gone["id"])
    api.export(user)
    api.tenant()
    api.tenant_update({"name": "Acme", "capture": {"redact": ["order-\\d+"]}})
    api.profile_set("cooking", disabled=False)
    api.profiles()
    api.events()
    webhook = api.webhook_create("http://127.0.0.1:9/hook")
    api.webhooks()
    api.webhook(webhook["id"])
    api.webhook_update(webhook["id"], {"enabled": False})
    key = api.key_create("phone", user_id=user)
    api.keys()
    api.key_revoke(key["id"])
    assert api.found == []
    every = {name for name in dir(MemoryHub) if hasattr(getattr(MemoryHub, name), "build")}
    answering = every - {"document_delete", "user_delete", "session_delete",
                         "conversation_delete", "webhook_delete"}  # 204: None
    assert answering - api.called == set()
