"""Recall's pre-test for trigram matching (``memoryhub.store._trigrams``) never hides a match.

The search computes pg_trgm's ``word_similarity`` for a query term and a text only where the
lowercased text holds enough of the term's inner trigrams. The claim: wherever the similarity
reaches the threshold, the pre-test passes. Checked here against PostgreSQL itself on typos,
plurals, truncations and unrelated words, with the search's own expression and probes (at
most ``PROBE_SLOTS`` of them: long terms are tested with some dropped, ``probes_in_slots``).
"""

from __future__ import annotations

import random
from itertools import product

import pytest
from django.db import connection
from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH

from memoryhub.store._trigrams import (
    MAX_TERM_CHARS,
    NEVER_FOUND,
    probes_in_slots,
    trigram_probes,
)
from memoryhub.store.recall import (
    FUZZY_THRESHOLD,
    PROBE_SLOTS,
    PROBES_FOUND,
    RECORD_KINDS,
    _records_statement,
    _statement,
)

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
    probes = [probes_in_slots(*trigram_probes(term, FUZZY_THRESHOLD), PROBE_SLOTS)
              for term in terms]
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT count(*) FILTER (WHERE reaches),
                   count(*) FILTER (WHERE reaches AND rejected),
                   count(*) FILTER (WHERE rejected)
            FROM (
                SELECT word_similarity(t.term, x.text) >= %(threshold)s AS reaches,
                       t.need > 0 AND {PROBES_FOUND} < t.need AS rejected
                FROM unnest(%(terms)s::text[], %(probes)s::text[], %(needs)s::int[])
                       AS u(term, probes_text, need)
                CROSS JOIN LATERAL (SELECT u.term, string_to_array(u.probes_text, ' ') AS probes,
                                           u.need + %(extra)s AS need) t
                CROSS JOIN unnest(%(texts)s::text[]) AS x(text)
                CROSS JOIN LATERAL (SELECT lower(x.text) AS low) l
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


def test_a_term_fills_the_statements_probe_slots() -> None:
    probes, need = trigram_probes("kubernetes", FUZZY_THRESHOLD)  # 11 probes, 7 needed
    assert (len(probes), need) == (11, 7)
    assert probes_in_slots(probes, need, 8) == (probes[:8], 4)  # 3 dropped: 3 fewer needed
    assert probes_in_slots(probes, need, 4) == ([], 0)  # nothing left to ask: no pre-test
    short, short_need = trigram_probes("name", FUZZY_THRESHOLD)
    assert probes_in_slots(short, short_need, 8) == ([*short, *[NEVER_FOUND] * 3], short_need)
    assert probes_in_slots([], 0, 8) == ([], 0)


def test_every_recall_statement_fits_psycopgs_cache_of_parsed_statements() -> None:
    """Longer, psycopg would parse the statement again on every search."""
    statements = [_statement(*shape) for shape in product((True, False), repeat=3)]
    statements += [_records_statement(kind, *shape) for kind in RECORD_KINDS
                   for shape in product((True, False), repeat=4)]
    assert max(len(sql.encode()) for sql in statements) <= MAX_CACHED_STATEMENT_LENGTH
