"""The shapes of catastrophic backtracking, found in a pattern's parse tree (Python's own
parser, ``re._parser``), not by timing it.

A backtracking matcher takes exponential (or polynomial) time when it can split the same
text between parts of the pattern in many ways and must try them all before failing. Three
shapes make that possible, and ``backtracking_risks`` reports each:

- a repeat holding an elastic repeat whose iterations can meet ambiguously: the body can
  both begin and end with the same character, as in ``(a+)+``, ``(\\w+\\s?)+`` or
  ``(.*,)*`` (``(?:-[a-z]+)+`` is fine: every iteration starts with ``-``, which ``[a-z]+``
  cannot eat), or a repeat of something that can match the empty string, ``(a*)*``;
- an alternation under a repeat whose alternatives can begin with the same character,
  ``(a|ab)*``, or that has an empty alternative;
- two elastic repeats in a row (with only optional parts between) that can eat the same
  character, ``\\d+\\d+`` or ``\\w+\\s?\\w+``: polynomial, and quadratic is enough to hurt.

Character sets are exact on Latin-1 and approximate above it (``OTHER`` stands for every
character over U+00FF), which only ever makes the check stricter. Possessive repeats and
atomic groups never backtrack and are not judged; lookarounds are judged on their own.
"""

from __future__ import annotations

import re._constants as C  # type: ignore[import-not-found]
import re._parser as P  # type: ignore[import-not-found]
from typing import Any

OTHER = -1  # any character above U+00FF
EVERYTHING = frozenset(range(256)) | {OTHER}
_DIGITS = frozenset(range(ord("0"), ord("9") + 1))
_SPACES = frozenset(map(ord, " \t\n\r\f\v"))
_WORD = _DIGITS | frozenset(map(ord, "_")) | frozenset(
    c for c in range(256) if chr(c).isalpha())
CATEGORIES = {
    C.CATEGORY_DIGIT: _DIGITS | {OTHER}, C.CATEGORY_NOT_DIGIT: EVERYTHING - _DIGITS,
    C.CATEGORY_SPACE: _SPACES | {OTHER}, C.CATEGORY_NOT_SPACE: EVERYTHING - _SPACES,
    C.CATEGORY_WORD: _WORD | {OTHER}, C.CATEGORY_NOT_WORD: EVERYTHING - _WORD,
}
REPEATS = {C.MAX_REPEAT, C.MIN_REPEAT}  # POSSESSIVE_REPEAT never gives anything back
ZERO_WIDTH = {C.AT, C.ASSERT, C.ASSERT_NOT}
Items = Any  # a re._parser.SubPattern, or a list of (op, argument)


def backtracking_risks(pattern: str) -> list[str]:
    """Why ``pattern`` can backtrack catastrophically, one line per shape found; [] if never."""
    risks: list[str] = []
    _check(P.parse(pattern), risks)
    return risks


def _char(code: int) -> frozenset[int]:
    return frozenset({code if code < 256 else OTHER})


def _in(items: list[tuple[Any, Any]]) -> frozenset[int]:
    chars: set[int] = set()
    negate = False
    for op, arg in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            chars |= _char(arg)
        elif op is C.RANGE:
            low, high = arg
            chars |= set(range(low, min(high, 255) + 1)) | ({OTHER} if high > 255 else set())
        elif op is C.CATEGORY:
            chars |= CATEGORIES.get(arg, EVERYTHING)
        else:
            chars |= EVERYTHING  # anything we do not model counts as everything
    return EVERYTHING - chars if negate else frozenset(chars)


def _single(op: Any, arg: Any) -> frozenset[int] | None:
    """The characters of an item that eats one character, else None."""
    if op is C.LITERAL:
        return _char(arg)
    if op is C.NOT_LITERAL:
        return EVERYTHING - _char(arg)
    if op is C.ANY:
        return EVERYTHING
    if op is C.IN:
        return _in(arg)
    return None


POSSESSIVE = getattr(C, "POSSESSIVE_REPEAT", None)
ATOMIC = getattr(C, "ATOMIC_GROUP", None)


def _parts(op: Any, arg: Any) -> list[Items]:
    """The sub-sequences of a compound item that match its text (lookarounds have none)."""
    if op in REPEATS or op is POSSESSIVE:
        return [arg[2]]
    if op is C.SUBPATTERN:
        return [arg[-1]]
    if op is ATOMIC:
        return [arg]
    if op is C.BRANCH:
        return list(arg[1])
    if op is C.GROUPREF_EXISTS:
        return [branch for branch in arg[1:] if branch is not None]
    return []


