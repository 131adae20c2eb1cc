from __future__ import annotations

from django.test import Client


def test_healthz_is_alive() -> None:
    assert Client().get("/healthz").json() == {"status": "ok"}


def test_readyz_checks_database_and_broker(db) -> None:
    response = Client().get("/readyz")
    assert response.status_code == 200, response.json()
