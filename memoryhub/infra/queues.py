"""The Celery queues, and which worker takes what (README "Scaling out").

Webhook deliveries wait on tenants' endpoints, up to WEBHOOK_TIMEOUT each; on the queue of
embeddings and augmentation, an endpoint that hangs held a worker slot per delivery, and
every tenant's facts and vectors waited behind it. So deliveries, and the sweep that only
feeds them, go to a queue of their own, which a worker of its own consumes: a hanging
endpoint can then delay only other deliveries.

- The default queue is ``CELERY_QUEUE`` (tests give each session its own); the webhooks'
  queue is named after it, ``<default>.webhooks``, so that such sessions stay apart.
- Workers name the webhooks' queue by its alias, ``webhooks``: ``-Q webhooks`` for the
  webhooks worker, ``-X webhooks`` for the one that takes everything else. Their command
  lines (the systemd units, compose, ``make run``) thus do not change with ``CELERY_QUEUE``.
- A worker started without ``-Q``/``-X`` consumes both queues: one worker doing everything,
  as before this split (a deployment that has not added the webhooks worker still delivers).

Routing is Celery's own: ``task_routes`` (in the settings, from :data:`TASK_ROUTES`) sends a
task's messages to the queue its route names, also for ``send_task`` by name
(memoryhub/infra/jobs.py) and for beat.
"""

from __future__ import annotations

from kombu import Exchange, Queue

WEBHOOKS = "webhooks"  # the alias a worker's -Q / -X names

# Tasks (their explicit ``name=`` in memoryhub/tasks.py; tests/workers/test_task_names.py
# checks each is registered) that go to the webhooks' queue: the delivery, and the sweep
# that does nothing but enqueue deliveries.
WEBHOOK_TASKS = ("memoryhub.tasks.deliver_webhook", "memoryhub.tasks.webhooks_sweep")

TASK_ROUTES = {name: {"queue": WEBHOOKS} for name in WEBHOOK_TASKS}


def webhooks_queue(default: str) -> str:
    """The webhooks' queue's name next to the default queue ``default``."""
    return f"{default}.{WEBHOOKS}"


def task_queues(default: str) -> tuple[Queue, Queue]:
    """``task_queues`` for the default queue ``default``: it, and the webhooks' queue.

    Each queue has a direct exchange and a routing key of its own name, as Celery makes the
    default queue and any queue a route names: with the default exchange and routing key
    (what Celery fills in when a queue has none), the default queue's messages would reach
    the webhooks' queue too."""
    webhooks = webhooks_queue(default)
    return (Queue(default, Exchange(default), routing_key=default),
            Queue(webhooks, Exchange(webhooks), routing_key=webhooks, alias=WEBHOOKS))
