"""Webhooks: the tenant's events POSTed to its endpoints, signed, retried, switched off when dead.

Contract for receivers (also in the API docs of ``/api/v1/webhooks``):
- Every ``memory.changed``, ``memory.pressure`` and ``fact.changed`` event the endpoint
  subscribes to is POSTed as JSON, the same object as in ``GET /api/v1/events``: ``{"id",
  "type", "created_at", "actor", "user_id", "data"}``.
- Headers: ``X-MemoryHub-Timestamp`` (Unix seconds of this attempt), ``X-MemoryHub-Signature:
  sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>" keyed with the endpoint's secret>``,
  ``X-MemoryHub-Event`` (type) and ``X-MemoryHub-Delivery`` (stable across retries: use it
  to drop duplicates; numbered per tenant, like event ids). Receivers should compare in constant time and refuse old timestamps.
- Any 2xx is success. Anything else (or no answer within the timeout) is retried after
  ``retry_base * 2**(attempt-1)`` seconds, at most ``retry_max``; redirects are not followed.
- An endpoint whose deliveries have all failed for ``disable_after`` (a day) is switched
  off with ``disabled_reason``; its pending deliveries are abandoned (the event feed still
  has them). An admin switches it back on through the API or the dashboard.
- A test event (the dashboard's "Send a test event", :func:`webhook_test_send`) is signed
  and sent the same way, once, with type ``webhook.test``, ``id`` null (it is not in the
  feed) and ``data: {"webhook_id": <id>}``; its ``X-MemoryHub-Delivery`` is ``test-<hex>``.

Durability: the delivery rows are written in the transaction of the event (an outbox), and
enqueued on commit; the beat sweep re-enqueues any that are due but whose message was lost.
A send claims its delivery in a short transaction (a lease: ``next_attempt_at`` moved past
the attempt's deadline), so two workers never send the same delivery at once, then holds
nothing while the endpoint answers, and records the answer in another transaction if the
delivery is still there and still its own (webhook_deliver). A row that is not pending or not
yet due is left alone, so duplicate messages are harmless; a sender that dies mid-send leaves
its lease to run out, and the sweep sends the delivery again.

SSRF: URLs must be http(s) without credentials; unless ``allow_private_urls`` is set,
hosts that resolve to loopback, private, link-local or otherwise reserved addresses are
refused at creation and again at each delivery, where the delivery connects to the very
address it checked (no second lookup that DNS rebinding could answer with 127.0.0.1).
Each delivery has WEBHOOK_TIMEOUT in all, not per step, and its answer's body is never read.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any
from urllib.parse import SplitResult, urlsplit

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import F, Window
from django.db.models.functions import RowNumber
from django.utils import timezone
from rest_framework.utils.encoders import JSONEncoder

from memoryhub.errors import echo
from memoryhub.infra.jobs import DELIVER_WEBHOOK
from memoryhub.infra.outbound import (
    AddressRefused,
    NoAnswer,
    Unreachable,
    addresses_of,
    post_status,
)
from memoryhub.infra.publisher import job_enqueue_soon
from memoryhub.models import (
    DeliveryStatus,
    EventType,
    MemoryEvent,
    WebhookDelivery,
    WebhookEndpoint,
)
from memoryhub.numbers import parse_natural
from memoryhub.store.webhooks import (
    webhook_attempts_out,
    webhook_claims_order,
    webhook_endpoints_hold,
)
from tenants.context import tenant_context
from tenants.models import Tenant
from tenants.services import audit_record, tenant_row_lock

logger = logging.getLogger(__name__)

SECRET_PREFIX = "whsec_"  # noqa: S105 - a prefix, not a secret
SIGNATURE_HEADER = "X-MemoryHub-Signature"
TIMESTAMP_HEADER = "X-MemoryHub-Timestamp"
EVENT_HEADER = "X-MemoryHub-Event"
DELIVERY_HEADER = "X-MemoryHub-Delivery"
EVENT_TYPES = tuple(EventType.values)
TEST_EVENT_TYPE = "webhook.test"
MIN_SECRET_LENGTH = 16
_MAX_ERROR = 500


class WebhookUrlError(ValueError):
    """A URL this service will not POST to; the message says why."""


MAX_ENDPOINTS = 20  # per tenant: every event is sent to each of them


class WebhookLimitReached(ValueError):
    """The tenant has MAX_ENDPOINTS endpoints already."""


def _config() -> dict[str, Any]:
    return settings.MEMORYHUB_WEBHOOKS


# --- Signing -------------------------------------------------------------------------------


def signature(*, secret: str, timestamp: int, body: bytes) -> str:
    """The ``X-MemoryHub-Signature`` value for one attempt."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"sha256={digest.hexdigest()}"


