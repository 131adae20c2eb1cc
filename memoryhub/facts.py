"""Pure rules of facts (spec: Facts): their types, the size limit, the normalised text that
finds duplicates, and the predicates that hold one value at a time.

The normalised text is what "the same fact" means: Unicode NFKC, case folded, whitespace
collapsed, and trailing sentence punctuation dropped, so "User likes tea." and
"user  likes TEA" are one fact.
"""

from __future__ import annotations

import re
import unicodedata

FACT_TYPES = ("fact", "preference", "profile", "triple", "process_attribute")
MAX_FACT_BYTES = 2000
# A new fact with one of these predicates and another object replaces the old one: a person
# has one name, one home, one employer, one job, one diet and one birthday at a time.
SINGLE_VALUED = frozenset({"name", "home", "employer", "job", "diet", "birthday"})
# A like and a dislike (or a "no longer likes") of the same object contradict each other.
OPPOSITES = {"likes": ("dislikes", "no_longer_likes"), "dislikes": ("likes",),
             "no_longer_likes": ("likes",)}

_SPACES = re.compile(r"\s+")
_TRAILING = re.compile(r"[\s.!;,]+$")


def normalized_text(text: str) -> str:
    """The comparison form of a fact's content (or of a triple's object)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _TRAILING.sub("", _SPACES.sub(" ", folded).strip())


def contradicts(*, predicate: str, object_: str, other_predicate: str, other_object: str) -> bool:
    """Whether a fact (``predicate``, ``object_``) makes a fact about the same subject
    with (``other_predicate``, ``other_object``) untrue."""
    if not predicate or not other_predicate:
        return False
    same_object = normalized_text(object_) == normalized_text(other_object)
    if predicate == other_predicate:
        return predicate in SINGLE_VALUED and not same_object
    return same_object and other_predicate in OPPOSITES.get(predicate, ())
