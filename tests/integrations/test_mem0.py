"""mem0 compatibility at /mem0/, driven by mem0's own clients (``mem0ai`` 2.2.x: the sync
``MemoryClient`` and the ``AsyncMemoryClient``) with ``host=<live server>/mem0``, against a
live server (Django's threaded WSGI server): every client method that maps to a route, what
it writes as seen through the REST API, adding with inference through augmentation (inline here;
through a real worker in ``test_mem0_worker``), another tenant's memories absent, a bound key reaching only its
person, errors in mem0's shape, and the rate limit's 429 with Retry-After.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from mem0 import AsyncMemoryClient, MemoryClient
from mem0.client.types import DeleteAllMemoryOptions, SearchMemoryOptions, UpdateMemoryOptions
from mem0.exceptions import (
    AuthenticationError,
    MemoryNotFoundError,
    RateLimitError,
    ValidationError,
)

from tenants.context import tenant_context
from tenants.models import Tenant
from tests.factories import EndUserFactory
from tests.integrations.keys import bound_key, operator_key, operator_tenant

pytestmark = pytest.mark.django_db(transaction=True)


def mem0(live_server: Any, key: str) -> MemoryClient:
    return MemoryClient(api_key=key, host=f"{live_server.url}/mem0")


def rest(live_server: Any, key: str) -> httpx.Client:
    return httpx.Client(base_url=f"{live_server.url}/api/v1",
                        headers={"Authorization": f"Bearer {key}"}, timeout=30)


def raw(live_server: Any, key: str) -> httpx.Client:
    """What the client sends, without the client: for the answers it hides."""
    return httpx.Client(base_url=f"{live_server.url}/mem0",
                        headers={"Authorization": f"Token {key}"}, timeout=30)


MEMORY_KEYS = {"id", "memory", "user_id", "metadata", "categories", "created_at", "updated_at"}


def test_the_sync_client_round_trip(live_server) -> None:
    key = operator_tenant("initech")
    client = mem0(live_server, key)
    assert (client.org_id, client.project_id, client.user_email) == ("initech", "initech", None)

    added = client.add([{"role": "system", "content": "You are helpful."},
                        {"role": "user", "content": "I am vegetarian."},
                        {"role": "assistant", "content": "Noted: no meat."}],
                       user_id="alice", infer=False, metadata={"channel": "web"})
    assert added["status"] == "SUCCEEDED"
    assert [(r["data"]["memory"], r["event"]) for r in added["results"]] == [
        ("I am vegetarian.", "ADD"), ("Noted: no meat.", "ADD")]
    veg, noted = (r["id"] for r in added["results"])
    again = client.add("I am vegetarian.", user_id="alice", infer=False)
    assert [(r["id"], r["event"]) for r in again["results"]] == [(veg, "NONE")]

    one = client.get(veg)
    assert set(one) == MEMORY_KEYS
    assert (one["memory"], one["user_id"], one["metadata"], one["categories"]) == (
        "I am vegetarian.", "alice", {"channel": "web"}, ["fact"])

    found = client.search("vegetarian", filters={"user_id": "alice"}, top_k=5)["results"]
    assert found[0]["id"] == veg and set(found[0]) == MEMORY_KEYS | {"score"}
    assert 0 < found[0]["score"] <= 1
    assert client.search("vegetarian", filters={"user_id": "bob"}) == {"results": []}
    # mem0's v2 filters: AND and OR name the person; agents hold no memories of their own.
    for filters in ({"AND": [{"user_id": "alice"}, {"agent_id": "support-bot"}]},
                    {"OR": [{"user_id": "alice"}, {"agent_id": "support-bot"}]}):
        assert client.search("vegetarian", filters=filters)["results"][0]["id"] == veg
        assert client.get_all(filters=filters)["count"] == 2
    with pytest.raises(ValidationError, match="user_id is named twice, differently"):
        client.search("vegetarian", filters={"OR": [{"user_id": "alice"}, {"user_id": "bob"}]})

    page = client.get_all(filters={"user_id": "alice"}, page=1, page_size=1)
    assert page["count"] == 2 and page["previous"] is None
    assert [m["id"] for m in page["results"]] == [noted]  # newest first
    assert "page=2" in page["next"]
    assert [m["id"] for m in client.get_all(filters={"user_id": "alice"})["results"]] == [noted, veg]

    updated = client.update(veg, text="I am vegan.", metadata={"channel": "app"})
    assert (updated["id"], updated["memory"], updated["metadata"]) == (veg, "I am vegan.",
                                                                      {"channel": "app"})
    assert [(h["event"], h["old_memory"], h["new_memory"]) for h in client.history(veg)] == [
        ("ADD", None, "I am vegetarian."), ("UPDATE", "I am vegetarian.", "I am vegan.")]

    entities = client.users()
    assert entities["count"] == 1
    assert [(e["name"], e["type"], e["total_memories"]) for e in entities["results"]] == [
        ("alice", "user", 2)]

    assert "updated 2" in client.batch_update([
        {"memory_id": veg, "text": "I am vegan, no honey."},
        {"memory_id": noted, "metadata": {"checked": True}}])["message"]
    assert client.get(noted)["metadata"] == {"checked": True}

    with rest(live_server, key) as api:
        facts = api.get("/users/alice/facts").json()["facts"]
        assert {(f["content"], f["updated_by"]) for f in facts} == {
            ("I am vegan, no honey.", "app"), ("Noted: no meat.", "app")}
        changes = [e["data"]["change"] for e in api.get("/events").json()["events"]
                   if e["type"] == "fact.changed"]
        assert changes == ["created", "created", "updated", "updated", "updated"]
        exported = api.get("/users/alice/export").json()["facts"]
        assert {f["content"]: f["metadata"] for f in exported} == {
            "I am vegan, no honey.": {"channel": "app"}, "Noted: no meat.": {"checked": True}}

    assert "deleted 1" in client.batch_delete([{"memory_id": noted}])["message"]
    assert client.delete(veg) == {"message": "Memory deleted successfully!"}
    with pytest.raises(MemoryNotFoundError):
        client.get(veg)
    with pytest.raises(MemoryNotFoundError):
        client.history(veg)

    client.add("I live in Lisbon.", user_id="bob", infer=False)
    assert client.delete_all(user_id="bob") == {"message": "Memories deleted successfully!"}
    assert client.get_all(filters={"user_id": "bob"})["count"] == 0
    assert client.users()["count"] == 2  # bob's facts went, bob stays

    with rest(live_server, key) as api:
        api.put("/users/bob/documents/global/notes.md", json={"content": "Likes tea."})
        assert client.delete_users(user_id="bob") == {"message": "Entity deleted successfully."}
        assert api.get("/users/bob").json()["created_at"] is None  # forgotten, documents too
        assert client.reset()["message"].startswith("Client reset successful")
        assert api.get("/users").json()["users"] == []


def test_the_async_client_round_trip(live_server) -> None:
    key = operator_tenant("initech")

    async def work() -> dict[str, Any]:
        async with AsyncMemoryClient(api_key=key, host=f"{live_server.url}/mem0") as client:
            out: dict[str, Any] = {"org": (client.org_id, client.project_id)}
            added = await client.add("I love jazz.", user_id="alice", infer=False)
            memory_id = added["results"][0]["id"]
            out["get"] = await client.get(memory_id)
            out["search"] = await client.search("jazz", filters={"AND": [{"user_id": "alice"}]})
            out["all"] = await client.get_all(filters={"user_id": "alice"}, page_size=10)
            out["update"] = await client.update(memory_id, text="I love free jazz.")
            out["history"] = await client.history(memory_id)
            out["users"] = await client.users()
            out["batch_update"] = await client.batch_update([{"memory_id": memory_id,
                                                              "text": "I love bebop."}])
            out["batch_delete"] = await client.batch_delete([{"memory_id": memory_id}])
            await client.add("I live in Oslo.", user_id="alice", infer=False)
            out["delete_all"] = await client.delete_all(user_id="alice")
            out["after"] = await client.get_all(filters={"user_id": "alice"})
            added = await client.add("I work at Initech.", user_id="bob", infer=False)
            out["delete"] = await client.delete(added["results"][0]["id"])
            out["delete_users"] = await client.delete_users(user_id="alice")
            out["left"] = await client.users()
            return out

    out = asyncio.run(work())
    assert out["org"] == ("initech", "initech")
    assert out["get"]["memory"] == "I love jazz."
    assert [m["memory"] for m in out["search"]["results"]] == ["I love jazz."]
    assert out["all"]["count"] == 1 and out["all"]["next"] is None
    assert out["update"]["memory"] == "I love free jazz."
    assert [h["event"] for h in out["history"]] == ["ADD", "UPDATE"]
    assert [e["name"] for e in out["users"]["results"]] == ["alice"]
    assert out["batch_update"]["message"] == "Successfully updated 1 memories"
    assert out["batch_delete"]["message"] == "Successfully deleted 1 memories"
    assert out["delete_all"]["message"] == "Memories deleted successfully!"
    assert out["after"]["results"] == []
    assert out["delete"]["message"] == "Memory deleted successfully!"
    assert out["delete_users"]["message"] == "Entity deleted successfully."
    assert [e["name"] for e in out["left"]["results"]] == ["bob"]


def test_a_host_with_its_trailing_slash_works_for_both_clients(live_server) -> None:
    """AsyncMemoryClient pings f"{host}/v1/ping/" (the sync client and the async one's other
    calls join the paths as httpx does), so host=".../mem0/" sent "/mem0//v1/ping/": a 404,
    and the client's constructor raised ValueError."""
    key = operator_tenant("initech")
    host = f"{live_server.url}/mem0/"
    assert MemoryClient(api_key=key, host=host).org_id == "initech"

    async def work() -> tuple[Any, Any]:
        async with AsyncMemoryClient(api_key=key, host=host) as client:
            added = await client.add("I love jazz.", user_id="alice", infer=False)
            return client.org_id, await client.get(added["results"][0]["id"])

    org, memory = asyncio.run(work())
    assert (org, memory["memory"]) == ("initech", "I love jazz.")