def signature_valid(*, secret: str, timestamp: str, body: bytes, header: str) -> bool:
    """What a receiver does (used by tests and documented for tenants)."""
    seconds = parse_natural(timestamp)
    if seconds is None:
        return False
    expected = signature(secret=secret, timestamp=seconds, body=body)
    return hmac.compare_digest(expected, header)


def _payload(item: Mapping[str, object]) -> bytes:
    # DRF's encoder, as the event feed's renderer uses: times keep their microseconds (Django's
    # cuts them to milliseconds), so the body is the feed's object to the byte.
    return json.dumps(item, cls=JSONEncoder, separators=(",", ":")).encode()


def event_payload(event: MemoryEvent) -> bytes:
    """The event as in the event feed, as the exact bytes that are signed and sent."""
    return _payload(event.feed_item())


# --- URLs ----------------------------------------------------------------------------------


# IPv6 prefixes whose last 32 bits are the IPv4 address reached: NAT64's well-known prefix,
# the deprecated IPv4-compatible addresses and SIIT's IPv4-translated ones (RFC 2765,
# ::ffff:0:a.b.c.d). Python's is_global looks at the IPv6 side, and calls the last global.
_EMBEDDING_V4 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("::/96"),
                 ipaddress.ip_network("::ffff:0:0:0/96"))
_LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215: a network's own translator


def _address_allowed(address: str) -> bool:
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(
        address.split("%", 1)[0])  # drop an IPv6 zone id
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.is_site_local or ip in _LOCAL_NAT64:
            return False
        embedded = ip.ipv4_mapped or ip.sixtofour or next(
            (ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF) for net in _EMBEDDING_V4 if ip in net),
            None)
        if embedded is not None:
            ip = embedded
    return ip.is_global and not ip.is_multicast


def webhook_url_check(url: str, *, resolve: bool = True) -> None:
    """Raise WebhookUrlError unless ``url`` is one this service may POST to."""
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise WebhookUrlError("The URL must be http:// or https:// with a host.")
    if parts.username or parts.password:
        raise WebhookUrlError("Put no credentials in the URL; verify the signature instead.")
    port = _port(parts)
    try:
        httpx.URL(url).host  # noqa: B018 - decodes the name: a malformed IDNA one ("xn--") raises
    except (httpx.InvalidURL, ValueError) as exc:
        raise WebhookUrlError(f"The host {echo(parts.hostname)} is not a valid name.") from exc
    if _config()["allow_private_urls"] or not resolve:
        return
    try:  # the lookup a delivery makes, bounded the same way
        addresses = addresses_of(parts.hostname, port, timeout=_config()["timeout"])
    except (Unreachable, NoAnswer) as exc:
        raise WebhookUrlError(f"The host {echo(parts.hostname)} does not resolve.") from exc
    for address in addresses:
        if not _address_allowed(address):
            raise WebhookUrlError(_refused(parts.hostname, address))


def _port(parts: SplitResult) -> int:
    """The URL's port, or its scheme's. urlsplit raises ValueError only when ``.port`` is read
    (":99999", ":http"), which made such a URL a 500 here and a crash at every delivery."""
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise WebhookUrlError("The port must be a number from 1 to 65535.")
    return port or (443 if parts.scheme == "https" else 80)


def _refused(host: str, address: str) -> str:
    return (f"The host {echo(host)} resolves to {address}, a private or reserved address; "
            "webhooks go to public addresses only.")


def _may_connect(address: str) -> bool:
    return bool(_config()["allow_private_urls"]) or _address_allowed(address)


# --- Endpoints (admin API) -----------------------------------------------------------------


@dataclass(frozen=True)
class CreatedEndpoint:
    endpoint: WebhookEndpoint
    secret: str  # shown once, in the creation response


