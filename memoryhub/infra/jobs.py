"""Enqueue Celery jobs by task name, so that what enqueues never imports the tasks.

The tasks (memoryhub/tasks.py) import the services; a service that imported a task to
enqueue it would close an import cycle. So services and the publisher send a task's NAME
with Celery's ``send_task``, and this module imports no service and no task module. Every
name below is a task's explicit ``name=`` in memoryhub/tasks.py (which also keeps messages
already in a queue, and the beat schedule in settings, pointing at the right task); the test
tests/workers/test_task_names.py checks that each one is registered in the Celery app.

``CELERY_TASK_ALWAYS_EAGER`` (tests, and development without a broker) has no effect on
``send_task``. With it set, the job runs inline through the registered task's own
``apply_async``, exactly as enqueueing the task object did: the task module is loaded the
way a worker loads it (Celery's autodiscovery of each app's ``tasks`` module), by name.
"""

from __future__ import annotations

from typing import Any

from celery import Task

from memoryhub.celery import app

EMBED_DOCUMENTS = "memoryhub.tasks.embed_documents"
DELIVER_WEBHOOK = "memoryhub.tasks.deliver_webhook"
AUGMENT_CONVERSATION = "memoryhub.tasks.augment_conversation"
EMBED_RECORDS = "memoryhub.tasks.embed_records"

# Every name this module is asked to send (tests/workers/test_task_names.py).
TASK_NAMES = frozenset({EMBED_DOCUMENTS, DELIVER_WEBHOOK, AUGMENT_CONVERSATION, EMBED_RECORDS})


def jobs_run_inline() -> bool:
    """True when jobs run in the caller (``CELERY_TASK_ALWAYS_EAGER``), not on a worker."""
    return bool(app.conf.task_always_eager)


def job_enqueue(
    *, name: str, kwargs: dict[str, Any], countdown: float | None = None,
    argsrepr: str | None = None, kwargsrepr: str | None = None,
) -> None:
    """Send one message for the task called ``name`` (or run it inline in eager mode).

    ``argsrepr``/``kwargsrepr`` replace what Celery would otherwise build with its safe repr
    for the message's headers, a large share of a publish's CPU for big arguments.
    Errors from the broker propagate: the caller decides whether a sweep will catch up.
    """
    options: dict[str, Any] = {}
    if countdown:
        options["countdown"] = countdown
    if argsrepr is not None:
        options["argsrepr"] = argsrepr
    if kwargsrepr is not None:
        options["kwargsrepr"] = kwargsrepr
    if app.conf.task_always_eager:
        _registered_task(name).apply_async(kwargs=kwargs, **options)
        return
    app.send_task(name, kwargs=kwargs, **options)


def _registered_task(name: str) -> Task:
    # Only eager mode needs the task object. A process that has not imported the task
    # module yet loads it as a worker does: by autodiscovery, not by an import here.
    if name not in app.tasks:
        app.autodiscover_tasks(force=True)
    return app.tasks[name]