def test_infer_captures_and_augmentation_learns(live_server, eager_tasks) -> None:
    """``infer: true`` (the default): the messages are captured into a conversation of the
    session ``run_id`` (else ``mem0``), and augmentation (here inline, on commit) learns."""
    key = operator_tenant("initech")
    client = mem0(live_server, key)
    pending = client.add([{"role": "user", "content": "I moved to Lisbon last week."},
                          {"role": "assistant", "content": "Lisbon is lovely."}],
                         user_id="alice", metadata={"channel": "web"})
    assert pending["status"] == "PENDING" and pending["message"]
    client.add("My name is Alice.", user_id="alice", run_id="chat-7")
    with rest(live_server, key) as api:
        conversation = api.get(f"/users/alice/conversations/{pending['event_id']}").json()
        assert (conversation["session_id"], conversation["message_count"]) == ("mem0", 2)
        messages = api.get("/users/alice/sessions/mem0/messages").json()["messages"]
        assert [(m["role"], m["metadata"]) for m in messages] == [
            ("user", {"channel": "web"}), ("assistant", {"channel": "web"})]
        assert api.get("/users/alice/sessions/chat-7/messages").json()["messages"]
    learnt = {m["memory"] for m in client.get_all(filters={"user_id": "alice"})["results"]}
    assert any("Lisbon" in text for text in learnt) and any("Alice" in text for text in learnt)
    found = client.search("where does she live", filters={"user_id": "alice"})["results"]
    assert "Lisbon" in found[0]["memory"]
    nothing = client.add([{"role": "system", "content": "Be brief."}], user_id="alice")
    assert (nothing["status"], nothing["results"]) == ("SUCCEEDED", [])