def secret_generate() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def secret_masked(secret: str) -> str:
    return f"{secret[:len(SECRET_PREFIX)] if secret.startswith(SECRET_PREFIX) else ''}…{secret[-4:]}"


def webhook_create(
    *, tenant: Tenant, url: str, event_types: list[str], secret: str | None, enabled: bool,
    actor: str,
) -> CreatedEndpoint:
    """``WebhookLimitReached`` at MAX_ENDPOINTS, then ``WebhookUrlError``."""
    with transaction.atomic():
        # Counted under the tenant's row: two creates at once counted the same endpoints and
        # went past the limit together; the second now waits and counts the first's.
        tenant_row_lock(tenant)
        if WebhookEndpoint.objects.count() >= MAX_ENDPOINTS:
            raise WebhookLimitReached(f"A tenant has at most {MAX_ENDPOINTS} webhook endpoints.")
        webhook_url_check(url)
        secret = secret or secret_generate()
        endpoint = WebhookEndpoint.objects.create(
            tenant=tenant, url=url, secret=secret, event_types=sorted(set(event_types)),
            enabled=enabled,
        )
        audit_record(tenant=tenant, actor=actor, action="webhook.created", target=url,
                     data={"id": endpoint.pk, "event_types": endpoint.event_types})
    return CreatedEndpoint(endpoint, secret)


WEBHOOK_FIELDS = frozenset({"url", "event_types", "enabled", "secret"})


def webhook_update(
    *, tenant: Tenant, endpoint: WebhookEndpoint, changes: dict[str, Any], actor: str
) -> WebhookEndpoint:
    """Apply validated changes. Switching an endpoint on again clears its failure record."""
    unknown = set(changes) - WEBHOOK_FIELDS
    if unknown:
        raise ValueError(f"not webhook fields: {sorted(unknown)}")
    if "url" in changes:
        webhook_url_check(changes["url"])
    if "event_types" in changes:
        changes = {**changes, "event_types": sorted(set(changes["event_types"]))}
    if changes.get("enabled") and not endpoint.enabled:
        endpoint.disabled_reason = ""
        endpoint.failing_since = None
    for field, value in changes.items():
        setattr(endpoint, field, value)
    endpoint.save()
    logged = {k: v for k, v in changes.items() if k != "secret"}
    if "secret" in changes:
        logged["secret"] = "changed"  # noqa: S105 - never the value itself
    audit_record(tenant=tenant, actor=actor, action="webhook.updated", target=endpoint.url,
                 data={"id": endpoint.pk, **logged})
    return endpoint


def webhook_delete(*, tenant: Tenant, endpoint: WebhookEndpoint, actor: str) -> None:
    # The endpoint's row first (memoryhub.store.webhooks): an event that already holds it, and
    # the delivery it inserted, commit before its deliveries are deleted below; one that comes
    # later waits for this commit and leaves the endpoint out. Either way no delivery is left
    # pointing at a deleted endpoint (a foreign key violation at the commit of one of the two).
    if not WebhookEndpoint.objects.select_for_update().filter(pk=endpoint.pk).exists():
        return  # deleted meanwhile by another request
    audit_record(tenant=tenant, actor=actor, action="webhook.deleted", target=endpoint.url,
                 data={"id": endpoint.pk})
    endpoint.delete()  # its deliveries go with it


# --- Deliveries ----------------------------------------------------------------------------


def deliveries_enqueue(*, tenant_id: int, delivery_ids: list[int]) -> None:
    """Send the deliveries' messages when the transaction that wrote them commits.

    The delivery rows themselves are written with their event, in the same statement
    (``memoryhub.services.events.event_record``).
    """
    for delivery_id in delivery_ids:
        transaction.on_commit(
            partial(_enqueue, tenant_id=tenant_id, delivery_id=delivery_id), robust=True
        )


def _enqueue(*, tenant_id: int, delivery_id: int, countdown: float = 0) -> None:
    # From the publisher's thread: a request does not wait for the broker, and a message
    # that cannot be sent is logged there and sent again by the webhooks sweep.
    job_enqueue_soon(name=DELIVER_WEBHOOK, countdown=countdown,
                     kwargs={"tenant_id": tenant_id, "delivery_id": delivery_id})


