"""A cheap pre-test for pg_trgm's ``word_similarity`` in recall's fuzzy matching
(``memoryhub.store.recall``): no database access, no tenant."""

from __future__ import annotations

import math

# A probe costs about 0.2 us per 100 bytes of text, and a term of n letters has n + 1 probes:
# measured against pg_trgm, the pre-test stops paying somewhere past 30 letters (a 500-letter
# term took three times the similarity's own time), and real words are shorter.
MAX_TERM_CHARS = 32


def trigram_probes(term: str, threshold: float) -> tuple[list[str], int]:
    """What a text must contain for a query term's ``word_similarity`` with it to reach
    ``threshold``: ``(probes, need)``, at least ``need`` of the substrings ``probes`` in the
    lowercased text; ``([], 0)``: no pre-test.

    Why this loses no match: pg_trgm makes a one-word term of n >= 2 letters or digits
    ``a...yz`` into three padded trigrams ("  a", " ab", "yz ") and its distinct
    three-letter substrings, ``u`` trigrams in all, and ``word_similarity`` is the share of
    them found among a stretch of the text's trigrams: reaching the threshold takes
    ``ceil(threshold * u)`` of them. A text that has the trigram " ab" has a word beginning
    with "ab", so its lowercased text contains "ab"; likewise "a" for "  a", "yz" for "yz "
    and the substring itself for an inner trigram. Counting the probes found (``strpos``,
    about 0.3 us each, against 10-50 us for the similarity) thus bounds the trigrams shared
    from above. Only for ASCII letters and digits: elsewhere pg_trgm's word boundaries and
    case follow the database's locale, so other terms always get the similarity; and only
    up to ``MAX_TERM_CHARS``.
    ``tests/recall/test_fuzzy_pretest.py`` checks the claim on typos and plurals."""
    word = term.lower()  # pg_trgm lowercases the term as it does the text
    if not 2 <= len(word) <= MAX_TERM_CHARS or not (word.isascii() and word.isalnum()):
        return [], 0
    inner = sorted({word[i:i + 3] for i in range(len(word) - 2)})
    need = math.ceil(threshold * (3 + len(inner)) - 1e-9)
    return [word[0], word[:2], word[-2:], *inner], need


# Fills a statement's unused probe slots: lower() leaves no capital letter in the text, so a
# probe with one is never found and adds nothing to the count.
NEVER_FOUND = "A"


def probes_in_slots(probes: list[str], need: int, slots: int) -> tuple[list[str], int]:
    """The pre-test ``(probes, need)`` of ``trigram_probes`` in exactly ``slots`` probes, for a
    statement that tests a fixed number of them: the first ``slots``, the others dropped and
    ``need`` lowered by as many (each of them might have been found, so the pre-test still
    loses no match; a term of more than ``slots - 1`` letters is tested less strictly), and
    ``NEVER_FOUND`` in the slots left over. ``([], 0)``: no pre-test."""
    dropped = max(len(probes) - slots, 0)
    if not probes or need - dropped <= 0:
        return [], 0
    return probes[:slots] + [NEVER_FOUND] * (slots - len(probes[:slots])), need - dropped
