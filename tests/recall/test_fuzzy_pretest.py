"""Recall's pre-test for trigram matching (``memoryhub.store._trigrams``) never hides a match.

The search computes pg_trgm's ``word_similarity`` for a query term and a text only where the
lowercased text holds enough of the term's inner trigrams. The claim: wherever the similarity
reaches the threshold, the pre-test passes. Checked here against PostgreSQL itself on typos,
plurals, truncations and unrelated words, with the pre-test written as the search writes it.
"""

from __future__ import annotations

import random

import pytest
from django.db import connection

from memoryhub.store._trigrams import MAX_TERM_CHARS, trigram_probes
from memoryhub.store.recall import FUZZY_THRESHOLD

pytestmark = pytest.mark.django_db

WORDS = """partner mountains hiking sister birthday allergic peanuts marathon violin
lasagna vegetarian Portugal kayaking astronomy bookshelf keyboard tomatoes espresso
meeting deadline invoice quarterly migration database kubernetes 2024 v3release""".split()


def variants(word: str, rng: random.Random) -> set[str]:
    """The word as people mistype or inflect it."""
    found = {word, word + "s", word + "es", word[:-1], word[:-2], word[1:]}
    for _ in range(6):
        i = rng.randrange(len(word))
        letter = rng.choice("abcdefghijklmnopqrstuvwxyz")
        found |= {word[:i] + word[i + 1:], word[:i] + letter + word[i + 1:],
                  word[:i] + letter + word[i:]}
        if i < len(word) - 1:
            found.add(word[:i] + word[i + 1] + word[i] + word[i + 2:])
    return {v.lower() for v in found if len(v) >= 2}


def texts(rng: random.Random) -> list[str]:
    """Sentences holding the words, with punctuation, capitals and glued digits."""
    made = []
    for _ in range(120):
        words = rng.sample(WORDS, 4)
        words[0] = words[0].upper() if rng.random() < 0.3 else words[0].capitalize()
        made.append(f"My {words[0]}, the {words[1]}!! ({words[2]}-{words[3]}) 42{words[1]}.")
    return made


def pairs_checked(terms: list[str], sentences: list[str], extra_need: int = 0) -> tuple[int, int, int]:
    """(pairs whose similarity reaches the threshold, those of them the pre-test rejects,
    pairs the pre-test rejects), computed by PostgreSQL."""
    probes = [trigram_probes(term, FUZZY_THRESHOLD) for term in terms]
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT count(*) FILTER (WHERE reaches),
                   count(*) FILTER (WHERE reaches AND rejected),
                   count(*) FILTER (WHERE rejected)
            FROM (
                SELECT word_similarity(t.term, x.text) >= %(threshold)s AS reaches,
                       t.need > 0 AND (SELECT count(*) FROM unnest(t.probes) AS g(probe)
                                       WHERE strpos(lower(x.text), g.probe) > 0) < t.need
                         AS rejected
                FROM unnest(%(terms)s::text[], %(probes)s::text[], %(needs)s::int[])
                       AS u(term, probes_text, need)
                CROSS JOIN LATERAL (SELECT u.term, string_to_array(u.probes_text, ' ') AS probes,
                                           u.need + %(extra)s AS need) t
                CROSS JOIN unnest(%(texts)s::text[]) AS x(text)
            ) checked
            """,
            {"threshold": FUZZY_THRESHOLD, "terms": terms, "texts": sentences, "extra": extra_need,
             "probes": [" ".join(inner) for inner, _ in probes],
             "needs": [need for _, need in probes]},
        )
        similar, hidden, rejected = cursor.fetchone()
    return similar, hidden, rejected


def test_no_text_the_similarity_matches_is_rejected() -> None:
    rng = random.Random(5)
    terms = sorted({v for word in WORDS for v in variants(word, rng)})
    sentences = texts(rng)
    similar, hidden, rejected = pairs_checked(terms, sentences)
    assert hidden == 0
    assert similar > 1000, "the case must hold many matches"
    assert rejected > 0.5 * len(terms) * len(sentences), "the pre-test must spare most calls"


def test_one_more_trigram_demanded_would_hide_matches() -> None:
    """The bound is tight: the check above can tell a pre-test that asks too much."""
    rng = random.Random(5)
    terms = sorted({v for word in WORDS for v in variants(word, rng)})
    _, hidden, _ = pairs_checked(terms, texts(rng), extra_need=1)
    assert hidden > 0


@pytest.mark.parametrize(("term", "expected"), [
    # 8 trigrams: 5 needed; "  p", " pa" and "er " ask for "p", "pa" and "er"
    ("partner", (["p", "pa", "er", "art", "ner", "par", "rtn", "tne"], 5)),
    ("Name", (["n", "na", "me", "ame", "nam"], 3)),
    ("ok", (["o", "ok", "ok"], 2)),  # " ok" and "ok " are two trigrams
    ("aaaaaaa", (["a", "aa", "aa", "aaa"], 3)),  # one distinct inner trigram: 4 in all
    ("a", ([], 0)),
    ("café", ([], 0)),  # beyond ASCII, pg_trgm follows the database's locale
    ("foo_bar", ([], 0)),  # two words to pg_trgm
    ("x" * (MAX_TERM_CHARS + 1), ([], 0)),  # an id or a hash: probing would cost more
])
def test_probes_of_a_term(term: str, expected: tuple[list[str], int]) -> None:
    assert trigram_probes(term, FUZZY_THRESHOLD) == expected