def _nullable(items: Items) -> bool:
    return all(_item_nullable(op, arg) for op, arg in items)


def _item_nullable(op: Any, arg: Any) -> bool:
    if _single(op, arg) is not None:
        return False
    if op in REPEATS or op is POSSESSIVE:
        return arg[0] == 0 or _nullable(arg[2])
    if op in ZERO_WIDTH or op is C.GROUPREF:
        return True
    parts = _parts(op, arg)
    if op in (C.BRANCH, C.GROUPREF_EXISTS):
        return any(_nullable(part) for part in parts) or op is C.GROUPREF_EXISTS
    return all(_nullable(part) for part in parts)


def _edge(items: Items, *, last: bool) -> frozenset[int]:
    """What the sequence's first (or last) consumed character can be."""
    found: set[int] = set()
    for op, arg in (reversed(list(items)) if last else items):
        found |= _item_edge(op, arg, last=last)
        if not _item_nullable(op, arg):
            break
    return frozenset(found)


def _item_edge(op: Any, arg: Any, *, last: bool) -> frozenset[int]:
    single = _single(op, arg)
    if single is not None:
        return single
    if op in ZERO_WIDTH:
        return frozenset()
    if op is C.GROUPREF:
        return EVERYTHING
    return frozenset().union(*(_edge(part, last=last) for part in _parts(op, arg)))


def _eats(items: Items) -> frozenset[int]:
    """Every character the sequence can consume anywhere (lookarounds aside)."""
    found: set[int] = set()
    for op, arg in items:
        single = _single(op, arg)
        if single is not None:
            found |= single
        elif op is C.GROUPREF:
            found |= EVERYTHING
        else:
            for part in _parts(op, arg):
                found |= _eats(part)
    return frozenset(found)


def _elastic(op: Any, arg: Any) -> bool:
    return op in REPEATS and arg[1] > arg[0]


def _has_elastic(items: Items) -> bool:
    # An atomic group or a possessive repeat never gives back what it took.
    return any(_elastic(op, arg) or (op not in (ATOMIC, POSSESSIVE)
                                     and any(_has_elastic(part) for part in _parts(op, arg)))
               for op, arg in items)


def _branches(items: Items) -> list[list[Items]]:
    """The alternations in the sequence (at any depth, lookarounds aside)."""
    found = []
    for op, arg in items:
        if op is C.BRANCH:
            found.append(list(arg[1]))
        for part in _parts(op, arg):
            found += _branches(part)
    return found


def _check(items: Items, risks: list[str]) -> None:
    items = list(items)
    for index, (op, arg) in enumerate(items):
        if op in REPEATS and arg[1] > 1:
            _check_repeat(arg[2], risks)
        if _elastic(op, arg):
            _check_neighbours(items, index, risks)
        for part in _parts(op, arg):
            _check(part, risks)
        if op in (C.ASSERT, C.ASSERT_NOT):  # judged on their own: (direction, pattern)
            _check(arg[1], risks)


def _check_repeat(body: Items, risks: list[str]) -> None:
    shown = _shown(body)
    if _nullable(body):
        risks.append(f"{shown} is repeated but can match the empty string")
    elif _has_elastic(body) and _edge(body, last=False) & _edge(body, last=True):
        risks.append(f"{shown} is repeated, holds a repeat, and can both begin and end with "
                     "the same character: its iterations can split a text in many ways")
    for alternatives in _branches(body):
        if any(_nullable(a) for a in alternatives):
            risks.append(f"{shown} is repeated and has an empty alternative")
        starts = [_edge(a, last=False) for a in alternatives]
        if any(starts[i] & starts[j] for i in range(len(starts)) for j in range(i)):
            risks.append(f"{shown} is repeated and has alternatives that can begin with the "
                         "same character")


def _check_neighbours(items: list[tuple[Any, Any]], index: int, risks: list[str]) -> None:
    eaten = _eats(items[index][1][2])
    for op, arg in items[index + 1:]:
        if _elastic(op, arg) and eaten & _item_edge(op, arg, last=False):
            risks.append(f"{_shown(items[index:index + 1])} is followed by another repeat that "
                         "can eat the same characters")
        if not _item_nullable(op, arg):
            return


def _shown(items: Items) -> str:
    return repr(str(list(items))[:120])
