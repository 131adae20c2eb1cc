"""A cheap pre-test for pg_trgm's ``word_similarity`` in recall's fuzzy matching
(``memoryhub.store.recall``): no database access, no tenant."""

from __future__ import annotations

import math


def trigram_probes(term: str, threshold: float) -> tuple[list[str], int]:
    """The inner trigrams of a query term and how many of them a text must contain for the
    term's ``word_similarity`` with it to reach ``threshold``; ``([], 0)``: no pre-test.

    Why this loses no match: pg_trgm makes a one-word term of n >= 2 letters or digits into
    three padded trigrams ("  a", " ab", "yz ") and its n - 2 three-letter substrings, and
    ``word_similarity`` is the share of the term's distinct trigrams found in a stretch of
    the text's. Reaching the threshold over ``u`` distinct trigrams thus takes at least
    ``ceil(threshold * u) - 3`` inner ones, and each inner trigram of the text is a substring
    of its lowercased text (``strpos``, about 0.3 us, against 10-50 us for the similarity).
    Only for ASCII letters and digits: elsewhere pg_trgm's word boundaries and case follow
    the database's locale, so other terms always get the similarity.
    ``tests/recall/test_fuzzy_pretest.py`` checks the claim on typos and plurals."""
    if len(term) < 2 or not (term.isascii() and term.isalnum()):
        return [], 0
    word = term.lower()  # pg_trgm lowercases the term as it does the text
    inner = sorted({word[i:i + 3] for i in range(len(word) - 2)})
    need = math.ceil(threshold * (3 + len(inner)) - 1e-9) - 3
    return (inner, need) if need > 0 else ([], 0)
