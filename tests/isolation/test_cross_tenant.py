"""Another tenant's data is never visible: globex addressing acme's data gets exactly what it
gets for something that never existed (same status, same body), and acme's data is untouched.

Every endpoint under /api/v1 has cases here; ``test_every_api_route_has_a_case`` fails when a
route, or a method of a route, is added without one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from itertools import count
from typing import Any

import pytest
from django.http import HttpResponse
from django.urls import resolve

from memoryhub.identifiers import uuid7
from memoryhub.models import WebhookEndpoint
from tenants.context import tenant_context
from tests.api.helpers import put_doc
from tests.routes import served, uncovered

VICTIM = "alice"  # acme's person; globex never wrote for an "alice" before the request
_ghosts = count()


@dataclass(frozen=True)
class Case:
    """One request; ``{user}``, ``{profile}``, ``{webhook}`` and ``{key}`` name acme's thing or
    an absent one."""

    method: str
    url: str
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.method.upper()} {self.url} {json.dumps(self.body) if self.body else ''}"


def tool(**body: Any) -> Case:
    return Case("post", "/api/v1/users/{user}/memory", body)


DOC_URLS = ("global/notes/diet.md", "profile/cooking/r.md", "session/s1/a.md",
            "global/memories/notes/diet.md")
MEM0_CASES: list[Case] = [
    Case("get", "/mem0/v1/ping/"),
    Case("post", "/mem0/v3/memories/add/", {"messages": [{"role": "user", "content": "mine"}],
                                            "user_id": "{user}", "infer": False}),
    Case("post", "/mem0/v3/memories/add/", {"messages": [{"role": "user", "content": "mine"}],
                                            "filters": {"user_id": "{user}"}, "run_id": "s1"}),
    Case("post", "/mem0/v3/memories/search/",
         {"query": "vegetarian Lisbon", "filters": {"user_id": "{user}"}, "threshold": 0}),
    Case("post", "/mem0/v3/memories/?page=1&page_size=1000", {"filters": {"user_id": "{user}"}}),
    Case("get", "/mem0/v1/memories/{fact}/"),
    Case("put", "/mem0/v1/memories/{fact}/", {"text": "mine", "metadata": {"k": "v"}}),
    Case("delete", "/mem0/v1/memories/{fact}/"),
    Case("get", "/mem0/v1/memories/{fact}/history/"),
    Case("delete", "/mem0/v1/memories/?user_id={user}"),
    Case("get", "/mem0/v1/entities/"),
    Case("get", "/mem0/v1/entities/?page=1&page_size=1000"),
    Case("delete", "/mem0/v2/entities/user/{user}/"),
    Case("put", "/mem0/v1/batch/", {"memories": [{"memory_id": "{fact}", "text": "mine"}]}),
    Case("delete", "/mem0/v1/batch/", {"memories": [{"memory_id": "{fact}"}]}),
]
CASES: list[Case] = [
    # end users
    Case("get", "/api/v1/users/{user}"),
    Case("patch", "/api/v1/users/{user}", {"memory_enabled": False}),
    Case("delete", "/api/v1/users/{user}"),
    Case("delete", "/api/v1/users/{user}/sessions/s1"),
    Case("get", "/api/v1/users/{user}/export"),
    Case("post", "/api/v1/users/{user}/portal-link"),
    # documents
    Case("get", "/api/v1/users/{user}/documents"),
    Case("get", "/api/v1/users/{user}/documents?scope=session&session_id=s1"),
    Case("get", "/api/v1/users/{user}/documents?session_id=s1&profile=cooking&prefix=/notes/"),
    *[Case("get", f"/api/v1/users/{{user}}/documents/{where}") for where in DOC_URLS],
    *[Case("get", f"/api/v1/users/{{user}}/documents/{where}", headers={"If-None-Match": '"1"'})
      for where in DOC_URLS[:3]],
    *[Case("put", f"/api/v1/users/{{user}}/documents/{where}", {"content": "mine"})
      for where in DOC_URLS[:3]],
    *[Case("put", f"/api/v1/users/{{user}}/documents/{where}", {"content": "mine"},
           headers={"If-Match": '"1"'}) for where in DOC_URLS[:3]],
    Case("put", "/api/v1/users/{user}/documents/global/notes/diet.md", {"content": "mine"},
         headers={"If-None-Match": "*"}),
    *[Case("delete", f"/api/v1/users/{{user}}/documents/{where}") for where in DOC_URLS],
    Case("delete", "/api/v1/users/{user}/documents/global/notes/diet.md",
         headers={"If-Match": '"1"'}),
    # the memory tool, the index, the snapshot, recall
    tool(command="view", path="/memories"),
    tool(command="view", path="/memories", session_id="s1", profile="cooking"),
    tool(command="view", path="/memories/notes/diet.md"),
    tool(command="view", path="/memories/a.md", session_id="s1"),
    tool(command="view", path="/memories/notes"),
    tool(command="create", path="/memories/notes/diet.md", file_text="mine"),
    tool(command="str_replace", path="/memories/notes/diet.md", old_str="Vegetarian",
         new_str="Carnivore"),
    tool(command="insert", path="/memories/notes/diet.md", insert_line=0, insert_text="x"),
    tool(command="append", path="/memories/r.md", text="x", profile="cooking"),
    tool(command="delete", path="/memories/notes"),
    tool(command="delete", path="/memories/a.md", scope="session", session_id="s1"),
    tool(command="rename", old_path="/memories/notes/diet.md", new_path="/memories/n.md"),
    Case("get", "/api/v1/users/{user}/memory/index?session_id=s1&profile=cooking"),
    Case("get", "/api/v1/users/{user}/memory/snapshot?session_id=s1&profile=cooking"),
    Case("post", "/api/v1/users/{user}/recall",
         {"query": "vegetarian diet", "relaxed": True, "session_id": "s1", "profile": "cooking"}),
    # lists and tenant administration: acme's person, profile and webhook, seen from globex
    Case("get", "/api/v1/users"),
    Case("get", "/api/v1/profiles"),
    Case("put", "/api/v1/profiles/{profile}", {"disabled": False}),
    Case("get", "/api/v1/events"),
    Case("get", "/api/v1/events?after=0&limit=1000"),
    Case("get", "/api/v1/tenant"),
    Case("patch", "/api/v1/tenant", {"memory_enabled": False}),
    Case("get", "/api/v1/webhooks"),
    Case("get", "/api/v1/webhooks/{webhook}"),
    Case("patch", "/api/v1/webhooks/{webhook}", {"enabled": False}),
    Case("delete", "/api/v1/webhooks/{webhook}"),
    Case("get", "/api/v1/keys"),
    Case("delete", "/api/v1/keys/{key}"),
    # conversations: acme's person's session s1 and its conversation (client id m1 included)
    Case("post", "/api/v1/users/{user}/sessions/s1/messages",
         {"messages": [{"role": "user", "content": "mine", "id": "m1"}]}),
    Case("get", "/api/v1/users/{user}/sessions/s1/messages"),
    Case("get", "/api/v1/users/{user}/sessions/s1/messages?conversation_id={conversation}"),
    Case("get", "/api/v1/users/{user}/conversations"),
    Case("get", "/api/v1/users/{user}/conversations?session_id=s1"),
    Case("get", "/api/v1/users/{user}/conversations/{conversation}"),
    Case("delete", "/api/v1/users/{user}/conversations/{conversation}"),
    Case("put", "/api/v1/users/{user}/conversations/{conversation}/summary", {"summary": "mine"}),
    Case("get", "/api/v1/users/{user}/history"),
    Case("get", "/api/v1/users/{user}/history?limit=50&exclude_session=s2"),
    Case("post", "/api/v1/users/{user}/context",
         {"session_id": "s2", "query": "Lisbon vegetarian", "history": 5}),
    # facts: acme's person's fact
    Case("get", "/api/v1/users/{user}/facts"),
    Case("get", "/api/v1/users/{user}/facts?include_invalid=true&type=preference"),
    Case("post", "/api/v1/users/{user}/facts", {"content": "User is vegetarian"}),
    Case("get", "/api/v1/users/{user}/facts/{fact}"),
    Case("get", "/api/v1/users/{user}/facts/{fact}", headers={"If-None-Match": '"1"'}),
    Case("patch", "/api/v1/users/{user}/facts/{fact}", {"content": "mine"}),
    Case("patch", "/api/v1/users/{user}/facts/{fact}", {"confidence": 0.1},
         headers={"If-Match": '"1"'}),
    Case("delete", "/api/v1/users/{user}/facts/{fact}"),
    Case("delete", "/api/v1/users/{user}/facts/{fact}", headers={"If-Match": '"1"'}),
    Case("get", "/api/v1/users/{user}/facts/{fact}/history"),
    # recall over each source: acme's person's fact ("User is Vegetarian") and messages
    *[Case("post", "/api/v1/users/{user}/recall",
           {"query": "vegetarian Lisbon", "relaxed": True, "sources": sources,
            "include_invalid": True})
      for sources in (["facts"], ["messages"], ["documents", "facts", "messages"])],
    # mem0's API (api/mem0): the person named in bodies and queries, acme's fact by its id
    *MEM0_CASES,
]


def seed_acme(acme) -> dict[str, str]:
    """A person with documents in every scope, a disabled profile, events, a portal link, a
    webhook, a conversation, a key bound to the person: the things globex will try to reach.
    Returns their names."""
    captured = acme.client.post(f"/api/v1/users/{VICTIM}/sessions/s1/messages", {"messages": [
        {"role": "user", "content": "I moved to Lisbon, I am vegetarian.", "id": "m1"},
        {"role": "assistant", "content": "Noted: Lisbon."}]}, format="json")
    assert captured.status_code == 201, captured.content
    put_doc(acme, VICTIM, "global/notes/diet.md", "Vegetarian, no fish.")
    put_doc(acme, VICTIM, "profile/cooking/r.md", "Soup recipes")
    put_doc(acme, VICTIM, "session/s1/a.md", "Session notes")
    acme.client.put("/api/v1/profiles/cooking", {"disabled": True}, format="json")
    acme.client.post(f"/api/v1/users/{VICTIM}/portal-link")
    with tenant_context(acme.tenant.id):
        webhook = WebhookEndpoint.objects.create(
            tenant=acme.tenant, url="https://hooks.acme.example/memory", secret="s" * 32,
            event_types=["memory.changed"],
        ).pk
    bound = acme.client.post("/api/v1/keys", {"name": "alice's phone", "user_id": VICTIM},
                             format="json")
    assert bound.status_code == 201, bound.content
    fact = acme.client.post(f"/api/v1/users/{VICTIM}/facts",
                            {"content": "User is Vegetarian", "type": "profile"}, format="json")
    assert fact.status_code == 201, fact.content
    return {"webhook": str(webhook), "conversation": captured.json()["conversation_id"],
            "fact": fact.json()["id"], "key": str(bound.json()["id"])}


def acme_state(acme) -> dict[str, Any]:
    """Everything acme can see, as acme sees it."""
    urls = [f"/api/v1/users/{VICTIM}/export", f"/api/v1/users/{VICTIM}/documents",
            f"/api/v1/users/{VICTIM}/facts?include_invalid=true",
            f"/api/v1/users/{VICTIM}/conversations", f"/api/v1/users/{VICTIM}/sessions/s1/messages",
            "/api/v1/users", "/api/v1/profiles", "/api/v1/events?limit=1000", "/api/v1/tenant",
            "/api/v1/webhooks", "/api/v1/keys"]
    return {url: acme.client.get(url).json() for url in urls}


def filled(body: Any, names: dict[str, str]) -> Any:
    """``body`` with ``{user}``, ``{fact}``... in its strings replaced (mem0's bodies name them)."""
    text = json.dumps(body)
    for name, value in names.items():
        text = text.replace("{" + name + "}", value)
    return json.loads(text)


def send(client, case: Case, names: dict[str, str]):
    url = case.url.format(**names)
    headers = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in case.headers.items()}
    method = getattr(client, case.method)
    if case.body is None:
        return read_once(method(url, **headers))
    return read_once(method(url, filled(case.body, names), format="json", **headers))