def deliveries_due(*, now: datetime, limit: int) -> list[int]:
    """Pending deliveries due more than WEBHOOKS_SWEEP_GRACE ago (a minute: their own
    message should have run), the oldest WEBHOOK_MAX_IN_FLIGHT of each endpoint."""
    grace = timedelta(seconds=settings.WEBHOOKS_SWEEP_GRACE)
    # At most an endpoint's share of attempts each: more would only be deferred, and one
    # endpoint's backlog (one that hangs) filled every batch while others' waited.
    ranked = WebhookDelivery.objects.filter(
        status=DeliveryStatus.PENDING, next_attempt_at__lt=now - grace
    ).annotate(rank=Window(RowNumber(), partition_by=[F("endpoint_id")],
                           order_by=F("next_attempt_at").asc()))
    return list(
        ranked.filter(rank__lte=_config()["max_in_flight"])
        .order_by("next_attempt_at")
        .values_list("id", flat=True)[:limit]
    )


def retry_delay(attempts: int) -> float:
    config = _config()
    delay: float = min(config["retry_base"] * 2 ** max(attempts - 1, 0), config["retry_max"])
    return delay


@dataclass(frozen=True)
class Attempt:
    status: int | None  # HTTP status, None when there was no answer
    error: str  # empty on success

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def _post(*, endpoint: WebhookEndpoint, body: bytes, event_type: str,
          delivery_id: str) -> Attempt:
    """One signed POST of ``body`` to the endpoint; what came of it. The address is checked
    again here, where it is connected to (memoryhub.infra.outbound)."""
    try:
        webhook_url_check(endpoint.url, resolve=False)
    except WebhookUrlError as exc:
        return Attempt(None, str(exc))
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "MemoryHub-Webhooks/1",
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: signature(secret=endpoint.secret, timestamp=timestamp, body=body),
        EVENT_HEADER: event_type,
        DELIVERY_HEADER: delivery_id,
    }
    try:
        status = post_status(endpoint.url, body=body, headers=headers,
                             timeout=_config()["timeout"], allowed=_may_connect)
    except AddressRefused as exc:
        return Attempt(None, _refused(exc.host, exc.address))
    except NoAnswer:
        return Attempt(None, "no answer within the timeout")
    except Unreachable as exc:
        return Attempt(None, f"connection failed: {exc}"[:_MAX_ERROR])
    if 200 <= status < 300:
        return Attempt(status, "")
    return Attempt(status, f"HTTP {status}")


# How long past the attempt's timeout a claimed delivery stays its sender's: only a sender
# that died (its worker killed mid-send) leaves it that long, and the sweep then sends it again.
LEASE_MARGIN = 30.0


@dataclass(frozen=True)
class _Claim:
    """A delivery taken for one attempt: what to send, and the lease that says it is ours."""

    delivery_id: int
    endpoint: WebhookEndpoint
    body: bytes
    event_type: str
    seq: int
    lease_until: datetime


def webhook_deliver(*, tenant_id: int, delivery_id: int) -> str:
    """Send one delivery if it is pending and due; record the outcome. Returns the status.

    No lock and no transaction is held while the endpoint answers: the delivery is claimed in
    one short transaction (its ``next_attempt_at`` moved past the attempt's deadline, a lease
    that keeps other sends and the sweep off it), sent, and the outcome recorded in another,
    if the delivery is still there and still ours. Before, the send held the delivery's and
    the endpoint's rows for the whole call, so a person's forget or the endpoint's deletion
    waited up to WEBHOOK_TIMEOUT for a tenant's endpoint to answer."""
    with tenant_context(tenant_id):
        claim = _claim(delivery_id=delivery_id, now=timezone.now())
    if isinstance(claim, str):
        return claim
    try:
        attempt = _post(endpoint=claim.endpoint, body=claim.body, event_type=claim.event_type,
                        delivery_id=str(claim.seq))  # the tenant's own number, like event ids
    except Exception:  # a bug: recorded as a failed attempt, so the claim is settled
        logger.exception("webhook delivery %s: the attempt failed unexpectedly", delivery_id)
        attempt = Attempt(None, "the attempt failed inside MemoryHub; it is retried")
    with tenant_context(tenant_id):
        return _settle(claim=claim, attempt=attempt)