def test_what_the_rest_api_shows_of_mem0s_writes(live_server) -> None:
    """mem0's ``timestamp`` is when the fact was stated (``valid_at``); a fact made no longer
    true reads in mem0's history as DELETE and leaves search and get_all, as a deleted mem0
    memory does, while its own URL still shows it; memory switched off refuses writes."""
    key = operator_tenant("initech")
    client = mem0(live_server, key)
    [added] = client.add("I live in Porto.", user_id="alice", infer=False,
                         timestamp=1767225600)["results"]  # 2026-01-01T00:00:00Z
    with rest(live_server, key) as api:
        fact = api.get(f"/users/alice/facts/{added['id']}").json()
        assert fact["valid_at"] == "2026-01-01T00:00:00Z"
        client.update(added["id"], timestamp=1772323200)  # an update's, too
        fact = api.get(f"/users/alice/facts/{added['id']}").json()
        assert (fact["valid_at"], fact["content"]) == ("2026-03-01T00:00:00Z", "I live in Porto.")
        assert api.patch(f"/users/alice/facts/{added['id']}",
                         json={"invalid_at": "2026-06-01T00:00:00Z"}).status_code == 200
        assert [h["event"] for h in client.history(added["id"])] == ["ADD", "UPDATE", "DELETE"]
        assert client.history(added["id"])[2]["old_memory"] == "I live in Porto."
        assert client.get_all(filters={"user_id": "alice"})["results"] == []
        assert client.search("Porto", filters={"user_id": "alice"})["results"] == []
        assert client.get(added["id"])["memory"] == "I live in Porto."
        with pytest.raises(ValidationError, match="metadata is over 4096 bytes"):
            client.add("I like tea.", user_id="alice", infer=False, metadata={"k": "x" * 4096})
        api.patch("/users/quiet", json={"memory_enabled": False})
        with pytest.raises(AuthenticationError, match="memory is disabled"):  # 403
            client.add("I like tea.", user_id="quiet", infer=False)
        assert client.add("I like tea.", user_id="quiet")["results"] == []  # captured nothing
        assert api.get("/users/quiet").json()["messages"] == 0


