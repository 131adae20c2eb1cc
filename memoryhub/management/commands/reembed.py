"""``manage.py reembed``: give every passage, fact and message a vector of the configured provider.

Run it after changing ``EMBEDDINGS_PROVIDER``/model (recall ignores vectors of another
provider meanwhile, falling back to lexical search for those documents). It works tenant by
tenant, one short transaction per batch, and only ever picks passages that still lack a
current vector: stop it at any point (Ctrl-C, ``--limit``) and the next run carries on where
this one stopped.
"""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.infra.embeddings import get_provider, provider_key
from memoryhub.management.progress import ProgressBar
from memoryhub.services.passages import (
    passages_reembed_batch,
    passages_stale_count,
    records_reembed_batch,
    records_stale_count,
)
from tenants.context import tenant_context
from tenants.models import Tenant


def _positive(text: str) -> int:
    value = int(text) if text.isascii() and text.isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, not {text!r}")
    return value


class Command(BaseCommand):
    help = "Embed every passage that has no vector of the configured provider (resumable)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch-size", type=_positive, default=64)
        parser.add_argument("--tenant", help="only this tenant (slug)")
        parser.add_argument("--limit", type=_positive, default=None,
                            help="stop after about this many passages (resume later)")

    def handle(self, *args: Any, **options: Any) -> None:
        provider = get_provider()
        tenants = Tenant.objects.order_by("id")
        if options["tenant"]:
            tenants = tenants.filter(slug=options["tenant"])
            if not tenants.exists():  # else "Done: 0 embedded", as if it were up to date
                raise CommandError(f"No tenant {options['tenant']!r}.")
        work = []
        for tenant_id in tenants.values_list("id", flat=True):
            with tenant_context(tenant_id):
                stale = (passages_stale_count(provider=provider)
                         + records_stale_count(provider=provider))
            if stale:
                work.append((tenant_id, stale))
        total = sum(stale for _, stale in work)
        if options["limit"] is not None:
            total = min(total, options["limit"])
        self.stdout.write(f"Re-embedding {total} passages, facts and messages with {provider_key(provider)}.")
        bar = ProgressBar(total, self.stdout)
        for tenant_id, _ in work:
            while bar.done < total:
                with tenant_context(tenant_id):
                    size = min(options["batch_size"], total - bar.done)
                    embedded = (passages_reembed_batch(provider=provider, batch_size=size)
                                or records_reembed_batch(provider=provider, batch_size=size))
                if not embedded:
                    break
                bar.advance(embedded)
        bar.finish()
        left = sum(stale for _, stale in work) - bar.done
        self.stdout.write(f"Done: {bar.done} embedded, {left} left for the next run.")