def _claim(*, delivery_id: int, now: datetime) -> _Claim | str:
    """The delivery, leased to this send; or why there is nothing to send."""
    # The endpoint before the delivery, as every writer of deliveries holds them
    # (memoryhub.store.webhooks).
    endpoint_id = (WebhookDelivery.objects.filter(pk=delivery_id)
                   .values_list("endpoint_id", flat=True).first())
    if endpoint_id is None or not webhook_endpoints_hold(ids=[endpoint_id]):
        return "skipped"  # gone, with its endpoint or its event
    delivery = (
        WebhookDelivery.objects.select_for_update(skip_locked=True, of=("self",))
        .select_related("endpoint", "event")
        .filter(pk=delivery_id)
        .first()
    )
    if delivery is None:
        return "skipped"  # gone, or another send is claiming or settling it this moment
    if delivery.status != DeliveryStatus.PENDING or delivery.next_attempt_at > now:
        return "skipped"  # done, another send's lease, or a duplicate ahead of its retry time
    if not delivery.endpoint.enabled:
        delivery.status = DeliveryStatus.ABANDONED
        delivery.save(update_fields=["status"])
        return delivery.status
    if webhook_attempts_out(endpoint_id=endpoint_id, now=now) >= _config()["max_in_flight"]:
        return "deferred"  # the endpoint has its share out: the next of them to end sends it
    delivery.next_attempt_at = now + timedelta(seconds=_config()["timeout"] + LEASE_MARGIN)
    delivery.sending_until = delivery.next_attempt_at
    delivery.save(update_fields=["next_attempt_at", "sending_until"])
    return _Claim(delivery_id=delivery.pk, endpoint=delivery.endpoint,
                  body=event_payload(delivery.event), event_type=delivery.event.type,
                  seq=delivery.seq, lease_until=delivery.next_attempt_at)


def _settle(*, claim: _Claim, attempt: Attempt) -> str:
    """Record the attempt, unless the delivery went meanwhile (its endpoint deleted, its
    person forgotten) or is no longer this send's (its lease ran out and another send took
    it: that one records its own attempt)."""
    if not webhook_endpoints_hold(ids=[claim.endpoint.pk]):
        return "skipped"
    delivery = (WebhookDelivery.objects.select_for_update(of=("self",))
                .filter(pk=claim.delivery_id).first())
    # After the claims counting this attempt as out: one deferred meanwhile is committed,
    # and found here. (Row, then claim lock: the order of a claim.)
    webhook_claims_order(endpoint_id=claim.endpoint.pk)
    _send_next(endpoint_id=claim.endpoint.pk)  # this attempt's place is free
    if delivery is None:
        return "skipped"
    if delivery.sending_until != claim.lease_until or delivery.status not in (
            DeliveryStatus.PENDING, DeliveryStatus.ABANDONED):
        return "skipped"
    _attempt_record(delivery=delivery, attempt=attempt, now=timezone.now())
    return delivery.status


# --- Attempts out per endpoint ---------------------------------------------------------------
#
# A webhooks worker has a fixed number of threads, and an endpoint that hangs holds one for
# WEBHOOK_TIMEOUT per delivery: with an event per write, one tenant's broken endpoint took
# every thread and every other tenant's deliveries waited. So an endpoint has at most
# WEBHOOK_MAX_IN_FLIGHT attempts out (``sending_until`` set and not run out); a send beyond
# them is deferred, left pending and due, and each attempt that ends sends the endpoint's
# oldest one due (memoryhub.store.webhooks.webhook_attempts_out counts them, one claim to the
# endpoint at a time). A chain that breaks (its worker killed) is picked up by the sweep.


def _send_next(*, endpoint_id: int) -> None:
    """Enqueue the endpoint's oldest delivery due (one deferred, or whose message is still
    queued: then the first of the two to run sends it), once this transaction commits."""
    waiting = (WebhookDelivery.objects
               .filter(endpoint_id=endpoint_id, status=DeliveryStatus.PENDING,
                       next_attempt_at__lte=timezone.now())
               .order_by("next_attempt_at").values_list("pk", "tenant_id").first())
    if waiting is not None:
        transaction.on_commit(partial(_enqueue, tenant_id=waiting[1], delivery_id=waiting[0]),
                              robust=True)


