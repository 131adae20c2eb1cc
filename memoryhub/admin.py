"""Django admin for platform staff: tenants only, and explicitly cross-tenant.

No memory models are registered, on purpose. End users, documents, events and the rest (and
the tenants' members and keys) are tenant-owned: an admin changelist has no tenant context,
so their fail-closed managers raise and RLS hides every row. Platform staff see per-tenant
counts on the Tenant admin, read inside ``tenant_context(tenant.pk)`` per object; people's
memory is read by the people themselves, on their own page. Settings change through
``tenant_settings_update`` so they are audited like any other change, and tenants are not
deleted here (deleting one needs its rows removed tenant by tenant, which the admin's
collector cannot see: ``manage.py delete_tenant`` does it).

The Tenant admin lives here, not in tenants/admin.py, because it counts memory rows:
``tenants`` sits below ``memoryhub`` and never imports it (the layers in pyproject.toml).

The admin's own login form would skip allauth (and its TOTP step), so it sends staff to the
allauth sign-in instead.
"""

from __future__ import annotations

from typing import Any

from allauth.account.decorators import secure_admin_login
from django import forms
from django.contrib import admin
from django.http import HttpRequest

from memoryhub.models import EndUser
from tenants.context import tenant_context
from tenants.models import Membership, Tenant
from tenants.services import TENANT_SETTING_FIELDS, tenant_setting_problem, tenant_settings_update

admin.site.login = secure_admin_login(admin.site.login)  # type: ignore[method-assign]
admin.site.site_header = "MemoryHub platform administration"


class TenantAdminForm(forms.ModelForm):
    """The settings' own rules (tenants.services), as the API and the dashboard apply them:
    ``save_model`` is too late to refuse a value with a message beside its field."""

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        for name in TENANT_SETTING_FIELDS & set(cleaned):
            if (problem := tenant_setting_problem(name, cleaned[name])) is not None:
                self.add_error(name, problem)
        return cleaned


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    form = TenantAdminForm
    list_display = ("slug", "name", "memory_enabled", "member_count", "end_user_count",
                    "created_at")
    search_fields = ("slug", "name")
    ordering = ("slug",)
    fieldsets = [
        (None, {"fields": ["slug", "name", "memory_enabled"]}),
        ("Limits (blank switches a limit off)", {"fields": [
            "max_document_bytes", "max_index_entries", "max_index_tokens", "max_scope_bytes",
            "max_writes_per_turn"]}),
        ("Retention and recall", {"fields": ["session_days", "recall_threshold"]}),
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: Tenant | None = None) -> list[str]:
        return ["slug"] if obj is not None else []  # API keys and URLs name the tenant

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="members")
    def member_count(self, obj: Tenant) -> int:
        with tenant_context(obj.pk):
            return Membership.objects.count()

    @admin.display(description="end users")
    def end_user_count(self, obj: Tenant) -> int:
        with tenant_context(obj.pk):
            return EndUser.objects.count()

    def save_model(self, request: HttpRequest, obj: Tenant, form: Any, change: bool) -> None:
        if not change:
            super().save_model(request, obj, form, change)
            return
        changes = {f: form.cleaned_data[f] for f in form.changed_data if f in TENANT_SETTING_FIELDS}
        tenant_settings_update(tenant_id=obj.pk, changes=changes,
                               actor=f"platform:{request.user.get_username()}")
