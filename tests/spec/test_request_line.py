"""Every GET the OpenAPI schema allows fits the production server's request line.

A documents list with a long ``prefix`` of four-byte characters (each percent-encoded as 12
URL characters) was refused by gunicorn itself, before the application, with an HTML 414
that the schema does not document: its ``prefix`` allowed 1,024 characters and gunicorn's
request line was 4,094 bytes. The prefix is now at most the longest path (a longer one can
match nothing) and deploy/gunicorn.conf.py reads request lines of up to 8,190 bytes.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from api.serializers import encode_cursor
from api.views.documents import MAX_PREFIX_CHARS
from memoryhub import paths
from tests.benchmarks.benchserver import free_port, serving
from tests.factories import ApiKeyFactory, TenantFactory
from tests.spec.test_schemathesis import server_env

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]


def test_the_longest_documents_list_the_schema_allows_reaches_the_application(
        transactional_db: Any) -> None:
    key = ApiKeyFactory(tenant=TenantFactory(slug="long-lines"), permissions=["memory"])
    # Each identifier at its longest, of a character that is percent-encoded; a prefix as long
    # as the longest path, of four-byte characters; the longest cursor a page hands out (the
    # longest session id and path, every path character escaped in its JSON).
    user_id = session_id = "|" * 128
    prefix = paths.MEMORIES_PREFIX + "/" + "\U0001f600" * (MAX_PREFIX_CHARS - 10)
    assert len(prefix) == MAX_PREFIX_CHARS
    cursor = encode_cursor(("session", session_id, "/" + '"' * (paths.MAX_PATH_BYTES - 1)))
    query = {"scope": "session", "session_id": session_id, "profile": "p" * 64,
             "prefix": prefix, "limit": "1000", "cursor": cursor}
    url = (f"/api/v1/users/{quote(user_id, safe='')}/documents?"
           + "&".join(f"{name}={quote(value, safe='')}" for name, value in query.items()))
    assert len(url) > 4094  # gunicorn's default limit_request_line

    env = {**server_env(), "WEB_WORKERS": "1", "WEB_THREADS": "2",
           "EMBEDDINGS_PROVIDER": "hashing"}  # post_worker_init loads no model
    port = free_port()
    cmd = [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "deploy" / "gunicorn.conf.py"),
           "memoryhub.wsgi:application", "--bind", f"127.0.0.1:{port}"]
    with serving(cmd, env, port, "gunicorn") as base:
        auth = {"Authorization": f"Bearer {key.plaintext}"}
        found = httpx.get(base + url, headers=auth, timeout=30)
        assert found.status_code == 200, found.text[:300]
        assert found.json() == {"documents": [], "next_cursor": None}
        # One character more than any path holds is the application's 400, in the API's shape.
        longer = url.replace("prefix=%2F", "prefix=%2Fa", 1)
        refused = httpx.get(base + longer, headers=auth, timeout=30)
        assert (refused.status_code, refused.json()["error"]["code"]) == (400, "invalid_prefix")