def sample_event_payload(*, endpoint: WebhookEndpoint, now: datetime) -> bytes:
    """A test event: the feed item's keys, with nothing of the feed in them."""
    item = {"id": None, "type": TEST_EVENT_TYPE, "created_at": now, "actor": None,
            "user_id": None, "data": {"webhook_id": endpoint.pk}}
    return _payload(item)


def webhook_test_send(*, tenant: Tenant, endpoint: WebhookEndpoint, actor: str) -> Attempt:
    """POST a test event to the endpoint now, once, and say what came of it.

    Sent whether the endpoint is on or off, so that an admin can check a fix before
    switching it back on. It is no delivery: nothing is retried, the endpoint's failure
    record (which decides when it is switched off) is left alone, and the audit log keeps
    the outcome. The caller waits for the answer, at most the webhook timeout.
    """
    body = sample_event_payload(endpoint=endpoint, now=timezone.now())
    attempt = _post(endpoint=endpoint, body=body, event_type=TEST_EVENT_TYPE,
                    delivery_id=f"test-{secrets.token_hex(8)}")
    audit_record(tenant=tenant, actor=actor, action="webhook.tested", target=endpoint.url,
                 data={"id": endpoint.pk, "status": attempt.status, "error": attempt.error})
    return attempt


def _attempt_record(*, delivery: WebhookDelivery, attempt: Attempt, now: datetime) -> None:
    """``delivery`` is pending, or abandoned while it was sent (its endpoint switched off
    meanwhile): then a failure is not retried, and an answer delivers it all the same."""
    # NO KEY: the key-share lock that other sends to this endpoint hold while they settle
    # does not block this one (FOR UPDATE would wait for all of them).
    endpoint = WebhookEndpoint.objects.select_for_update(no_key=True).get(pk=delivery.endpoint_id)
    endpoint.last_status = attempt.status
    endpoint.last_error = attempt.error[:_MAX_ERROR]
    endpoint.last_attempt_at = now
    delivery.sending_until = None
    delivery.attempts += 1
    delivery.last_status = attempt.status
    delivery.last_error = attempt.error[:_MAX_ERROR]
    if attempt.ok:
        endpoint.last_success_at = now
        endpoint.failing_since = None
        delivery.status = DeliveryStatus.DELIVERED
        delivery.delivered_at = now
    else:
        endpoint.failing_since = endpoint.failing_since or now
        failing_for = (now - endpoint.failing_since).total_seconds()
        if delivery.status == DeliveryStatus.ABANDONED:
            pass  # switched off while this attempt was out: nothing more to try
        elif endpoint.enabled and failing_for >= _config()["disable_after"]:
            _switch_off(endpoint=endpoint, now=now, error=attempt.error)
            delivery.status = DeliveryStatus.ABANDONED
        else:
            delay = retry_delay(delivery.attempts)
            delivery.next_attempt_at = now + timedelta(seconds=delay)
            transaction.on_commit(partial(
                _enqueue, tenant_id=delivery.tenant_id, delivery_id=delivery.pk, countdown=delay
            ), robust=True)
    endpoint.save()
    delivery.save()


def _switch_off(*, endpoint: WebhookEndpoint, now: datetime, error: str) -> None:
    endpoint.enabled = False
    endpoint.disabled_reason = (
        f"Switched off at {now:%Y-%m-%d %H:%M} UTC: every delivery has failed since "
        f"{endpoint.failing_since:%Y-%m-%d %H:%M} UTC (last: {error}). Fix the endpoint, "
        "then set enabled to true; missed events are in GET /api/v1/events."
    )[:_MAX_ERROR]
    # SKIP LOCKED: a delivery another send is settling is held by that send, which wants
    # this endpoint's row (locked here) next: waiting for it would deadlock. Its attempt is
    # recorded after this commit, and its retry finds the endpoint off. A delivery whose
    # attempt is out (claimed, not held) is abandoned here, and its send records its answer.
    pending = list(WebhookDelivery.objects.select_for_update(skip_locked=True)
                   .filter(endpoint=endpoint, status=DeliveryStatus.PENDING)
                   .values_list("pk", flat=True))
    WebhookDelivery.objects.filter(pk__in=pending).update(status=DeliveryStatus.ABANDONED)
