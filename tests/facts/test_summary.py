"""The rules extractor's rolling summary (spec: "Its summary is extractive (the
conversation's most central sentences, at most 600 characters)"), stored on the
conversation unless the app set one, and its sentence splitter (sentencex)."""

from __future__ import annotations

from datetime import UTC, datetime

from memoryhub.augmentation.base import SourceMessage
from memoryhub.augmentation.rules import SUMMARY_MAX_CHARS, extractive_summary, sentences
from memoryhub.infra.embeddings.hashing import HashingProvider
from tests.facts.test_augmentation import USER, augment, capture, facts
from tests.facts.test_openai_extractor import state

TRIP = [
    "I am planning a trip to Japan in April.",
    "Japan in April is lovely: the cherry blossoms in Kyoto and Tokyo are at their best.",
    "My cat is called Miso.",
    "For a trip to Japan in April, book Kyoto hotels early, the cherry blossom season fills them.",
    "Thanks, I will book the Kyoto hotels for the trip this week.",
    "The trip to Japan in April: Kyoto first for the cherry blossoms, then Tokyo by train.",
    "In April the cherry blossoms make Kyoto and Tokyo busy, so the trip to Japan needs hotels.",
    "A Japan rail pass covers the trip from Tokyo to Kyoto in April, cherry blossoms on the way.",
    "Kyoto in April: temples, cherry blossoms and the trip back to Tokyo on a Japan rail pass.",
]


def test_the_summary_is_the_most_central_sentences_in_the_order_said(acme) -> None:
    conversation = capture(acme, TRIP[0])
    capture(acme, TRIP[1], role="assistant")
    capture(acme, TRIP[2], TRIP[4])
    capture(acme, TRIP[3], role="assistant")
    capture(acme, *TRIP[5:], role="assistant")
    augment(acme, conversation)
    seq, summary, by = state(acme, conversation)
    assert seq == 9 and by == "augmentation"
    assert sum(len(s) + 1 for s in TRIP) > SUMMARY_MAX_CHARS  # not everything fits
    assert 0 < len(summary) <= SUMMARY_MAX_CHARS
    assert "Miso" not in summary  # the aside is the least central
    said = [TRIP[i] for i in (0, 1, 2, 4, 3, 5, 6, 7, 8)]
    kept = [s for s in said if s in summary]
    assert len(kept) >= 2 and summary == " ".join(kept)  # whole sentences, in order
    listed = acme.client.get(f"/api/v1/users/{USER}/conversations").json()["conversations"]
    assert listed[0]["summary"] == summary


def test_the_summary_rolls_over_later_messages_and_stays_within_the_limit(acme) -> None:
    conversation = capture(acme, *TRIP[:3])
    augment(acme, conversation)
    first = state(acme, conversation)[1]
    capture(acme, *(f"Kyoto day {n}: temples, gardens and cherry blossoms." for n in range(30)))
    augment(acme, conversation)
    second = state(acme, conversation)[1]
    assert second != first and len(second) <= SUMMARY_MAX_CHARS and "Kyoto day" in second


def test_an_apps_summary_wins_over_augmentations(acme) -> None:
    conversation = capture(acme, *TRIP)
    augment(acme, conversation)
    acme.client.put(f"/api/v1/users/{USER}/conversations/{conversation}/summary",
                    {"summary": "Japan trip."}, format="json")
    capture(acme, "I live in Lisbon.", "I will fly from Lisbon to Tokyo.")
    augment(acme, conversation)
    assert state(acme, conversation)[1:] == ("Japan trip.", "app")
    assert sorted(f["object"] for f in facts(acme)) == ["Lisbon", "Miso"]  # still learnt


def test_only_the_user_and_the_assistant_are_summarised() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    system = [SourceMessage(id="1", seq=1, role="system", content="You are helpful.", created_at=at)]
    assert extractive_summary("", system, HashingProvider()) is None
    long = [SourceMessage(id="2", seq=2, role="user", content="word " * 200, created_at=at)]
    cut = extractive_summary("", long, HashingProvider())
    assert cut is not None and len(cut) == SUMMARY_MAX_CHARS and cut.endswith("\u2026")


def test_sentences_are_split_by_sentencex_then_lines_and_semicolons(acme) -> None:
    assert list(sentences("I live in St. Petersburg. I like jazz!\nMy dog is Rex; I'm vegan")) == [
        "I live in St. Petersburg.", "I like jazz!", "My dog is Rex;", "I'm vegan"]
    augment(acme, capture(acme, "I moved to St. Petersburg last year. I work at Acme Inc. now!"))
    assert sorted(f["object"] for f in facts(acme)) == ["Acme Inc.", "St. Petersburg"]
