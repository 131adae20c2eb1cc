"""Augmentation with the rules extractor, running the task's function in this process:
each statement kind, what it must not learn, merges, invalidation and its history,
idempotency, the person's and the app's edits winning, and the switches. (The end-to-end
path through a real worker: test_augmentation_worker.py.)"""

from __future__ import annotations

import time
from datetime import timedelta
from uuid import uuid4

import pytest
from django.utils import timezone

from memoryhub.models import AugmentationFailure, Conversation, Fact, FactVersion
from memoryhub.services import augmentation
from memoryhub.services.augmentation import augmentation_failure_record
from memoryhub.tasks import augment_conversation, augmentation_sweep
from tenants.context import tenant_context
from tests.platform.test_shared_cache import CACHE_URL

USER = "alice"
FACTS = f"/api/v1/users/{USER}/facts"


def capture(kit, *texts: str, role: str = "user", session: str = "s1", at: str | None = None) -> str:
    messages = [{"role": role, "content": text, **({"created_at": at} if at else {})}
                for text in texts]
    response = kit.client.post(f"/api/v1/users/{USER}/sessions/{session}/messages",
                               {"messages": messages}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["conversation_id"]


def augment(kit, conversation_id: str) -> int:
    return augment_conversation(tenant_id=kit.tenant.id, conversation_id=conversation_id)


def facts(kit, include_invalid: bool = False) -> list[dict]:
    query = {"include_invalid": "true"} if include_invalid else {}
    return kit.client.get(FACTS, query).json()["facts"]


def learnt(kit, *texts: str) -> list[tuple[str, str, str, str]]:
    augment(kit, capture(kit, *texts))
    return sorted((f["type"], f["predicate"], f["object"], f["content"]) for f in facts(kit))


@pytest.mark.parametrize(("text", "expected"), [
    ("My name is Ana Silva.", ("profile", "name", "Ana Silva", "User's name is Ana Silva")),
    ("Call me Bob", ("profile", "name", "Bob", "User's name is Bob")),
    ("I live in Lisbon.", ("profile", "home", "Lisbon", "User lives in Lisbon")),
    ("I moved to Porto last week!", ("profile", "home", "Porto", "User lives in Porto")),
    ("I work at Acme Corp", ("profile", "employer", "Acme Corp", "User works at Acme Corp")),
    ("I work for the city council", ("profile", "employer", "the city council",
                                     "User works at the city council")),
    ("I work as a nurse", ("profile", "job", "nurse", "User works as a nurse")),
    ("I'm a software engineer.", ("profile", "job", "software engineer",
                                  "User works as a software engineer")),
    ("I love hiking", ("preference", "likes", "hiking", "User loves hiking")),
    ("I really enjoy jazz.", ("preference", "likes", "jazz", "User enjoys jazz")),
    ("I prefer dark mode", ("preference", "prefers", "dark mode", "User prefers dark mode")),
    ("I don't like olives", ("preference", "dislikes", "olives", "User dislikes olives")),
    ("I hate mornings", ("preference", "dislikes", "mornings", "User dislikes mornings")),
    ("I no longer like coffee.", ("preference", "no_longer_likes", "coffee",
                                  "User no longer likes coffee")),
    ("I'm vegetarian", ("profile", "diet", "vegetarian", "User is vegetarian")),
    ("I am vegan.", ("profile", "diet", "vegan", "User is vegan")),
    ("I'm allergic to peanuts", ("profile", "allergic_to", "peanuts",
                                 "User is allergic to peanuts")),
    ("My wife is called Maria.", ("triple", "wife", "Maria", "User's wife is called Maria")),
    ("My dog is Rex", ("triple", "dog", "Rex", "User's dog is called Rex")),
    ("My son's name is Tom", ("triple", "son", "Tom", "User's son is called Tom")),
    ("My birthday is May 3rd.", ("profile", "birthday", "May 3rd", "User's birthday is May 3rd")),
    ("I was born on 3 May 1990", ("profile", "birthday", "3 May 1990",
                                  "User's birthday is 3 May 1990")),
    # As people type: lower case, no apostrophe, openers, the rest of the clause after it.
    ("my name is ana", ("profile", "name", "Ana", "User's name is Ana")),
    ("call me bob", ("profile", "name", "Bob", "User's name is Bob")),
    ("My name is Will.", ("profile", "name", "Will", "User's name is Will")),
    ("My name is Ana Silva from Lisbon", ("profile", "name", "Ana Silva",
                                          "User's name is Ana Silva")),
    ("Please call me Bob, everyone does.", ("profile", "name", "Bob", "User's name is Bob")),
    ("Im a teacher", ("profile", "job", "teacher", "User works as a teacher")),
    ("Btw im vegan", ("profile", "diet", "vegan", "User is vegan")),
    ("I'm vegetarian now.", ("profile", "diet", "vegetarian", "User is vegetarian")),
    ("Im allergic to shellfish", ("profile", "allergic_to", "shellfish",
                                  "User is allergic to shellfish")),
    ("I'm a mechanic.", ("profile", "job", "mechanic", "User works as a mechanic")),
    ("I'm an engineer at Google.", ("profile", "job", "engineer", "User works as an engineer")),
    ("I work as a nurse at St. Mary's hospital.", ("profile", "job", "nurse",
                                                   "User works as a nurse")),
    ("OK. I work at Acme.", ("profile", "employer", "Acme", "User works at Acme")),
    ("Guess what!!! I moved to Madrid!!!", ("profile", "home", "Madrid", "User lives in Madrid")),
    ("I moved to Berlin in 2020.", ("profile", "home", "Berlin", "User lives in Berlin")),
    ("I live in Lisbon with my wife.", ("profile", "home", "Lisbon", "User lives in Lisbon")),
    ("I've been living in Lisbon for years", ("profile", "home", "Lisbon",
                                              "User lives in Lisbon")),
    ("I live in Trinidad and Tobago", ("profile", "home", "Trinidad and Tobago",
                                       "User lives in Trinidad and Tobago")),
    ("I live in Lisbon and I will visit Paris tomorrow.", ("profile", "home", "Lisbon",
                                                            "User lives in Lisbon")),
    ("My dog is called Rex and he is very cute.", ("triple", "dog", "Rex",
                                                   "User's dog is called Rex")),
    # The employer ends where the job begins; the words' case is the typist's.
    ("I work at Acme as an engineer.", ("profile", "employer", "Acme", "User works at Acme")),
    ("I work at Acme, as a designer", ("profile", "employer", "Acme", "User works at Acme")),
    ("My Wife is Maria.", ("triple", "wife", "Maria", "User's wife is called Maria")),
    ("I'M VEGETARIAN!", ("profile", "diet", "vegetarian", "User is vegetarian")),
    ("I live in the Bay Area.", ("profile", "home", "the Bay Area",
                                 "User lives in the Bay Area")),
    # "my" is the user's: the fact says it in the third person; a name with "My" stays.
    ("I love my dog.", ("preference", "likes", "their dog", "User loves their dog")),
    ("I'm allergic to my own cat", ("profile", "allergic_to", "their own cat",
                                    "User is allergic to their own cat")),
    ("I hate it when people interrupt me", ("preference", "dislikes",
                                            "it when people interrupt them",
                                            "User dislikes it when people interrupt them")),
    ("I like My Chemical Romance", ("preference", "likes", "My Chemical Romance",
                                    "User likes My Chemical Romance")),
    # The place ends where the clause goes on.
    ("I live in Lisbon but work in Porto.", ("profile", "home", "Lisbon", "User lives in Lisbon")),
    ("I moved to Lisbon for work.", ("profile", "home", "Lisbon", "User lives in Lisbon")),
    ("I moved to Lisbon 3 years ago", ("profile", "home", "Lisbon", "User lives in Lisbon")),
    ("I live in the New Forest", ("profile", "home", "the New Forest",
                                  "User lives in the New Forest")),
    ("I work at Same Day Delivery.", ("profile", "employer", "Same Day Delivery",
                                      "User works at Same Day Delivery")),
])
def test_each_statement_kind_becomes_a_fact_about_the_user(acme, text, expected) -> None:
    assert learnt(acme, text) == [expected]
    fact = facts(acme)[0]
    assert fact["subject"] == "user" and fact["updated_by"] == "augmentation"


@pytest.mark.parametrize("text", [
    "Do I like tea?",
    "Should I move to Lisbon?",
    "If I lived in Paris I would eat croissants.",
    "I would love a house by the sea.",
    "Maybe I'll move to Berlin.",
    "I wish I lived in Rome.",
    "My sister likes cats.",
    "He said I like jazz.",
    "My friend is vegetarian.",
    "I'm a big fan of football.",
    "my dog is sick",
    "Hello there!",
    "I'm a mother.",
    "I'm a christian",
    "I like it.",
    "call me later",
    "my name is not important",
    "If I move to Paris, I will live near the Seine.",
])
def test_questions_hypotheticals_and_other_peoples_statements_are_not_facts(acme, text) -> None:
    assert learnt(acme, text) == []


# (a true value, a statement that only reads like another value of the same single-valued
# predicate): a home, an employer, a job or a birthday it must not invalidate.
NOT_A_NEW_VALUE = [
    ("I live in Lisbon.", "I live in the moment."),
    ("I live in Lisbon.", "I live in fear of spiders."),
    ("I live in Lisbon.", "I moved to a new apartment."),
    ("I live in Lisbon.", "I live in a flat."),
    ("I work at Acme.", "I work at night."),
    ("I work at Acme.", "I work at home on Fridays."),
    ("I work at Acme.", "I work for a living."),
    ("I work at Acme.", "I work for myself on weekends."),
    ("I'm a nurse.", "I'm a picky eater."),
    ("I'm a nurse.", "I'm a light sleeper."),
    ("I'm a nurse.", "I'm a Canadian."),
    ("I'm a nurse.", "I'm a feminist."),
    ("I'm a nurse.", "I'm a good cook."),
    ("I'm a nurse.", "I'm a former teacher."),
    ("I'm a nurse.", "I'm an ex-teacher."),
    ("I'm a nurse.", "I'm an aspiring writer."),
    ("I'm a nurse.", "I'm a homeowner."),
    ("My birthday is May 3.", "My birthday is tomorrow!"),
    ("My birthday is May 3.", "My birthday is next week."),
    ("My birthday is May 3.", "My birthday is on Friday."),
    ("My birthday is May 3.", "I was born on a Tuesday."),
    ("I live in Lisbon.", "I moved to a different team."),
    ("I live in Lisbon.", "I moved to the new office."),
    ("I live in Lisbon.", "I moved to the cloud last year."),
    ("I work at Acme.", "I work at the same company as my wife."),
    ("I'm a nurse.", "I'm a passenger on this flight."),
]


@pytest.mark.parametrize(("true", "idiom"), NOT_A_NEW_VALUE)
def test_what_only_reads_like_a_new_value_invalidates_nothing(acme, true, idiom) -> None:
    augment(acme, capture(acme, true, at="2026-01-01T10:00:00Z"))
    augment(acme, capture(acme, idiom, session="s2", at="2026-06-01T10:00:00Z"))
    [fact] = facts(acme, include_invalid=True)
    assert fact["invalid_at"] is None, (true, idiom, fact)


def test_only_the_users_own_messages_count(acme) -> None:
    conversation = capture(acme, "I live in Lisbon.", role="assistant")
    augment(acme, conversation)
    assert facts(acme) == []


def test_one_message_can_state_several_facts(acme) -> None:
    found = learnt(acme, "I live in Porto and I work at Acme. I love jazz!")
    assert sorted(row[1] for row in found) == ["employer", "home", "likes"]


def test_the_same_statement_again_merges_adding_its_source(acme) -> None:
    conversation = capture(acme, "I love hiking.", "Yes, I love hiking!")
    augment(acme, conversation)
    [fact] = facts(acme)
    assert len(fact["source"]["message_ids"]) == 2 and fact["version"] == 2
    assert fact["source"]["conversation_id"] == conversation
    history = acme.client.get(f"{FACTS}/{fact['id']}/history").json()["history"]
    assert [(h["event"], h["actor"]) for h in history] == [("created", "augmentation"),
                                                           ("merged", "augmentation")]


def test_a_merge_keeps_the_higher_confidence(acme) -> None:
    made = acme.client.post(FACTS, {"content": "User lives in Lisbon", "confidence": 0.3},
                            format="json").json()
    conversation = capture(acme, "I live in Lisbon")
    augment(acme, conversation)
    [fact] = facts(acme)
    assert fact["id"] == made["id"] and fact["confidence"] == 0.9
    assert fact["source"]["conversation_id"] == conversation  # the app's fact had none
    acme.client.patch(f"{FACTS}/{made['id']}", {"confidence": 1.0}, format="json")
    augment(acme, capture(acme, "I live in Lisbon.", session="s2"))
    assert facts(acme)[0]["confidence"] == 1.0


def test_a_contradiction_invalidates_the_old_fact_never_deletes_it(acme) -> None:
    augment(acme, capture(acme, "I live in Lisbon.", at="2026-01-01T10:00:00Z"))
    augment(acme, capture(acme, "I moved to Porto.", session="s2", at="2026-06-01T10:00:00Z"))
    assert [f["object"] for f in facts(acme)] == ["Porto"]
    porto, lisbon = facts(acme, include_invalid=True)
    assert lisbon["object"] == "Lisbon" and lisbon["invalid_at"] == porto["valid_at"]
    assert porto["invalid_at"] is None and porto["valid_at"] == "2026-06-01T10:00:00Z"
    history = acme.client.get(f"{FACTS}/{lisbon['id']}/history").json()["history"]
    assert [h["event"] for h in history] == ["created", "invalidated"]
    with tenant_context(acme.tenant.id):
        replaced_by = FactVersion.objects.get(event="invalidated").related_fact_id
    assert str(replaced_by) == porto["id"]
    feed = acme.client.get("/api/v1/events", {"limit": 100}).json()["events"]
    assert [(e["data"]["change"], e["actor"]) for e in feed if e["type"] == "fact.changed"] == [
        ("created", "augmentation"), ("created", "augmentation"), ("invalidated", "augmentation")]


@pytest.mark.parametrize(("old", "new", "predicate"), [
    ("My name is Ana.", "Call me Bea.", "name"),
    ("I live in Lisbon.", "I moved to Porto.", "home"),
    ("I work at Acme.", "I work for Globex.", "employer"),
    ("I work as a nurse.", "I'm a teacher.", "job"),
    ("I'm vegetarian.", "I'm vegan.", "diet"),
    ("My birthday is May 3.", "I was born on June 4.", "birthday"),
])
def test_each_single_valued_predicate_is_contradicted_by_another_value(acme, old, new,
                                                                      predicate) -> None:
    augment(acme, capture(acme, old, at="2026-01-01T10:00:00Z"))
    augment(acme, capture(acme, new, session="s2", at="2026-06-01T10:00:00Z"))
    newer, older = facts(acme, include_invalid=True)
    assert newer["predicate"] == older["predicate"] == predicate
    assert (newer["invalid_at"], older["invalid_at"]) == (None, "2026-06-01T10:00:00Z")


def test_a_first_name_does_not_end_the_full_name(acme) -> None:
    """"Call me Ana" after "my name is Ana Silva" is the same name, shorter: it invalidated
    the full name. Another name still ends both."""
    augment(acme, capture(acme, "My name is Ana Silva.", at="2026-01-01T10:00:00Z"))
    augment(acme, capture(acme, "Call me Ana.", session="s2", at="2026-02-01T10:00:00Z"))
    assert sorted((f["object"], f["invalid_at"]) for f in facts(acme, include_invalid=True)) == [
        ("Ana", None), ("Ana Silva", None)]
    augment(acme, capture(acme, "My name is Bea.", session="s3", at="2026-03-01T10:00:00Z"))
    assert sorted((f["object"], f["invalid_at"]) for f in facts(acme, include_invalid=True)) == [
        ("Ana", "2026-03-01T10:00:00Z"), ("Ana Silva", "2026-03-01T10:00:00Z"), ("Bea", None)]


def test_a_diet_rule_is_kept_beside_the_diet(acme) -> None:
    """Gluten-free, lactose intolerant, keto, halal or kosher go with any diet: each was read
    as the diet, so "I'm vegetarian and I'm lactose intolerant" left the person no longer
    vegetarian."""
    augment(acme, capture(acme, "I'm vegetarian and I'm lactose intolerant.",
                          at="2026-01-01T10:00:00Z"))
    augment(acme, capture(acme, "I am gluten-free.", "Im strictly halal", session="s2",
                          at="2026-06-01T10:00:00Z"))
    assert sorted((f["predicate"], f["object"], f["invalid_at"])
                  for f in facts(acme, include_invalid=True)) == [
        ("diet", "vegetarian", None), ("diet_rule", "gluten-free", None),
        ("diet_rule", "halal", None), ("diet_rule", "lactose intolerant", None)]
    augment(acme, capture(acme, "I'm vegan now.", session="s3", at="2026-07-01T10:00:00Z"))
    assert sorted((f["object"], f["invalid_at"]) for f in facts(acme, include_invalid=True)
                  if f["predicate"] == "diet") == [
        ("vegan", None), ("vegetarian", "2026-07-01T10:00:00Z")]


def test_no_longer_liking_invalidates_a_preference_too(acme) -> None:
    augment(acme, capture(acme, "I prefer jazz.", at="2026-11-01T10:00:00Z"))
    augment(acme, capture(acme, "I no longer like jazz.", at="2026-11-03T10:00:00Z"))
    prefers = next(f for f in facts(acme, include_invalid=True) if f["predicate"] == "prefers")
    assert prefers["invalid_at"] == "2026-11-03T10:00:00Z"


def test_a_company_with_its_legal_form_is_the_same_employer(acme) -> None:
    augment(acme, capture(acme, "I work at Acme.", at="2026-09-01T10:00:00Z"))
    augment(acme, capture(acme, "I work at Acme Inc.", at="2026-09-02T10:00:00Z"))
    assert [(f["content"], f["invalid_at"]) for f in facts(acme, include_invalid=True)] == [
        ("User works at Acme", None)]


def test_no_longer_liking_invalidates_the_like(acme) -> None:
    augment(acme, capture(acme, "I love coffee.", "I like tea."))
    augment(acme, capture(acme, "I don't like coffee anymore.", session="s2"))
    valid = sorted((f["predicate"], f["object"]) for f in facts(acme))
    assert valid == [("likes", "tea"), ("no_longer_likes", "coffee")]
    invalid = [f for f in facts(acme, include_invalid=True) if f["invalid_at"]]
    assert [(f["predicate"], f["object"]) for f in invalid] == [("likes", "coffee")]


def test_an_older_statement_arriving_late_is_created_already_invalid(acme) -> None:
    augment(acme, capture(acme, "I live in Porto.", at="2026-06-01T10:00:00Z"))
    augment(acme, capture(acme, "I live in Lisbon.", session="s2", at="2026-01-01T10:00:00Z"))
    assert [f["object"] for f in facts(acme)] == ["Porto"]
    lisbon = next(f for f in facts(acme, include_invalid=True) if f["object"] == "Lisbon")
    assert lisbon["invalid_at"] == "2026-06-01T10:00:00Z"
    history = acme.client.get(f"{FACTS}/{lisbon['id']}/history").json()["history"]
    assert [(h["version"], h["event"]) for h in history] == [(1, "created"), (2, "invalidated")]


def _rewind(kit, conversation_id: str) -> None:
    with tenant_context(kit.tenant.id):
        Conversation.objects.filter(id=conversation_id).update(augmented_seq=0)


def test_the_same_messages_twice_change_nothing(acme) -> None:
    conversation = capture(acme, "I live in Lisbon.", "I love jazz.", "I love jazz!")
    assert augment(acme, conversation) == 3
    before = facts(acme, include_invalid=True)
    events = acme.client.get("/api/v1/events", {"limit": 100}).json()["events"]
    assert augment(acme, conversation) == 0  # the cursor
    _rewind(acme, conversation)
    assert augment(acme, conversation) == 3  # read again: the stable keys
    assert facts(acme, include_invalid=True) == before
    assert acme.client.get("/api/v1/events", {"limit": 100}).json()["events"] == events


def test_the_same_messages_twice_leave_the_summary_as_it_was(acme) -> None:
    """Idempotent: the rolling summary of the same messages is the same text, and its time
    stays the time it was written."""
    conversation = capture(acme, "I live in Lisbon.", "I love jazz.")
    url = f"/api/v1/users/{USER}/conversations/{conversation}"
    augment(acme, conversation)
    before = acme.client.get(url).json()
    assert before["summary"] and before["summary_updated_at"]
    _rewind(acme, conversation)
    assert augment(acme, conversation) == 2
    assert acme.client.get(url).json() == before


def test_a_fact_the_app_deleted_or_edited_is_not_learnt_again(acme) -> None:
    conversation = capture(acme, "I live in Lisbon.", "I love jazz.")
    augment(acme, conversation)
    by_object = {f["object"]: f for f in facts(acme)}
    acme.client.delete(f"{FACTS}/{by_object['Lisbon']['id']}")
    acme.client.patch(f"{FACTS}/{by_object['jazz']['id']}", {"content": "User loves free jazz"},
                      format="json")
    _rewind(acme, conversation)
    augment(acme, conversation)
    [fact] = facts(acme, include_invalid=True)
    assert fact["content"] == "User loves free jazz" and fact["updated_by"] == "app"


def test_an_edit_that_no_longer_names_the_object_drops_the_triple(acme) -> None:
    augment(acme, capture(acme, "I live in Lisbon.", "I love jazz."))
    by_object = {f["object"]: f for f in facts(acme)}
    moved = acme.client.patch(f"{FACTS}/{by_object['Lisbon']['id']}",
                              {"content": "User lives in Porto"}, format="json").json()
    assert (moved["subject"], moved["predicate"], moved["object"]) == (None, None, None)
    typo = acme.client.patch(f"{FACTS}/{by_object['jazz']['id']}",
                             {"content": "User loves JAZZ!"}, format="json").json()
    assert (typo["predicate"], typo["object"]) == ("likes", "jazz")  # still names it

    augment(acme, capture(acme, "I live in Lisbon.", session="s2"))  # said again, later
    valid = {f["content"]: f for f in facts(acme)}
    assert set(valid) == {"User lives in Porto", "User loves JAZZ!", "User lives in Lisbon"}
    assert valid["User lives in Porto"]["version"] == moved["version"]  # not merged into


def test_augmentation_switched_off_learns_nothing_and_moves_the_cursor(acme, settings) -> None:
    acme.tenant.augmentation_enabled = False
    acme.tenant.save(update_fields=["augmentation_enabled"])
    conversation = capture(acme, "I live in Lisbon.")
    assert augment(acme, conversation) == 1
    assert facts(acme) == []
    acme.tenant.augmentation_enabled = True
    acme.tenant.save(update_fields=["augmentation_enabled"])
    assert augment(acme, conversation) == 0  # what was said while it was off stays unlearnt
    settings.AUGMENTATION_PROVIDER = "none"
    augment(acme, capture(acme, "I love jazz."))
    assert facts(acme) == []
    settings.AUGMENTATION_PROVIDER = "rules"
    augment(acme, capture(acme, "I love tea."))
    assert [f["object"] for f in facts(acme)] == ["tea"]


def test_a_capture_enqueues_its_run_on_commit(acme, eager_tasks, django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        capture(acme, "I live in Lisbon.")
    with django_capture_on_commit_callbacks(execute=True):
        capture(acme, "I love jazz.")  # inline runs have no debounce: each capture runs
    assert sorted(f["object"] for f in facts(acme)) == ["Lisbon", "jazz"]
    with tenant_context(acme.tenant.id):
        assert Fact.objects.count() == 2


def _last_message_minutes_ago(kit, conversation_id: str, minutes: int) -> None:
    with tenant_context(kit.tenant.id):
        Conversation.objects.filter(id=conversation_id).update(
            last_message_at=timezone.now() - timedelta(minutes=minutes))


def test_the_sweep_runs_what_a_lost_message_left_behind(acme, globex, eager_tasks) -> None:
    """No on-commit here (the test's transaction never commits): as if the run's message was
    lost. The sweep runs conversations left behind for longer than the grace, and no other."""
    lost = capture(acme, "I live in Lisbon.")
    _last_message_minutes_ago(acme, lost, 20)
    recent = capture(globex, "I live in Oslo.")  # its own run may still be on the way
    failed = capture(acme, "I love jazz.", session="s2")
    _last_message_minutes_ago(acme, failed, 20)
    with tenant_context(acme.tenant.id):
        augmentation_failure_record(batch=None, conversation_id=failed, error="the model is down",
                                    malformed=False, attempts=7)

    assert augmentation_sweep() == 1
    assert [f["object"] for f in facts(acme)] == ["Lisbon"]
    with tenant_context(globex.tenant.id):
        assert Conversation.objects.get(id=recent).augmented_seq == 0
    assert augmentation_sweep() == 0  # the cursor moved: nothing left behind

    with tenant_context(acme.tenant.id):  # a message came after the failure
        AugmentationFailure.objects.update(created_at=timezone.now() - timedelta(minutes=30))
    assert augmentation_sweep() == 1
    assert sorted(f["object"] for f in facts(acme)) == ["Lisbon", "jazz"]


def test_a_burst_of_captures_schedules_one_run_on_the_redis_cache(acme, settings,
                                                                  monkeypatch) -> None:
    """Production's cache is Redis, whose Django backend keeps whole seconds of a timeout:
    the debounce key of AUGMENTATION_DEBOUNCE_SECONDS (0.5) must still hold until the run is
    due (a run per capture calls the model once per capture, each run re-reading the
    messages), and no longer (a capture after that needs a run of its own). The broker is
    not the point here: the runs are counted as they are handed to it."""
    settings.CACHES = {"default": {"BACKEND": "memoryhub.infra.cache.ResilientRedisCache",
                                   "LOCATION": CACHE_URL, "KEY_PREFIX": f"debounce-{uuid4()}"}}
    sent: list[dict] = []
    monkeypatch.setattr(augmentation, "job_enqueue", lambda **job: sent.append(job))
    run = (acme.tenant.id, str(uuid4()))
    augmentation._runs_schedule([run])
    augmentation._runs_schedule([run])  # within the debounce: the scheduled run reads it too
    assert len(sent) == 1 and sent[0]["countdown"] == settings.AUGMENTATION_DEBOUNCE_SECONDS
    time.sleep(settings.AUGMENTATION_DEBOUNCE_SECONDS + 0.05)  # the run is due: it may be reading
    augmentation._runs_schedule([run])
    assert len(sent) == 2
    augmentation._runs_schedule([run])
    assert len(sent) == 2


def test_the_history_and_the_export_say_which_fact_replaced_which(acme) -> None:
    """Invalidation stores the fact that replaced the old one (FactVersion.related_fact_id);
    the person's fact history and their export must show it, or the export leaves out what
    is stored about them and nobody can tell which statement a fact gave way to."""
    augment(acme, capture(acme, "I live in Lisbon.", at="2026-01-01T10:00:00Z"))
    augment(acme, capture(acme, "I moved to Porto.", session="s2", at="2026-06-01T10:00:00Z"))
    augment(acme, capture(acme, "I live in Faro.", session="s3", at="2026-03-01T10:00:00Z"))
    by_object = {f["object"]: f for f in facts(acme, include_invalid=True)}
    lisbon, porto, faro = by_object["Lisbon"]["id"], by_object["Porto"]["id"], by_object["Faro"]["id"]

    def replaced(fact_id: str) -> list[tuple[str, str | None]]:
        history = acme.client.get(f"{FACTS}/{fact_id}/history").json()["history"]
        return [(h["event"], h["related_fact_id"]) for h in history]

    assert replaced(lisbon) == [("created", None), ("invalidated", porto)]
    assert replaced(faro) == [("created", None), ("invalidated", porto)]  # stated before Porto
    assert replaced(porto) == [("created", None)]
    export = acme.client.get(f"/api/v1/users/{USER}/export").json()
    exported = {f["id"]: [(h["event"], h["related_fact_id"]) for h in f["history"]]
                for f in export["facts"]}
    assert exported == {fact_id: replaced(fact_id) for fact_id in (lisbon, porto, faro)}
