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
# A like (or a preference) and a dislike or a "no longer likes" of the same object
# contradict each other.
OPPOSITES = {"likes": ("dislikes", "no_longer_likes"), "prefers": ("dislikes", "no_longer_likes"),
             "dislikes": ("likes", "prefers"), "no_longer_likes": ("likes", "prefers")}

_SPACES = re.compile(r"\s+")
_TRAILING = re.compile(r"[\s.!;,]+$")
# "Acme" and "Acme Inc." are one employer: a company's legal form is not another object.
_LEGAL_FORM = re.compile(
    r"[\s,]+(?:inc|incorporated|ltd|limited|llc|llp|plc|corp|corporation|co|company|gmbh|ag|"
    r"sa|s\.a|bv|b\.v|nv|n\.v|srl|sas|oy|ab|as|pty|pvt)\.?$")


def normalized_text(text: str) -> str:
    """The comparison form of a fact's content (or of a triple's object)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _TRAILING.sub("", _SPACES.sub(" ", folded).strip())


def same_object(predicate: str, one: str, other: str) -> bool:
    """Whether two objects of ``predicate`` name the same thing (case, spacing, trailing
    punctuation, and for an employer its legal form, aside)."""
    first, second = normalized_text(one), normalized_text(other)
    if predicate == "employer":
        first, second = _LEGAL_FORM.sub("", first), _LEGAL_FORM.sub("", second)
    return first == second


def _part_of_the_name(one: str, other: str) -> bool:
    """Whether one name is the other's words or some of them: "Ana" of "Ana Silva" (a
    first name, "call me Ana") is no other name."""
    first, second = set(normalized_text(one).split()), set(normalized_text(other).split())
    return bool(first) and bool(second) and (first <= second or second <= first)


def contradicts(*, predicate: str, object_: str, other_predicate: str, other_object: str) -> bool:
    """Whether a fact (``predicate``, ``object_``) makes a fact about the same subject
    with (``other_predicate``, ``other_object``) untrue."""
    if not predicate or not other_predicate:
        return False
    same = same_object(predicate, object_, other_object)
    if predicate == other_predicate:
        if predicate == "name" and _part_of_the_name(object_, other_object):
            return False
        return predicate in SINGLE_VALUED and not same
    return same and other_predicate in OPPOSITES.get(predicate, ())