def test_timestamp_may_be_an_iso_8601_string(live_server) -> None:
    """mem0 documents an update's ``timestamp`` as Unix seconds or an ISO 8601 string, and its
    client types it so; a string was 400 "Must be a number". Either is when the memory was
    stated (``valid_at``), in update, batch_update and add alike; a date alone is its
    midnight, a time without an offset UTC; anything else is still 400."""
    key = operator_tenant("initech")
    client = mem0(live_server, key)
    [added] = client.add("I live in Porto.", user_id="alice", infer=False,
                         timestamp="2026-01-01")["results"]
    with rest(live_server, key) as api:
        def valid_at() -> str:
            return api.get(f"/users/alice/facts/{added['id']}").json()["valid_at"]

        assert valid_at() == "2026-01-01T00:00:00Z"
        client.update(added["id"], timestamp="2026-03-01T10:30:00+02:00")
        assert valid_at() == "2026-03-01T08:30:00Z"
        client.update(added["id"], UpdateMemoryOptions(timestamp="2026-04-01T12:00:00"))
        assert valid_at() == "2026-04-01T12:00:00Z"
        client.batch_update([{"memory_id": added["id"], "timestamp": "2026-05-01T00:00:00Z"}])
        assert valid_at() == "2026-05-01T00:00:00Z"
        client.update(added["id"], timestamp=1772323200.5)  # Unix seconds, as before
        assert valid_at() == "2026-03-01T00:00:00.500000Z"
        client.update(added["id"], timestamp="1772323200")  # the same as digits: it was 400
        assert valid_at() == "2026-03-01T00:00:00Z"
    for wrong in ("last week", "9999-12-31T23:59:59-01:00", -1, True, "١٧٧٢٣٢٣٢٠٠", "1e9"):
        with pytest.raises(ValidationError, match="timestamp: Must be a Unix time in seconds "
                                                  "or an ISO 8601 date or time"):
            client.update(added["id"], timestamp=wrong)


