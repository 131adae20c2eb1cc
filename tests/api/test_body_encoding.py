"""Request bodies are UTF-8 JSON, whatever a ``charset`` parameter of Content-Type says.

The contract's bodies are UTF-8 and RFC 8259 defines no charset for ``application/json``.
DRF decoded a body with the charset it named: UTF-8 sent as ``charset=latin-1`` was stored
as mojibake, and a codec that is not a text encoding (``rot13``, ``zlib``, ``base64``...)
raised inside the parser, a 500.
"""

from __future__ import annotations

import json

import pytest

from tests.spec.api_client import BASE, assert_error

NOT_TEXT_CODECS = ["rot13", "zlib", "bz2", "base64", "hex", "uu", "quopri"]


def json_as(charset: str) -> str:
    return f"application/json; charset={charset}"


@pytest.mark.parametrize("charset", NOT_TEXT_CODECS)
def test_a_codec_that_is_not_a_text_encoding_reads_the_body_as_utf8(acme, globex,
                                                                   charset) -> None:
    tool = acme.client.post(f"{BASE}/users/alice/memory",
                            json.dumps({"command": "view", "path": "/memories"}),
                            content_type=json_as(charset))
    assert tool.status_code == 200 and tool.json()["is_error"] is False, tool.content
    recall = acme.client.post(f"{BASE}/users/alice/recall", json.dumps({"query": "tea"}),
                              content_type=json_as(charset))
    assert recall.json() == {"results": [], "context": ""}


def test_utf8_labelled_latin1_is_stored_as_sent(acme, globex) -> None:
    url = f"{BASE}/users/alice/documents/global/diet.md"
    body = json.dumps({"content": "Café au lait, crème brûlée"}, ensure_ascii=False).encode()
    put = acme.client.put(url, body, content_type=json_as("iso-8859-1"))
    assert put.status_code == 201, put.content
    assert acme.client.get(url).json()["content"] == "Café au lait, crème brûlée"
    assert globex.client.get(url).status_code == 404


def test_latin1_bytes_are_not_utf8_whatever_the_label(acme, globex) -> None:
    body = '{"query": "crème"}'.encode("latin-1")
    recall = acme.client.post(f"{BASE}/users/alice/recall", body,
                              content_type=json_as("latin-1"))
    assert_error(recall, 400, "invalid_json")
    content = '{"content": "crème"}'.encode("latin-1")
    put = acme.client.put(f"{BASE}/users/alice/documents/global/a.md", content,
                          content_type=json_as("latin-1"))
    assert_error(put, 422, "not_text")
