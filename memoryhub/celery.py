"""The Celery app. Tasks live in memoryhub/tasks.py and stay thin (see docs in that module)."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_process_init
from kombu.transport import TRANSPORT_ALIASES

from memoryhub.infra.bootstrap import bootstrap

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")

# Redis broker URLs get kombu's Redis transport with a cheaper publish (see memoryhub.infra.broker).
# kombu resolves a URL's scheme through this table, for the web processes and the worker alike.
TRANSPORT_ALIASES["redis"] = TRANSPORT_ALIASES["rediss"] = "memoryhub.infra.broker:Transport"
# The filesystem transport (make run's default) without its race between writer and reader.
TRANSPORT_ALIASES["filesystem"] = "memoryhub.infra.broker:FilesystemTransport"

app = Celery("memoryhub")
# The worker reads django.conf:settings when it first needs its configuration: the embedded
# database must be published by then. Not at import: every import of the memoryhub package
# imports this module (memoryhub/__init__.py), the settings too. In web and test processes
# bootstrap() has already run and this does nothing.
app.on_configure.connect(lambda sender, **kwargs: bootstrap(), weak=False)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect
def _warm_embeddings(**kwargs: object) -> None:
    """Each worker process loads its embedding model as it starts, not in its first task."""
    from memoryhub.infra.embeddings import warm_up_in_background

    warm_up_in_background()
