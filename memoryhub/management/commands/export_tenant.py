"""``manage.py export_tenant SLUG [--output FILE]``: everything a tenant holds, as JSON lines.

One JSON object per line, ``{"kind": ..., "data": ...}``:

- ``export`` first: the format's version, the tenant, the time, and how many records of each
  kind follow; ``end`` last, with the same counts as written, so a cut-off file shows.
- ``tenant``: the tenant's settings, as ``GET /api/v1/tenant`` shows them.
- ``end_user``: one per person, exactly the person's own export (``GET
  /api/v1/users/{user_id}/export`` and the "download everything" file of their page):
  documents, the events that name them, portal links, conversations with every message,
  facts with their history.
- ``profile``, ``api_key`` and ``webhook``: the API's shapes (keys masked, webhook secrets as
  their hint); ``event``: the feed's shape, for events that name no end user still held;
  ``member``, ``invitation``, ``webhook_delivery``, ``audit``, ``usage`` and
  ``augmentation_failure``: the rows' own fields, shaped below.

Secrets never leave: no key or token hash, no webhook secret. Left out as derived or
transient: ``memoryhub.selectors.tenant_export.LEFT_OUT``.

Everything is read in one read-only transaction that sees one snapshot (REPEATABLE READ), so
writes made while the export runs are in none of it rather than in part of it, and streamed:
records are written as they are read, progress goes to stderr (stdout may be the data). With
``--output``, the file appears under its name only when complete (``FILE.partial`` until
then), and an existing one is replaced only with ``--force``; a name ending in ``.gz`` is
gzipped. The export is recorded in the tenant's audit log.
"""

from __future__ import annotations

import gzip
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from django.utils import timezone
from rest_framework.utils.encoders import JSONEncoder

from api.representations import (
    api_key_representation,
    event_representation,
    export_representation,
    profile_representation,
    tenant_representation,
    webhook_representation,
)
from memoryhub.infra.db import read_only_snapshot
from memoryhub.management.progress import ProgressBar
from memoryhub.models import AugmentationFailure, UsageDay, WebhookDelivery
from memoryhub.selectors.tenant_export import tenant_export_counts, tenant_export_records
from tenants.context import tenant_context
from tenants.models import AuditEntry, Invitation, Membership, Tenant
from tenants.services import audit_record

FORMAT_VERSION = 1
ACTOR = "platform:export_tenant"


def _member(row: Membership) -> dict[str, Any]:
    return {"email": row.user.email, "role": row.role, "created_at": row.created_at}


def _invitation(row: Invitation) -> dict[str, Any]:
    """No token hash: the link is a secret."""
    return {"email": row.email, "role": row.role, "invited_by": row.invited_by,
            "created_at": row.created_at, "expires_at": row.expires_at,
            "accepted_at": row.accepted_at, "revoked_at": row.revoked_at}


def _delivery(row: WebhookDelivery) -> dict[str, Any]:
    return {"id": row.pk, "webhook_id": row.endpoint_id, "event_id": row.event_id,
            "status": row.status, "attempts": row.attempts, "last_status": row.last_status,
            "last_error": row.last_error, "next_attempt_at": row.next_attempt_at,
            "delivered_at": row.delivered_at, "created_at": row.created_at}


def _audit(row: AuditEntry) -> dict[str, Any]:
    return {"actor": row.actor, "action": row.action, "target": row.target, "data": row.data,
            "created_at": row.created_at}


def _usage(row: UsageDay) -> dict[str, Any]:
    return {"day": row.day, "writes": row.writes, "recalls": row.recalls,
            "stored_bytes": row.stored_bytes}


def _augmentation_failure(row: AugmentationFailure) -> dict[str, Any]:
    return {"conversation_id": row.conversation_id, "user_id": row.user_id,
            "provider": row.provider, "error": row.error, "malformed": row.malformed,
            "attempts": row.attempts, "created_at": row.created_at}


SHAPES: dict[str, Callable[[Any], dict[str, Any]]] = {
    "profile": profile_representation,
    "member": _member,
    "invitation": _invitation,
    "api_key": api_key_representation,
    "webhook": webhook_representation,
    "webhook_delivery": _delivery,
    "audit": _audit,
    "usage": _usage,
    "augmentation_failure": _augmentation_failure,
    "end_user": export_representation,
    "event": event_representation,
}


def _line(kind: str, data: Any) -> str:
    return json.dumps({"kind": kind, "data": data}, cls=JSONEncoder, ensure_ascii=False,
                      separators=(",", ":")) + "\n"


Write = Callable[[str], object]


@contextmanager
def _opened(output: str, stdout: OutputWrapper, *, force: bool = False) -> Iterator[Write]:
    """Where the lines go: stdout for "-"; else FILE.partial, renamed to FILE once everything
    is written (and removed if the export fails). An existing FILE, most likely an earlier
    export, is replaced only with ``force``."""
    if output == "-":
        yield stdout.write  # every line ends with its newline: the wrapper adds none
        stdout.flush()
        return
    path = Path(output)
    if not output or path.is_dir():  # found only at the end, by the rename, after all the work
        raise CommandError(f"Cannot write the export to {output!r}: name a file to write.")
    if path.exists() and not force:
        raise CommandError(f"{output!r} exists: name another file, or add --force to replace it.")
    partial = path.with_name(path.name + ".partial")
    try:
        stream = (gzip.open(partial, "wt", encoding="utf-8") if path.suffix == ".gz"
                  else partial.open("w", encoding="utf-8"))
    except OSError as error:
        raise CommandError(f"Cannot write the export to {output!r}: {error.strerror}.") from error
    try:
        with stream:
            yield stream.write
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


class Command(BaseCommand):
    help = "Write everything a tenant holds as JSON lines (to stdout, or --output FILE)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--output", "-o", default="-",
                            help="a file to write (.gz: gzipped); default: stdout")
        parser.add_argument("--force", action="store_true",
                            help="replace the --output file if it exists")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["slug"]).first()
        if tenant is None:
            raise CommandError(f"No tenant {options['slug']!r}.")
        with _opened(options["output"], self.stdout, force=options["force"]) as write:
            written = self._export(tenant, write)
        with tenant_context(tenant.pk):
            audit_record(tenant=tenant, actor=ACTOR, action="tenant.exported",
                         data={"records": sum(written.values())})
        self.stderr.write(f"Exported {sum(written.values())} records of {tenant.slug}"
                          f"{'' if options['output'] == '-' else ' to ' + options['output']}.")

    def _export(self, tenant: Tenant, write: Write) -> Counter[str]:
        written: Counter[str] = Counter()
        with read_only_snapshot(), tenant_context(tenant.pk):
            counts = tenant_export_counts()
            write(_line("export", {
                "version": FORMAT_VERSION, "tenant_id": tenant.pk, "slug": tenant.slug,
                "exported_at": timezone.now(), "counts": {"tenant": 1, **counts},
            }))
            write(_line("tenant", tenant_representation(tenant)))
            written["tenant"] += 1
            bar = ProgressBar(sum(counts.values()), self.stderr)
            for record in tenant_export_records():
                write(_line(record.kind, SHAPES[record.kind](record.row)))
                written[record.kind] += 1
                bar.advance(1)
            bar.finish()
        write(_line("end", {"counts": dict(written)}))
        return written
