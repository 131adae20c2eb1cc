"""kill -9 under concurrent writes: every write the server acknowledged (2xx) is stored.

The servers run the production settings (DEBUG off, the connection pool) on an embedded
PostgreSQL of this module's own (its own data directory), never the shared test database:
one test kills that PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.faults.harness import (
    Gunicorn,
    OwnCluster,
    Writers,
    gunicorn,
    missing,
    own_cluster,
    stored,
)

pytestmark = pytest.mark.faults


@pytest.fixture(scope="module")
def cluster() -> Iterator[OwnCluster]:
    with own_cluster() as made:
        yield made


@pytest.fixture(scope="module")
def server(cluster: OwnCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gunicorn]:
    """One gunicorn for the module (starting one is the slow part); a test that kills it
    starts it again."""
    with gunicorn(cluster.env, tmp_path_factory.mktemp("gunicorn") / "gunicorn.log") as made:
        yield made


def test_acknowledged_writes_survive_kill_9_of_the_web_workers_and_of_gunicorn(
    cluster: OwnCluster, server: Gunicorn,
) -> None:
    with Writers(server.base, cluster.key, tag="web") as writers:
        writers.wait_acknowledged(10)
        server.kill_workers()  # requests in flight die; the master forks new workers
        writers.wait_acknowledged(10)
        server.kill()  # the master and its workers
        server.start()  # on the same port: the writers go on
        writers.wait_acknowledged(10)
    found = stored(server.base, cluster.key, writers.users)
    assert writers.ledger.wrong == []
    assert missing(writers.ledger, found) == []
    assert writers.ledger.statuses[0] > 0  # some writes did hit the kills


def test_acknowledged_writes_survive_kill_9_of_postgresql_which_is_503_meanwhile(
    cluster: OwnCluster, server: Gunicorn,
) -> None:
    """While the database is away every API answer is 503 with Retry-After and the JSON error
    body, and a page is a 503 page; when it is back the same server processes serve again."""
    server.ensure_running()
    with Writers(server.base, cluster.key, tag="db") as writers:
        writers.wait_acknowledged(10)
        before = {worker.pid for worker in server.workers()}
        cluster.kill()
        writers.wait_status(503, 8)
        # An invitation link: the page looks the token up in the database.
        page = httpx.get(f"{server.base}/invite/1.{'a' * 40}", timeout=30)
        cluster.start()
        writers.wait_acknowledged(10)
    found = stored(server.base, cluster.key, writers.users)
    assert {worker.pid for worker in server.workers()} == before  # no process restarted
    assert (page.status_code, page.headers["Retry-After"]) == (503, "2")
    assert page.headers["Content-Type"].startswith("text/html")
    assert "Briefly unavailable" in page.text
    assert writers.ledger.wrong == []
    assert missing(writers.ledger, found) == []
