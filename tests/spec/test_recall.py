"""API v1, "Recall": ``POST /api/v1/users/{user_id}/recall``."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.spec.api_client import BASE, assert_error, ok, put_document

CONTEXT_HEADER = (
    "<memori_context>\n"
    "Only use the relevant context if it is relevant to the user's query.\n"
    "Relevant context about the user:\n"
)
RESULT_FIELDS = {"path", "scope", "snippet", "score", "similarity", "confidence", "updated_at",
                 # spec: Facts, every result gains "kind" (and ids, null for a document)
                 "kind", "id", "conversation_id", "session_id", "source"}


def recall(kit, user_id: str = "alice", **body) -> dict:
    response = kit.client.post(f"{BASE}/users/{user_id}/recall", body, format="json")
    assert response.status_code == 200, response.content
    assert set(response.json()) == {"results", "context"}
    return response.json()


def stated_at(iso: str) -> str:
    moment = datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def test_a_write_is_found_at_once_with_the_contracts_shapes(acme, globex) -> None:
    ok(acme, command="create", path="/memories/notes/diet.md",
       file_text="Vegetarian since 2019.\nLoves   lentil soup.")
    ok(acme, command="create", path="/memories/car.md", file_text="Drives a red bicycle.")
    body = recall(acme, query="what does she eat? vegetarian lentil soup")
    assert body["results"], body
    top = body["results"][0]
    assert set(top) == RESULT_FIELDS
    assert (top["path"], top["scope"], top["confidence"]) == ("/notes/diet.md", "global", 1.0)
    assert "Vegetarian" in top["snippet"]
    assert 0 < top["score"] <= 1 and 0 < top["similarity"] <= 1
    lines = body["context"].split("\n")
    assert body["context"].startswith(CONTEXT_HEADER)
    assert body["context"].endswith("\n</memori_context>")
    assert lines[3] == (f"- Vegetarian since 2019. Loves lentil soup. Stated at "
                        f"{stated_at(top['updated_at'])}")
    assert len(lines) == 4 + len([r for r in body["results"] if r["score"] >= 0.15])
    assert recall(globex, query="vegetarian lentil soup") == {"results": [], "context": ""}


def test_only_this_sessions_profiles_and_global_documents(acme, globex) -> None:
    put_document(acme, "global/g.md", "zebra global")
    put_document(acme, "profile/cooking/p.md", "zebra profile")
    put_document(acme, "session/s-1/s.md", "zebra session")
    put_document(acme, "session/s-2/x.md", "zebra elsewhere")
    put_document(acme, "profile/baking/y.md", "zebra baking")
    found = recall(acme, query="zebra", session_id="s-1", profile="cooking", relaxed=True)
    assert sorted((r["scope"], r["path"]) for r in found["results"]) == [
        ("global", "/g.md"), ("profile", "/p.md"), ("session", "/s.md")]
    assert [r["path"] for r in recall(acme, query="zebra", relaxed=True)["results"]] == ["/g.md"]


def test_threshold_relaxed_limit_and_confidence(acme, globex) -> None:
    for n in range(12):
        put_document(acme, f"global/n{n}.md", f"quokka note number {n}")
    assert len(recall(acme, query="quokka")["results"]) == 10
    assert len(recall(acme, query="quokka", limit=3)["results"]) == 3
    assert len(recall(acme, query="quokka", limit=50)["results"]) == 12
    nothing = recall(acme, query="quokka", threshold=1.0)
    assert nothing == {"results": [], "context": ""}
    relaxed = recall(acme, query="quokka", threshold=1.0, relaxed=True)
    assert len(relaxed["results"]) == 10 and relaxed["context"] == ""
    put_document(acme, "global/n0.md", "quokka note number 0", confidence=0.5)
    hit = next(r for r in recall(acme, query="quokka", limit=50)["results"] if r["path"] == "/n0.md")
    assert hit["confidence"] == 0.5
    for bad in ({"limit": 0}, {"limit": 51}, {"threshold": 1.5}, {"query": ""}, {"query": None},
                {"session_id": "bad id"}, {"profile": "Bad"}):
        response = acme.client.post(f"{BASE}/users/alice/recall", {"query": "q", **bad},
                                    format="json")
        assert_error(response, 400)


def test_memory_off_or_unknown_person_recalls_nothing(acme, globex) -> None:
    put_document(acme, "global/a.md", "walrus")
    assert recall(acme, query="walrus")["results"]
    assert recall(acme, "nobody", query="walrus") == {"results": [], "context": ""}
    acme.client.patch(f"{BASE}/users/alice", {"memory_enabled": False}, format="json")
    assert recall(acme, query="walrus") == {"results": [], "context": ""}