def people(slug: str, count: int) -> None:
    """``count`` more people in the tenant, p0001, p0002...; nothing stored for them."""
    tenant = Tenant.objects.get(slug=slug)
    with tenant_context(tenant.pk):
        for n in range(1, count + 1):
            EndUserFactory(tenant=tenant, user_id=f"p{n:04}")


def test_users_lists_everyone_when_it_asks_for_no_page(live_server) -> None:
    """mem0's ``users()`` asks once, with no ``page`` or ``page_size``, and ``delete_users()``
    and ``reset()`` forget whoever it lists: the answer holds every person (streamed, a chunk
    of people at a time), not a first page. Asked with either, it is mem0's pages."""
    key = operator_tenant("initech")
    client = mem0(live_server, key)
    client.add("I like tea.", user_id="alice", infer=False)
    people("initech", 1029)  # past a chunk of 1,000
    everyone = client.users()
    names = [e["name"] for e in everyone["results"]]
    assert everyone["count"] == len(names) == len(set(names)) == 1030
    assert names == sorted(names) and (everyone["next"], everyone["previous"]) == (None, None)
    alice = everyone["results"][0]
    assert alice == {**alice, "name": "alice", "type": "user", "total_memories": 1}
    with raw(live_server, key) as http:
        page = http.get("/v1/entities/", params={"page": 2}).json()
        assert (page["count"], len(page["results"]), page["results"][0]["name"]) == (
            1030, 100, "p0100")
    bob = mem0(live_server, bound_key("initech", "bob"))
    bob.add("I like coffee.", infer=False)
    assert [e["name"] for e in bob.users()["results"]] == ["bob"]


def test_reset_forgets_everyone(live_server) -> None:
    key = operator_tenant("initech")
    client = mem0(live_server, key)
    client.add("I like tea.", user_id="alice", infer=False)
    people("initech", 120)
    assert client.reset()["message"].startswith("Client reset successful")
    assert client.users()["results"] == []
    with rest(live_server, key) as api:
        assert api.get("/users").json()["users"] == []


def test_another_tenants_memories_are_absent(live_server) -> None:
    acme = mem0(live_server, operator_tenant("acme"))
    globex = mem0(live_server, operator_tenant("globex"))
    memory_id = acme.add("I am vegetarian.", user_id="alice", infer=False)["results"][0]["id"]
    ghost = str(uuid.uuid4())
    for target in (memory_id, ghost):
        for call in (globex.get, globex.history, globex.delete,
                     lambda m: globex.update(m, text="mine"),
                     lambda m: globex.batch_update([{"memory_id": m, "text": "mine"}]),
                     lambda m: globex.batch_delete([{"memory_id": m}])):
            with pytest.raises(MemoryNotFoundError) as refused:
                call(target)
            assert refused.value.message == "Memory not found." or target in refused.value.message
    assert globex.search("vegetarian", filters={"user_id": "alice"}) == {"results": []}
    assert globex.get_all(filters={"user_id": "alice"})["count"] == 0
    assert globex.users()["results"] == []
    globex.delete_users(user_id="alice")
    globex.delete_all(user_id="alice")
    assert acme.get(memory_id)["memory"] == "I am vegetarian."
    assert acme.users()["results"][0]["total_memories"] == 1


