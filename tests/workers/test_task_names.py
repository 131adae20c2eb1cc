"""Jobs are enqueued by task name (memoryhub/infra/jobs.py): every name sent must be a task.

A name that no task carries is not an error when it is sent: the message waits in the queue
and the worker drops it as unregistered. So the names are checked here, against the Celery
app after it discovered the task modules the way a worker does.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.conf import settings

from memoryhub.celery import app as celery_app
from memoryhub.infra import jobs
from memoryhub.infra.queues import webhooks_queue

REPO_ROOT = Path(__file__).resolve().parents[2]
TASKS_MODULE = REPO_ROOT / "memoryhub" / "tasks.py"
PROJECT_PACKAGES = ("memoryhub", "tenants", "api")


@pytest.fixture(scope="module")
def registered() -> set[str]:
    celery_app.autodiscover_tasks(force=True)  # what a worker does when it starts
    return set(celery_app.tasks)


def _name_constants() -> dict[str, str]:
    return {attr: value for attr, value in vars(jobs).items()
            if attr.isupper() and isinstance(value, str) and value.startswith("memoryhub.")}


def test_every_name_jobs_sends_is_a_registered_task(registered: set[str]) -> None:
    constants = _name_constants()
    assert set(constants.values()) == jobs.TASK_NAMES  # none left out of TASK_NAMES
    assert sorted(jobs.TASK_NAMES - registered) == []


def test_every_beat_entry_is_a_registered_task(registered: set[str]) -> None:
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert scheduled
    assert sorted(scheduled - registered) == []


def test_every_routed_task_is_registered(registered: set[str]) -> None:
    """A route naming no task would leave the task it meant on the default queue."""
    assert settings.CELERY_TASK_ROUTES
    assert sorted(set(settings.CELERY_TASK_ROUTES) - registered) == []


def test_deliveries_and_only_what_feeds_them_go_to_the_webhooks_queue() -> None:
    """memoryhub/infra/queues.py: the webhooks worker (-Q webhooks) takes deliveries and their
    sweep; everything else, beat's other entries too, stays on the default queue."""
    default = settings.CELERY_TASK_DEFAULT_QUEUE
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    queues = {name: celery_app.amqp.router.route({}, name)["queue"].name
              for name in jobs.TASK_NAMES | scheduled}
    assert {name for name, queue in queues.items() if queue == webhooks_queue(default)} == {
        jobs.DELIVER_WEBHOOK, settings.CELERY_BEAT_SCHEDULE["webhooks-sweep"]["task"]}
    assert {name for name, queue in queues.items() if queue == default} == (
        set(queues) - {jobs.DELIVER_WEBHOOK, "memoryhub.tasks.webhooks_sweep"})


def _shared_task_names() -> dict[str, str | None]:
    """Function name -> the ``name=`` of its ``@shared_task(...)`` (None when it has none)."""
    found: dict[str, str | None] = {}
    for node in ast.parse(TASKS_MODULE.read_text()).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            call = decorator if isinstance(decorator, ast.Call) else None
            target = call.func if call else decorator
            if isinstance(target, ast.Name) and target.id == "shared_task":
                names = [k.value for k in (call.keywords if call else []) if k.arg == "name"]
                found[node.name] = ast.literal_eval(names[0]) if names else None
    return found


def test_every_task_has_an_explicit_name_that_queued_messages_know() -> None:
    """Moving memoryhub/tasks.py must not rename a task: messages in the queue, the beat
    schedule and jobs.py all carry today's names."""
    names = _shared_task_names()
    assert names
    assert {fn: name for fn, name in names.items() if name != f"memoryhub.tasks.{fn}"} == {}


ENQUEUERS = ("job_enqueue", "job_enqueue_soon")  # memoryhub/infra/jobs.py, publisher.py


def _forwards(function: ast.AST, call: ast.Call) -> bool:
    """``name=name`` inside a function or loop that has ``name`` itself: the publisher's
    thread passing a job on; the calls that made the job are checked."""
    name = next((k.value for k in call.keywords if k.arg == "name"), None)
    return isinstance(name, ast.Name) and name.id == "name" and any(
        isinstance(node, ast.arg | ast.Name) and getattr(node, "arg", getattr(node, "id", None))
        == "name" and node is not name for node in ast.walk(function))


def test_jobs_are_enqueued_only_with_the_names_jobs_declares() -> None:
    """A call with a literal name would escape the check above."""
    calls, offenders = 0, []
    for package in PROJECT_PACKAGES:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            for function in ast.walk(ast.parse(path.read_text())):
                if not isinstance(function, ast.FunctionDef):
                    continue
                for node in ast.walk(function):
                    if not (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(
                            node.func, "attr", None)) in ENQUEUERS) or _forwards(function, node):
                        continue
                    calls += 1
                    name = next((k.value for k in node.keywords if k.arg == "name"), None)
                    constant = getattr(name, "id", getattr(name, "attr", None))
                    if constant not in _name_constants():
                        offenders.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}")
    assert calls >= 3  # the publishers', the webhooks' and augmentation's
    assert offenders == []
