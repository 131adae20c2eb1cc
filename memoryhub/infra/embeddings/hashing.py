"""A deterministic, dependency-free embedding by feature hashing.

It needs no model and no network, so it is the default for development, tests and small
installs. It captures lexical overlap (shared words, word pairs and word fragments, so
"vegetarian" and "vegetarians" match), not meaning: "car" and "automobile" are unrelated
to it.

Vectors are stable across processes, machines and Python versions because buckets come
from blake2b, not from Python's per-process salted `hash()`. Changing the feature recipe
below changes every vector: stored embeddings must then be recomputed.

An empty text, or one without any word character, gets the zero vector.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

import numpy as np

from memoryhub.infra.embeddings.base import DEFAULT_DIMENSION, l2_normalise

_WORD = re.compile(r"\w+")
_CHAR_NGRAM_SIZES = (3, 4, 5)

# Relative weight of each feature family. A word has many character n-grams, so they are
# scaled down to keep whole-word matches the strongest signal; bigrams reward shared
# phrases without dominating.
_WEIGHT_WORD = 1.0
_WEIGHT_BIGRAM = 0.7
_WEIGHT_CHARS = 0.35
# Function words carry little about what a memory is about, yet they are in almost every
# text; at full weight "she is vegetarian" would look related to "the car is red".
_WEIGHT_STOPWORD = 0.1

_STOPWORDS = frozenset(
    """
    a an the and or but if then so than that this these those there here of to in on at by
    for with from into onto as about over under up down out off is am are was were be been
    being do does did done have has had having it its it's i me my mine we us our you your
    he him his she her hers they them their what which who whom whose when where why how
    not no yes all any some can could will would shall should may might must just also very
    """.split()
)


class HashingProvider:
    """Feature-hashing embedder: word unigrams, bigrams and character 3-5-grams."""

    name = "hashing"

    def __init__(self, dimension: int = DEFAULT_DIMENSION) -> None:
        if dimension < 1:
            raise ValueError(f"dimension must be positive, got {dimension}")
        self.dimension = dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if isinstance(texts, str):
            # A bare string is a Sequence[str] of characters: almost certainly a bug.
            raise TypeError("embed() takes a sequence of texts, not a single string")
        if not texts:
            return []
        matrix = np.array([self._vector(text) for text in texts], dtype=np.float64)
        return l2_normalise(matrix).tolist()

    def _vector(self, text: str) -> list[float]:
        # Summed in a list of floats: the same doubles, added in the same order, as into the
        # NumPy array this used to be, so the same vector.
        vector = [0.0] * self.dimension
        buckets = _buckets(self.dimension)
        for feature, weight in _weighted_features(_words(text)).items():
            found = buckets.get(feature)
            if found is None:
                found = _bucket_remembered(buckets, feature, self.dimension)
            bucket, sign = found
            vector[bucket] += sign * weight
        return vector


def _words(text: str) -> list[str]:
    # NFKC folds compatibility forms (full-width letters, ligatures) before lowercasing.
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def _weighted_features(words: list[str]) -> dict[str, float]:
    """Feature -> weight, with sublinear term frequency (1 + ln tf)."""
    content = [word for word in words if word not in _STOPWORDS]
    families = (
        (_WEIGHT_WORD, [f"w:{word}" for word in content]),
        (_WEIGHT_WORD * _WEIGHT_STOPWORD, [f"w:{w}" for w in words if w in _STOPWORDS]),
        # Bigrams keep stop words: "is not" and "is" differ where it matters.
        (_WEIGHT_BIGRAM, [f"b:{a} {b}" for a, b in zip(words, words[1:], strict=False)]),
        (_WEIGHT_CHARS, [gram for word in content for gram in _char_ngrams(word)]),
    )
    weights: dict[str, float] = {}
    for family_weight, features in families:
        for feature, count in Counter(features).items():
            # Most features occur once, and 1 + ln 1 is exactly 1.0: no log to take.
            weights[feature] = family_weight if count == 1 else family_weight * (1.0 + math.log(count))
    return weights


def _char_ngrams(word: str) -> list[str]:
    """The word's character n-grams as features (``c:`` and the n-gram)."""
    # Padding marks word starts and ends, so " veg" (a prefix) differs from "veg" inside.
    padded = f" {word} "
    return [
        "c:" + padded[start : start + size]
        for size in _CHAR_NGRAM_SIZES for start in range(len(padded) - size + 1)
    ]


def _bucket(feature: str, dimension: int) -> tuple[int, float]:
    """Stable (bucket, sign) for a feature; the sign bit makes collisions cancel on average."""
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    sign = 1.0 if value >> 63 else -1.0
    return value % dimension, sign


# The features seen lately and their buckets, per dimension: a plain dict looked up by the
# feature alone, where lru_cache built a two-argument key for every feature of every text
# (with the lists above, a query's embedding took 0.66-0.79 of its time; README). Emptied
# when full, so it stays bounded, and common words come back at once.
_BUCKETS_KEPT = 65536


@functools.cache
def _buckets(dimension: int) -> dict[str, tuple[int, float]]:
    return {}


def _bucket_remembered(buckets: dict[str, tuple[int, float]], feature: str, dimension: int) -> tuple[int, float]:
    """``_bucket``, kept in ``buckets`` (emptied first when it holds ``_BUCKETS_KEPT``)."""
    if len(buckets) >= _BUCKETS_KEPT:
        buckets.clear()
    found = buckets[feature] = _bucket(feature, dimension)
    return found