def test_a_bound_key_reaches_only_its_person(live_server) -> None:
    admin_key = operator_tenant("initech")
    admin = mem0(live_server, admin_key)
    alices = admin.add("I am vegetarian.", user_id="alice", infer=False)["results"][0]["id"]
    bob = mem0(live_server, bound_key("initech", "bob"))

    own = bob.add("I like tea.", infer=False)["results"][0]["id"]  # no user_id: the key's person
    assert bob.get(own)["user_id"] == "bob"
    assert [m["id"] for m in bob.get_all(filters={"user_id": "bob"})["results"]] == [own]
    assert [e["name"] for e in bob.users()["results"]] == ["bob"]
    # alice reads as absent; changing her is refused (403), the same whether she exists.
    assert bob.search("vegetarian", filters={"user_id": "alice"}) == {"results": []}
    assert bob.get_all(filters={"user_id": "alice"})["count"] == 0
    for call in (bob.get, bob.history, bob.delete):
        with pytest.raises(MemoryNotFoundError):
            call(alices)
    for user in ("alice", "ghost"):
        with pytest.raises(AuthenticationError) as refused:
            bob.add("I hate tea.", user_id=user, infer=False)
        assert "bound to one end user" in refused.value.message
        with pytest.raises(AuthenticationError):
            bob.delete_users(user_id=user)
        with pytest.raises(AuthenticationError):
            bob.delete_all(user_id=user)
    assert admin.get(alices)["memory"] == "I am vegetarian."
    # A user_id that is not one is refused, never read as the key's own person.
    with raw(live_server, bound_key("initech", "bob")) as http:
        for named in (5, ["bob"], {"in": ["bob"]}, "", "bo\x00b"):
            for path, body in (("/v3/memories/add/", {"messages": [{"role": "user",
                                                                     "content": "I hate tea."}],
                                                       "user_id": named, "infer": False}),
                               ("/v3/memories/search/", {"query": "tea",
                                                         "filters": {"user_id": named}})):
                response = http.post(path, json=body)
                assert response.status_code == 400, (path, named, response.text)
        for user_id in ("", "bo%00b"):
            assert http.delete(f"/v1/memories/?user_id={user_id}").status_code == 400
    assert [m["id"] for m in bob.get_all(filters={"user_id": "bob"})["results"]] == [own]


def test_delete_all_deletes_only_the_person_its_query_names(live_server) -> None:
    """``delete_all`` sends its arguments as the query, where ``user_id=`` names the person.
    A query naming someone another way (mem0's typed ``filters``, which the client sends as a
    Python repr, or agent_id alone) names no one MemoryHub reads: 400, for a bound key as for
    any key, never the bound key's own person's memories deleted instead."""
    admin = mem0(live_server, operator_tenant("initech"))
    alices = admin.add("I am vegetarian.", user_id="alice", infer=False)["results"][0]["id"]
    bob = mem0(live_server, bound_key("initech", "bob"))
    own = bob.add("I like tea.", infer=False)["results"][0]["id"]
    for client in (bob, admin):
        for call in (lambda c: c.delete_all(filters={"user_id": "alice"}),
                     lambda c: c.delete_all(DeleteAllMemoryOptions(filters={"user_id": "bob"})),
                     lambda c: c.delete_all(agent_id="support-bot")):
            with pytest.raises(ValidationError) as refused:
                call(client)
            assert "user_id=" in refused.value.message
    # Naming someone twice: which person to delete would be a guess, so neither is.
    carols = admin.add("I like jazz.", user_id="carol", infer=False)["results"][0]["id"]
    with pytest.raises(ValidationError, match="Name the person once"):
        admin.delete_all(user_id="alice", filters={"user_id": "carol"})
    with raw(live_server, admin.api_key) as http:
        twice = http.delete("/v1/memories/", params=[("user_id", "alice"), ("user_id", "carol")])
        assert (twice.status_code, twice.json()) == (
            400, {"detail": "Name the person once, as user_id in the query (delete_all(user_id="
                            "...)), without filters: MemoryHub deletes one person's memories at "
                            "a time."})
    assert admin.get(carols)["memory"] == "I like jazz."
    assert bob.get(own)["memory"] == "I like tea."
    assert admin.get(alices)["memory"] == "I am vegetarian."
    bob.delete_all()  # naming no one at all: the key's person
    assert bob.get_all()["count"] == 0 and admin.get(alices)["memory"] == "I am vegetarian."


