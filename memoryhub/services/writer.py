"""``Writer``: who a document write is for and by, handed to every write service in one value.

Every write of a person's memory needs the same four facts, which the caller knows and the
services only pass along: the tenant it belongs to, the actor recorded in ``updated_by`` and in
the ``memory.changed`` event (``assistant``: the memory tool, ``app``: the documents API,
``user``: the web pages), and, for the memory tool, the turn and session the write belongs to,
which ``max_writes_per_turn`` counts (``memoryhub.services.limits``). The caller builds it once
(a view, the memory tool's command) instead of threading four keywords through every call.
"""

from __future__ import annotations

from dataclasses import dataclass

from tenants.models import Tenant


@dataclass(frozen=True)
class Writer:
    tenant: Tenant
    actor: str  # memoryhub.models.Actor
    # The memory tool's turn and session (its write limit counts per turn); None elsewhere.
    turn_id: str | None = None
    session_id: str | None = None
