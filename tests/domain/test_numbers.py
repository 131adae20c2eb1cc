"""``memoryhub.numbers``: ASCII digits only, at most 18 of them, and never an exception."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from memoryhub.numbers import MAX_DIGITS, IdConverter, parse_natural

BIGINT_MAX = 2**63 - 1


@given(st.integers(min_value=0, max_value=10**MAX_DIGITS - 1))
def test_every_ascii_number_up_to_18_digits_reads_back(number: int) -> None:
    assert parse_natural(str(number)) == number
    assert parse_natural(str(number).zfill(MAX_DIGITS)) == number
    assert number <= BIGINT_MAX


@given(st.text())
def test_anything_else_is_none_and_nothing_raises(text: str) -> None:
    value = parse_natural(text)
    if re.fullmatch(r"[0-9]{1,18}", text, flags=re.ASCII):
        assert value == int(text)
    else:
        assert value is None


def test_what_int_and_isdigit_forgive_is_refused() -> None:
    for text in ["²", "١٠", "۵", "９", " 1", "1 ", "+1", "-1", "1_000", "0x1", "", "9" * 19]:
        assert parse_natural(text) is None, text


def test_the_url_converter_matches_what_parse_natural_reads() -> None:
    converter = IdConverter()
    pattern = re.compile(converter.regex)
    assert pattern.fullmatch("9" * MAX_DIGITS) and not pattern.fullmatch("9" * (MAX_DIGITS + 1))
    assert not pattern.fullmatch("١")
    assert converter.to_python("0042") == 42 and converter.to_url(42) == "42"