def read_once(response: Any) -> Any:
    """A streamed answer (mem0's unpaged people) as an ordinary one, so it can be read twice."""
    if not response.streaming:
        return response
    return HttpResponse(b"".join(response.streaming_content), status=response.status_code,
                        headers=dict(response.items()))


_VOLATILE = re.compile(r"_at$")
# Ids a request creates (a captured message, a new conversation) differ between two runs.
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def normalized(response, names: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
    """Status, body and the headers that matter, with the addressed names and clocks masked."""
    text = response.content.decode()
    for placeholder, value in names.items():
        text = text.replace(value, f"<{placeholder}>")
    body = json.loads(text) if text else None

    def scrub(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: ("<time>" if _VOLATILE.search(k) and v else scrub(v))
                    for k, v in value.items()}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        if isinstance(value, str) and "/portal/" in value:
            return value.split("/portal/")[0] + "/portal/<token>"
        if isinstance(value, str):
            return _UUID.sub("<uuid>", value)
        return value

    headers = {h: response.get(h, "").replace(names.get("user", "\0"), "<user>")
               for h in ("ETag", "Location", "Retry-After", "Content-Type")}
    return response.status_code, scrub(body), headers


def target_and_absent(case: Case, seeded: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The names ``case``'s URL uses: acme's things, and things that never existed."""
    target = {"user": VICTIM, "profile": "cooking", **seeded}
    absent = {"user": f"ghost-{next(_ghosts)}", "profile": "ghost-profile",
              "webhook": str(int(seeded["webhook"]) + 10_000), "conversation": str(uuid7()),
              "fact": str(uuid7()), "key": str(int(seeded["key"]) + 10_000)}
    used = [name for name in target if "{" + name + "}" in case.url + json.dumps(case.body)]
    return {name: target[name] for name in used}, {name: absent[name] for name in used}


@pytest.mark.parametrize("case", CASES, ids=str)
def test_acmes_data_looks_absent_to_globex(acme, globex, case: Case) -> None:
    seeded = seed_acme(acme)
    before = acme_state(acme)
    target, absent = target_and_absent(case, seeded)
    used = list(target)

    reached = send(globex.client, case, target)
    missed = send(globex.client, case, absent)

    assert normalized(reached, target) == normalized(missed, absent)
    assert acme_state(acme) == before
    shown = reached.content.decode()
    assert "Vegetarian" not in shown
    if not used:  # a list of globex's own things: nothing of acme's in it
        assert not any(name in shown for name in (VICTIM, "cooking", "hooks.acme")), shown


# Creations name nothing of acme's, and their answers differ per call (ids, secrets), so they
# are not paired: what globex creates is its own, and acme's state does not move.
CREATIONS: list[Case] = [
    Case("post", "/api/v1/keys", {"name": "alice's phone", "user_id": VICTIM}),
    Case("post", "/api/v1/webhooks", {"url": "http://127.0.0.1:9/memory"}),  # no DNS here
]


@pytest.mark.parametrize("case", CREATIONS, ids=str)
def test_what_globex_creates_is_its_own(acme, globex, case: Case, settings) -> None:
    settings.MEMORYHUB_WEBHOOKS = {**settings.MEMORYHUB_WEBHOOKS, "allow_private_urls": True}
    seed_acme(acme)
    before = acme_state(acme)
    created = send(globex.client, case, {})
    assert created.status_code == 201, created.content
    assert acme_state(acme) == before
    assert "Vegetarian" not in created.content.decode()
    if "api_key" in created.json():  # a globex key bound to "alice" reaches globex's alice only
        export = globex.client_with(created.json()["api_key"]).get(f"/api/v1/users/{VICTIM}/export")
        assert export.status_code == 200 and export.json()["documents"] == []


@pytest.mark.parametrize("namespace", ["api", "mem0"])
def test_every_api_route_has_a_case(namespace: str) -> None:
    """Every (route, method) the API and mem0's surface serve (tests/routes.py), not only
    every route."""
    names = {"user": VICTIM, "profile": "cooking", "webhook": "1", "conversation": str(uuid7()),
             "fact": str(uuid7()), "key": "1"}
    covered = {(resolve(case.url.format(**names).split("?")[0]).view_name, case.method.upper())
               for case in CASES + CREATIONS}
    missing = uncovered(served(namespace), covered, "CASES in tests/isolation/test_cross_tenant.py")
    assert missing == [], "\n".join(missing)


def test_the_cases_really_reach_acmes_data_with_acmes_key(acme, globex) -> None:
    """The matrix would prove nothing if its URLs missed acme's data anyway."""
    names = {"user": VICTIM, "profile": "cooking", **seed_acme(acme)}
    webhook = names["webhook"]
    for url in (f"/api/v1/users/{VICTIM}/documents/{where}" for where in DOC_URLS):
        assert acme.client.get(url).status_code == 200, url
    assert acme.client.get(f"/api/v1/webhooks/{webhook}").status_code == 200
    assert [k["user_id"] for k in acme.client.get("/api/v1/keys").json()["keys"]
            if str(k["id"]) == names["key"]] == [VICTIM]
    viewed = send(acme.client, tool(command="view", path="/memories/notes/diet.md"), names)
    assert "Vegetarian" in viewed.json()["content"]
    index = acme.client.get(f"/api/v1/users/{VICTIM}/memory/snapshot?session_id=s1").json()
    assert "Vegetarian" in index["text"]
    assert acme.client.get(f"/api/v1/users/{VICTIM}").json()["documents"]["total"] == 3
    conversation = f"/api/v1/users/{VICTIM}/conversations/{names['conversation']}"
    assert acme.client.get(conversation).status_code == 200
    messages = acme.client.get(f"/api/v1/users/{VICTIM}/sessions/s1/messages").json()["messages"]
    assert [m["client_id"] for m in messages] == ["m1", None]
    history = acme.client.get(f"/api/v1/users/{VICTIM}/history").json()
    assert "Lisbon" in history["text"]
    context = send(acme.client, next(c for c in CASES if c.url.endswith("/context")), names).json()
    assert "Lisbon" in context["history"]["text"]
    fact = acme.client.get(f"/api/v1/users/{VICTIM}/facts/{names['fact']}")
    assert fact.status_code == 200 and "Vegetarian" in fact.json()["content"]
    memory = acme.client.get(f"/mem0/v1/memories/{names['fact']}/")
    assert memory.status_code == 200 and "Vegetarian" in memory.json()["memory"]
    mem0_search = next(c for c in MEM0_CASES if c.url.endswith("/search/"))
    assert "Vegetarian" in send(acme.client, mem0_search, names).json()["results"][0]["memory"]
    assert acme.client.get(f"/api/v1/users/{VICTIM}/facts/{names['fact']}/history").status_code == 200
    for sources, kinds in ((["facts"], {"fact"}), (["messages"], {"message"}),
                           (["documents", "facts", "messages"], {"document", "fact", "message"})):
        case = next(c for c in CASES if c.body and c.body.get("sources") == sources)
        results = send(acme.client, case, names).json()["results"]
        assert {r["kind"] for r in results} == kinds, sources
        assert any("Vegetarian" in r["snippet"] or "vegetarian" in r["snippet"] for r in results)
