"""The Celery app. Tasks live in memoryhub/tasks.py and stay thin (see docs in that module)."""

from __future__ import annotations

import os

from celery import Celery
from kombu.transport import TRANSPORT_ALIASES

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")

# Redis broker URLs get kombu's Redis transport with a cheaper publish (see memoryhub.infra.broker).
# kombu resolves a URL's scheme through this table, for the web processes and the worker alike.
TRANSPORT_ALIASES["redis"] = TRANSPORT_ALIASES["rediss"] = "memoryhub.infra.broker:Transport"

app = Celery("memoryhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