def test_get_all_keeps_to_start_date_and_end_date(live_server) -> None:
    """get_all's start_date and end_date (ISO 8601, created on or after / on or before) were
    ignored: every memory came back, those outside the range included."""
    client = mem0(live_server, operator_tenant("initech"))
    added = client.add("I am vegetarian.", user_id="alice", infer=False)["results"]
    alice = {"user_id": "alice"}
    today = datetime.now(UTC).date()
    tomorrow, yesterday = today + timedelta(days=1), today - timedelta(days=1)

    def listed(**options: str) -> list[str]:
        return [m["id"] for m in client.get_all(filters=alice, **options)["results"]]

    assert listed(start_date=str(tomorrow)) == []
    assert listed(end_date=str(yesterday)) == []
    assert listed(end_date=f"{yesterday}T23:59:59Z") == []
    # A date alone is its whole day; a time without an offset is UTC.
    assert listed(start_date=str(today), end_date=str(today)) == [added[0]["id"]]
    assert listed(start_date=f"{yesterday}T00:00:00", end_date=f"{tomorrow}T00:00:00+00:00") == [
        added[0]["id"]]
    with pytest.raises(ValidationError, match="start_date: an ISO 8601 date or time"):
        client.get_all(filters=alice, start_date="last week")


def test_get_all_to_the_last_day_there_is(live_server) -> None:
    """An end_date of 9999-12-31 (the last day a date names: "no end") keeps every memory; its
    day's end overflowed Python's dates, and get_all answered 500."""
    client = mem0(live_server, operator_tenant("initech"))
    added = client.add("I am vegetarian.", user_id="alice", infer=False)["results"]
    for end in ("9999-12-31", "9999-12-31T23:59:59.999999Z"):
        page = client.get_all(filters={"user_id": "alice"}, start_date="0001-01-01", end_date=end)
        assert [m["id"] for m in page["results"]] == [added[0]["id"]]


def test_errors_have_mem0s_shape_and_the_rest_apis_status(live_server) -> None:
    key = operator_tenant("initech")
    with pytest.raises(ValueError, match="Error: Unknown API key."):
        mem0(live_server, key[:-2] + "xx")
    with pytest.raises(ValueError, match="Error: Unknown API key."):
        AsyncMemoryClient(api_key="mh_1_abcdefgh_" + "x" * 43, host=f"{live_server.url}/mem0")
    client = mem0(live_server, key)
    for call, status in (
        (lambda: client.add("hi", infer=False), 400),  # nobody named
        (lambda: client.add("hi", user_id="no spaces", infer=False), 400),
        (lambda: client.add("my key is sk-ant-api03-" + "a" * 90, user_id="a", infer=False), 422),
        (lambda: client.add("I like tea.", user_id="a", infer=False,
                            metadata={"key": "sk-ant-api03-" + "a" * 90}), 422),
        (lambda: client.search("tea", filters={"user_id": "a", "created_at": {"gte": 1}}), 400),
        (lambda: client.search("tea", filters={"user_id": "a"}, top_k=51), 400),
        # Options beside filters that filter too: refused as such filters are, not ignored.
        (lambda: client.search("tea", filters={"user_id": "a"}, categories=["preference"]), 400),
        (lambda: client.search("tea", SearchMemoryOptions(filters={"user_id": "a"},
                                                          metadata={"channel": "web"})), 400),
        (lambda: client.get_all(filters={"user_id": "a"}, categories=["preference"]), 400),
        (lambda: client.get_all(filters={"user_id": "a"}, page_size=1001), 400),
    ):
        with pytest.raises(ValidationError) as refused:
            call()
        assert refused.value.debug_info["status_code"] == status
    with pytest.raises(ValidationError, match="does not filter by metadata"):
        client.search("tea", filters={"user_id": "a"}, metadata={"channel": "web"})
    assert client.search("tea", filters={"user_id": "a"}, categories=[]) == {"results": []}
    with pytest.raises(MemoryNotFoundError, match="Invalid page"):
        client.get_all(filters={"user_id": "a"}, page=2)

    with raw(live_server, key) as http:
        for method, path, body, status in (
            ("GET", "/v1/memories/nope/", None, 404),  # not a memory id
            ("GET", "/v1/projects/", None, 404),  # mem0 has it, MemoryHub does not
            ("GET", "/v1/ping", None, 404),  # the client always sends the trailing slash
            ("POST", "/v1/ping/", {}, 405),
            ("PUT", "/v3/memories/add/", {}, 405),
            ("PUT", f"/v1/memories/{uuid.uuid4()}/history/", {"text": "x"}, 405),
            ("POST", "/v3/memories/add/", b"{", 400),
            ("POST", "/v3/memories/add/", {"messages": [], "user_id": "a"}, 400),
            ("PUT", "/v1/batch/", {"memories": []}, 400),
        ):
            sent = {"content": body, "headers": {"Content-Type": "application/json"}} \
                if isinstance(body, bytes) else {"json": body}
            response = http.request(method, path, **sent)
            assert response.headers["Content-Type"] == "application/json", path
            assert (response.status_code, list(response.json())) == (status, ["detail"]), (
                method, path, response.text)
        too_big = http.post("/v3/memories/add/", content=b"x" * (1024 * 1024 + 1),
                            headers={"Content-Type": "application/json"})
        assert (too_big.status_code, list(too_big.json())) == (413, ["detail"])
        unauthenticated = httpx.get(f"{live_server.url}/mem0/v1/ping/")
        assert unauthenticated.status_code == 401
        assert unauthenticated.json() == {"detail": "Authentication credentials were not provided."}
        basic = httpx.get(f"{live_server.url}/mem0/v1/ping/", headers={"Authorization": "Basic x"})
        assert basic.json() == {"detail": "Use 'Authorization: Token <api key>'."}
        bearer = httpx.get(f"{live_server.url}/mem0/v1/ping/",
                           headers={"Authorization": f"Bearer {key}"})
        assert bearer.json()["org_id"] == "initech"
    # A key the client sends as it always does (Token) but without the memory permission.
    with raw(live_server, operator_key("initech", "admin")) as http:
        refused = http.get("/v1/ping/")
        assert refused.status_code == 403
        assert refused.json() == {"detail": "This API key lacks the 'memory' permission."}


