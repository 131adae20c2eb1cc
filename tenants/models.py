"""Tenants, their members, API keys and audit log."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models

from tenants.managers import TenantOwned
from tenants.rls import TenantRowLevelSecurity

# The spec's defaults; ``None`` on a tenant switches that limit off.
DEFAULT_LIMITS: dict[str, int] = {
    "max_document_bytes": 16384,
    "max_index_entries": 50,
    "max_index_tokens": 1500,
    "max_scope_bytes": 262144,
    "max_writes_per_turn": 20,
}
LIMIT_FIELDS = tuple(DEFAULT_LIMITS)
# The conversation settings (spec: the end of "Facts"), as the model names them.
CONVERSATION_SETTING_FIELDS = (
    "capture_excluded_roles", "capture_drop_empty", "capture_redact",
    "conversation_timeout_minutes", "max_message_bytes", "max_history_tokens",
    "augmentation_enabled", "conversation_days",
)


def default_excluded_roles() -> list[str]:
    return ["system"]


def _limit_field(name: str) -> models.PositiveIntegerField:
    return models.PositiveIntegerField(
        null=True, blank=True, default=DEFAULT_LIMITS[name], validators=[MinValueValidator(1)]
    )


class Tenant(models.Model):
    """A customer company. Platform data: not tenant-owned, so no RLS on this table."""

    slug = models.SlugField(max_length=63, unique=True)
    name = models.CharField(max_length=200)
    memory_enabled = models.BooleanField(default=True)
    max_document_bytes = _limit_field("max_document_bytes")
    max_index_entries = _limit_field("max_index_entries")
    max_index_tokens = _limit_field("max_index_tokens")
    max_scope_bytes = _limit_field("max_scope_bytes")
    max_writes_per_turn = _limit_field("max_writes_per_turn")
    session_days = models.PositiveIntegerField(
        null=True, blank=True, default=30, validators=[MinValueValidator(1)],
        help_text="Session-scope memory older than this many days is purged; blank keeps it.",
    )
    recall_threshold = models.FloatField(default=0.15)
    # Conversations (spec: "Conversations", "Facts"): the capture policy, applied in this
    # order: excluded roles, empty messages, redaction (memoryhub.capture_policy).
    capture_excluded_roles = models.JSONField(default=default_excluded_roles, blank=True)
    capture_drop_empty = models.BooleanField(default=True)
    capture_redact = models.JSONField(default=list, blank=True)  # regular expressions
    conversation_timeout_minutes = models.PositiveIntegerField(
        default=30, validators=[MinValueValidator(1)]
    )
    max_message_bytes = models.PositiveIntegerField(
        null=True, blank=True, default=65536, validators=[MinValueValidator(1)]
    )
    max_history_tokens = models.PositiveIntegerField(
        null=True, blank=True, default=2000, validators=[MinValueValidator(1)]
    )
    augmentation_enabled = models.BooleanField(default=True)
    conversation_days = models.PositiveIntegerField(
        null=True, blank=True, default=None, validators=[MinValueValidator(1)],
        help_text="Conversations whose last message is older than this many days are deleted; "
        "blank keeps them.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.slug

    @property
    def limits(self) -> dict[str, int | None]:
        return {name: getattr(self, name) for name in LIMIT_FIELDS}


class Role(models.TextChoices):
    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"


class Membership(TenantOwned):
    # No index of its own: every index here begins with tenant_id (see the unique constraint).
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships",
        db_index=False,
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(TenantOwned.Meta):
        constraints = [
            models.UniqueConstraint(fields=["tenant", "user"], name="membership_unique_user"),
            TenantRowLevelSecurity(
                name="membership_rls",
                extra_using="user_id = NULLIF(current_setting('app.web_user_id', true), '')::bigint",
            ),
        ]


class Permission(models.TextChoices):
    MEMORY = "memory"
    ADMIN = "admin"


lookup_id_validator = RegexValidator(r"^[a-z0-9]{8}$")


class ApiKey(TenantOwned):
    """A tenant's API key, ``mh_<tenant_id>_<lookup_id>_<secret>``; only a hash of the secret is stored.

    The tenant id in the key routes the lookup to one tenant's rows, so authentication needs
    no cross-tenant read and the unique constraint can begin with tenant_id like every other.

    ``user_id`` binds the key to one end user (the tenant app's identifier, the API's user_id
    rule): such a key reaches only that person, every other one looks absent to it, and it
    never has ``admin`` (``api.authentication.key_authenticate`` and ``api.base``). Text, not
    a foreign key: the person may not exist yet (they are created on first write), and the
    binding outlives "forget everything".
    """

    name = models.CharField(max_length=100)
    permissions = models.JSONField(default=list)  # a subset of Permission values
    lookup_id = models.CharField(max_length=8, validators=[lookup_id_validator])
    secret_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # NULL, not "": an unbound key (every user_id, even "", is a binding or none).
    user_id = models.CharField(max_length=128, null=True, blank=True)  # noqa: DJ001

    class Meta(TenantOwned.Meta):
        constraints = [
            models.UniqueConstraint(fields=["tenant", "lookup_id"], name="apikey_unique_lookup"),
            TenantRowLevelSecurity(name="apikey_rls"),
        ]
        indexes = [models.Index(fields=["tenant", "created_at"], name="apikey_tenant_created")]

    def __str__(self) -> str:
        return f"{self.name} ({self.masked})"

    @property
    def masked(self) -> str:
        return f"mh_{self.tenant_id}_{self.lookup_id}_…"

    def has_permission(self, permission: str) -> bool:
        return permission in self.permissions


class AuditEntry(TenantOwned):
    """Who changed which setting, key or member of a tenant, and when."""

    # An account's email (up to 254 characters), "platform:<username>" or "api-key:<lookup_id>".
    actor = models.CharField(max_length=254)
    action = models.CharField(max_length=64)
    # What was acted on: an email, a user_id, a masked key, a profile, or a webhook URL (up to
    # 2,000 characters, as the API takes them); at 200 a long one failed the change it recorded.
    target = models.CharField(max_length=2000, blank=True)
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(TenantOwned.Meta):
        constraints = [TenantRowLevelSecurity(name="auditentry_rls")]
        indexes = [models.Index(fields=["tenant", "-created_at"], name="audit_tenant_created")]


class Invitation(TenantOwned):
    """An admin's invitation of an email address into the tenant with a role.

    Sign-up is closed except through an invitation link, ``/invite/<tenant_id>.<secret>``:
    the tenant id routes the lookup to one tenant's rows (as API keys do), and only a hash of
    the secret is stored. An invitation is used once and expires.
    """

    email = models.EmailField()
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    token_hash = models.CharField(max_length=64)
    # The inviter's email as text, not a foreign key: deleting an account must not have to
    # reach into tenant rows that row-level security hides from it.
    invited_by = models.CharField(max_length=254, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta(TenantOwned.Meta):
        constraints = [
            models.UniqueConstraint(fields=["tenant", "token_hash"], name="invitation_unique_token"),
            TenantRowLevelSecurity(name="invitation_rls"),
        ]

    def __str__(self) -> str:
        return f"{self.email} ({self.role})"
