from __future__ import annotations

from collections.abc import Iterator

import pytest

from memoryhub.celery import app as celery_app


@pytest.fixture
def eager_tasks() -> Iterator[None]:
    """Tasks run inline when enqueued: the chain hook -> task -> service without a broker."""
    celery_app.conf.task_always_eager = True
    try:
        yield
    finally:
        celery_app.conf.task_always_eager = False