def test_mem0s_api_is_left_out_of_the_openapi_schema(client, db) -> None:
    """/mem0/ is mem0's API: mem0's own reference describes it, the README how it differs."""
    paths = client.get("/api/schema/", {"format": "json"}).json()["paths"]
    assert paths and not [path for path in paths if path.startswith("/mem0")]


def test_the_rate_limit_answers_429_with_retry_after(live_server, settings,
                                                    fresh_rate_window) -> None:
    settings.API_RATE_LIMIT = "3/min"
    client = mem0(live_server, operator_tenant("initech"))  # the ping counts
    client.search("tea", filters={"user_id": "alice"})
    client.users()
    with pytest.raises(RateLimitError) as limited:
        client.users()
    assert 0 < limited.value.debug_info["retry_after"] <= 61
    assert limited.value.message.startswith("Request was throttled")


def test_pages_and_searches_cost_the_same_queries_whatever_their_size(acme, globex) -> None:
    """Through the DRF test client (mem0's views take the REST API's Bearer key too)."""
    for user in ("p1", "p2", "p3", "p4"):
        for n in range(5):
            assert acme.client.post("/mem0/v3/memories/add/", {
                "messages": [{"role": "user", "content": f"I like tea number {n}."}],
                "user_id": user, "infer": False}, format="json").status_code == 200
    statements = []
    for size in (1, 4):
        with CaptureQueriesContext(connection) as queries:
            listed = acme.client.post(f"/mem0/v3/memories/?page_size={size}",
                                      {"filters": {"user_id": "p1"}}, format="json").json()
            people = acme.client.get(f"/mem0/v1/entities/?page_size={size}").json()
            found = acme.client.post("/mem0/v3/memories/search/", {
                "query": "tea", "filters": {"user_id": "p1"}, "top_k": size}, format="json").json()
        assert (len(listed["results"]), listed["count"]) == (size, 5)
        assert [p["total_memories"] for p in people["results"]] == [5] * size
        assert len(found["results"]) == size
        statements.append(len(queries))
    assert statements[0] == statements[1]
    assert globex.client.get("/mem0/v1/entities/?page=1").json()["count"] == 0
    streamed = globex.client.get("/mem0/v1/entities/").streaming_content
    assert json.loads(b"".join(streamed))["count"] == 0
