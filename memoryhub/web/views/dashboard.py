"""The tenant admin dashboard at ``/t/<slug>/``: owners and admins only (``tenant_page``).

Every change goes through a service that records an AuditEntry with the account's email.
Settings are written with ``tenant_settings_update``, which the API reads per request, so a
change applies to the very next API call.
"""

from __future__ import annotations

import logging
from smtplib import SMTPException
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.forms import Form
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from memoryhub.models import EndUser, Profile, WebhookEndpoint
from memoryhub.numbers import parse_natural
from memoryhub.services.people import end_user_forget, portal_link_create
from memoryhub.services.profiles import profile_set
from memoryhub.services.webhooks import Attempt, webhook_test_send, webhook_update
from memoryhub.web.access import ADMIN_ROLES, TenantAccess, tenant_page
from memoryhub.web.charts import usage_charts
from memoryhub.web.forms import (
    LIMIT_LABELS,
    ApiKeyForm,
    InviteForm,
    MemoryToggleForm,
    PeopleSearchForm,
    ProfileForm,
    ProfileSwitchForm,
    RoleForm,
    TenantSettingsForm,
    WebhookSwitchForm,
    focus_first_error,
)
from memoryhub.web.http import HtmxHttpRequest, actor_label
from memoryhub.web.partials import is_partial_request, render_page
from memoryhub.web.selectors import (
    LIST_PAGE,
    PEOPLE_PAGE,
    api_keys_all,
    audit_entries,
    augmentation_status,
    end_users_search,
    invitations_pending,
    members_all,
    profiles_all,
    tenant_overview,
    webhook_row,
    webhook_rows,
)
from tenants.models import CONVERSATION_SETTING_FIELDS, ApiKey, Invitation, Membership, Permission
from tenants.services import (
    MembershipRuleError,
    api_key_create,
    api_key_revoke,
    audit_record,
    invitation_create,
    invitation_revoke,
    membership_remove,
    membership_role_change,
    tenant_settings_update,
)

logger = logging.getLogger(__name__)


def _page(request: HtmxHttpRequest, access: TenantAccess, template: str, *,
          section: str, status: int = 200, partials: tuple[str, ...] = (),
          **context: Any) -> HttpResponse:
    context = {"access": access, "tenant": access.tenant, "section": section, **context}
    for value in context.values():
        if isinstance(value, Form):
            focus_first_error(value)
    return render_page(request, f"web/tenant/{template}", context, partials=partials,
                       status=status)


def _back(access: TenantAccess, name: str) -> HttpResponse:
    return redirect(f"web:tenant_{name}", slug=access.tenant.slug)


def _back_to_page(request: HtmxHttpRequest, access: TenantAccess, name: str) -> HttpResponse:
    """Back to the page of the list a row's form was on (its hidden ``page``), so the row
    just changed is in sight; the list's first page without one."""
    response = _back(access, name)
    page = parse_natural(request.POST.get("page", ""))
    if page is not None and page > 1:
        response["Location"] += f"?page={page}"
    return response


def _list_page(request: HtmxHttpRequest, rows: QuerySet[Any]) -> Page:
    """The ``?page=`` of a long list (the first after a POST to the list's own URL)."""
    return Paginator(rows, LIST_PAGE).get_page(request.GET.get("page"))


# --- Overview and settings ----------------------------------------------------------------


@tenant_page()
@require_GET
def overview(request: HtmxHttpRequest, access: TenantAccess) -> HttpResponse:
    overview = tenant_overview()
    return _page(request, access, "overview.html", section="overview",
                 overview=overview, charts=usage_charts(overview.usage),
                 augmentation=augmentation_status(enabled=access.tenant.augmentation_enabled,
                                                  memory_enabled=access.tenant.memory_enabled))


@tenant_page()
@require_POST
def memory_toggle(request: HtmxHttpRequest, access: TenantAccess) -> HttpResponse:
    form = MemoryToggleForm(request.POST)
    if not form.is_valid():
        # The card stays as it was, saying why; nothing changed.
        refusal = "Choose on or off: nothing was changed."
        if request.htmx:
            return _page(request, access, "overview.html", section="overview",
                         partials=("memory-toggle",), toggle_error=refusal, status=422)
        messages.error(request, refusal)
        return _back(access, "overview")
    tenant = tenant_settings_update(
        tenant_id=access.tenant.pk,
        changes={"memory_enabled": form.cleaned_data["memory_enabled"]},
        actor=actor_label(request),
    )
    access = TenantAccess(tenant, access.membership)
    if request.htmx:
        return _page(request, access, "overview.html", section="overview",
                     partials=("memory-toggle",), toggled=True)
    messages.success(request, f"Memory is {'on' if access.tenant.memory_enabled else 'off'} "
                              "for the whole tenant.")
    return _back(access, "overview")


def _settings_initial(access: TenantAccess) -> dict[str, Any]:
    tenant = access.tenant
    fields = ["name", "memory_enabled", "session_days", "recall_threshold", *LIMIT_LABELS,
              *CONVERSATION_SETTING_FIELDS]
    return {name: getattr(tenant, name) for name in fields}


@tenant_page()
@require_http_methods(["GET", "POST"])
def settings_page(request: HtmxHttpRequest, access: TenantAccess) -> HttpResponse:
    if request.method == "GET":
        form = TenantSettingsForm(initial=_settings_initial(access))
        return _page(request, access, "settings.html", section="settings", form=form)
    form = TenantSettingsForm(request.POST)
    if form.is_valid():
        current = _settings_initial(access)
        changes = {k: v for k, v in form.edited().items() if current.get(k) != v}
        try:
            tenant_settings_update(tenant_id=access.tenant.pk, changes=changes,
                                   actor=actor_label(request))
        except ValidationError as error:
            for field, errors in error.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            messages.success(request, "Settings saved; the API uses them from the next call."
                             if changes else "Nothing changed.")
            return _back(access, "settings")
    return _page(request, access, "settings.html", section="settings", form=form, status=422)


# --- Profiles --------------------------------------------------------------------------------


@tenant_page()
@require_http_methods(["GET", "POST"])
def profiles(request: HtmxHttpRequest, access: TenantAccess) -> HttpResponse:
    form = ProfileForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        name = form.cleaned_data["name"]
        if Profile.objects.filter(name=name).exists():
            form.add_error("name", f"There is already a profile named {name}.")
        else:
            profile_set(tenant=access.tenant, name=name, disabled=False,
                        actor=actor_label(request))
            messages.success(request, f"Added profile {name}.")
            return _back(access, "profiles")
    status = 422 if request.method == "POST" else 200
    return _page(request, access, "profiles.html", section="profiles", form=form,
                 page=_list_page(request, profiles_all()), status=status)


@tenant_page()
@require_POST
def profile_toggle(request: HtmxHttpRequest, access: TenantAccess, pk: int) -> HttpResponse:
    profile = Profile.objects.filter(pk=pk).first()
    if profile is None:
        raise Http404("No such profile")
    form = ProfileSwitchForm(request.POST)
    if not form.is_valid():  # anything but on or off re-enabled the profile
        messages.error(request, f"Choose on or off: profile {profile.name} was not changed.")
        return _back_to_page(request, access, "profiles")
    disabled = form.cleaned_data["disabled"]
    profile_set(tenant=access.tenant, name=profile.name, disabled=disabled,
                actor=actor_label(request))
    messages.success(request, f"Profile {profile.name} is {'disabled' if disabled else 'enabled'}.")
    return _back_to_page(request, access, "profiles")


# --- API keys --------------------------------------------------------------------------------


@tenant_page()
@require_http_methods(["GET", "POST"])
def api_keys(request: HtmxHttpRequest, access: TenantAccess) -> HttpResponse:
    form = ApiKeyForm(request.POST or None)
    created = None
    if request.method == "POST" and form.is_valid():
        created = api_key_create(tenant=access.tenant, name=form.cleaned_data["name"],
                                 permissions=form.cleaned_data["permissions"],
                                 user_id=form.cleaned_data["user_id"] or None,
                                 actor=actor_label(request))
        form = ApiKeyForm()  # the secret is shown once, on this response only
    status = 422 if request.method == "POST" and created is None else 200
    response = _page(request, access, "keys.html", section="keys", form=form,
                     page=_list_page(request, api_keys_all()), created=created, status=status,
                     partials=("keys-panel",))
    response["Cache-Control"] = "no-store"
    return response


@tenant_page()
@require_POST
def api_key_revoke_view(request: HtmxHttpRequest, access: TenantAccess, pk: int) -> HttpResponse:
    key = ApiKey.objects.filter(pk=pk).first()
    if key is None:
        raise Http404("No such key")
    if api_key_revoke(tenant=access.tenant, key=key, actor=actor_label(request)):
        messages.success(request, f"Revoked {key.name}: it stops working at once.")
    else:  # a second click, or another admin first: as the API's 204
        messages.info(request, f"{key.name} was already revoked.")
    return _back_to_page(request, access, "keys")


# --- Members ---------------------------------------------------------------------------------


def _members_page(request: HtmxHttpRequest, access: TenantAccess, *, form: InviteForm,
                  status: int = 200, **extra: Any) -> HttpResponse:
    return _page(request, access, "members.html", section="members", form=form,
                 members=members_all(), invitations=invitations_pending(), status=status,
                 partials=("invite-panel",), **extra)


@tenant_page()
@require_http_methods(["GET", "POST"])
def members(request: HtmxHttpRequest, access: TenantAccess) -> HttpResponse:
    form = InviteForm(request.POST or None)
    if request.method != "POST":
        return _members_page(request, access, form=form)
    if not form.is_valid():
        return _members_page(request, access, form=form, status=422)
    email, role = form.cleaned_data["email"], form.cleaned_data["role"]
    if role == "owner" and not access.is_owner:
        form.add_error("role", "Only an owner can invite an owner.")
        return _members_page(request, access, form=form, status=422)
    try:
        created = invitation_create(tenant=access.tenant, email=email, role=role,
                                    actor=actor_label(request))
    except MembershipRuleError as refusal:
        form.add_error("email", str(refusal))
        return _members_page(request, access, form=form, status=422)
    link = request.build_absolute_uri(reverse("web:invitation", kwargs={"token": created.token}))
    mailed = _invitation_mail(request, access, email=created.invitation.email, role=role,
                              link=link)
    response = _members_page(request, access, form=InviteForm(), invited=created.invitation,
                             invite_link=link, mailed=mailed)
    response["Cache-Control"] = "no-store"
    return response


def _invitation_mail(request: HtmxHttpRequest, access: TenantAccess, *, email: str, role: str,
                     link: str) -> bool:
    """Mail the link; False when the mail server refused or could not be reached. The
    invitation stands either way (the page shows its link to pass on): a mail failure was a
    500 that also rolled the invitation back."""
    try:
        send_mail(
            subject=f"You are invited to {access.tenant.name} on MemoryHub",
            message=(f"{actor_label(request)} invited you to {access.tenant.name} as {role}.\n\n"
                     f"Accept within 7 days: {link}\n"),
            from_email=None, recipient_list=[email],
        )
    except (OSError, SMTPException):  # SMTPException is an OSError; named for the reader
        logger.exception("the invitation mail to %s was not sent", email)
        return False
    return True


def _membership_or_404(pk: int) -> Membership:
    membership = Membership.objects.select_related("user").filter(pk=pk).first()
    if membership is None:
        raise Http404("No such member")
    return membership


@tenant_page()
@require_POST
def member_role(request: HtmxHttpRequest, access: TenantAccess, pk: int) -> HttpResponse:
    membership = _membership_or_404(pk)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a role: member, admin or owner.")
        return _back(access, "members")
    role = form.cleaned_data["role"]
    try:
        membership_role_change(tenant=access.tenant, membership=membership, role=role,
                               actor=actor_label(request), actor_role=access.role)
    except MembershipRuleError as error:
        messages.error(request, str(error))
        return _back(access, "members")
    messages.success(request, f"{membership.user.email} is now {role}.")
    if membership.user_id == request.user.pk and role not in ADMIN_ROLES:
        return redirect("web:home")  # one's own new role no longer reaches this page
    return _back(access, "members")


@tenant_page()
@require_POST
def member_remove(request: HtmxHttpRequest, access: TenantAccess, pk: int) -> HttpResponse:
    membership = _membership_or_404(pk)
    try:
        membership_remove(tenant=access.tenant, membership=membership,
                          actor=actor_label(request), actor_role=access.role)
    except MembershipRuleError as error:
        messages.error(request, str(error))
        return _back(access, "members")
    messages.success(request, f"Removed {membership.user.email}.")
    if membership.user_id == request.user.pk:
        return redirect("web:home")
    return _back(access, "members")


@tenant_page()
@require_POST
def invitation_revoke_view(request: HtmxHttpRequest, access: TenantAccess,
                           pk: int) -> HttpResponse:
    invitation = Invitation.objects.filter(pk=pk).first()
    if invitation is None:
        raise Http404("No such invitation")
    if invitation_revoke(tenant=access.tenant, invitation=invitation, actor=actor_label(request)):
        messages.success(request, f"Cancelled the invitation of {invitation.email}.")
        return _back(access, "members")
    # A second click, or another admin or the invitee first: say so instead of "Not found".
    invitation.refresh_from_db(fields=["accepted_at"])
    if invitation.accepted_at is not None:
        messages.error(request, f"{invitation.email} has already accepted the invitation.")
    else:
        messages.info(request, f"The invitation of {invitation.email} was already cancelled.")
    return _back(access, "members")


# --- End users -------------------------------------------------------------------------------


def _people_page(request: HtmxHttpRequest, access: TenantAccess, **extra: Any) -> HttpResponse:
    form = PeopleSearchForm(request.GET)
    query = form.cleaned_data["q"].strip() if form.is_valid() else ""
    page = Paginator(end_users_search(query=query), PEOPLE_PAGE).get_page(request.GET.get("page"))
    return _page(request, access, "people.html", section="people", form=form, query=query,
                 page=page, partials=("results",), **extra)


@tenant_page()
@require_GET
def people(request: HtmxHttpRequest, access: TenantAccess) -> HttpResponse:
    return _people_page(request, access)


def _person_or_404(pk: int) -> EndUser:
    end_user = EndUser.objects.filter(pk=pk).first()
    if end_user is None:
        raise Http404("No such person")
    return end_user


@tenant_page()
@require_POST
def person_key(request: HtmxHttpRequest, access: TenantAccess, pk: int) -> HttpResponse:
    """Mint a memory key bound to this person (an MCP client's, their own device's): shown once."""
    end_user = _person_or_404(pk)
    created = api_key_create(tenant=access.tenant, name=f"{end_user.user_id} (bound)"[:100],
                             permissions=[Permission.MEMORY], user_id=end_user.user_id,
                             actor=actor_label(request))
    response = _people_page(request, access, minted_for=end_user, minted_key=created)
    response["Cache-Control"] = "no-store"
    return response


@tenant_page()
@require_POST
def person_portal_link(request: HtmxHttpRequest, access: TenantAccess, pk: int) -> HttpResponse:
    """A one-time sign-in link to the person's memory page, to hand to them: shown once."""
    end_user = _person_or_404(pk)
    link = portal_link_create(tenant=access.tenant, user_id=end_user.user_id)
    audit_record(tenant=access.tenant, actor=actor_label(request),
                 action="end_user.portal_link_minted", target=end_user.user_id)
    url = request.build_absolute_uri(reverse("web:portal_redeem", args=[link.token]))
    response = _people_page(request, access, minted_for=end_user, portal_link=url,
                            portal_expires=link.expires_at)
    response["Cache-Control"] = "no-store"
    return response


@tenant_page()
@require_POST
def person_forget(request: HtmxHttpRequest, access: TenantAccess, pk: int) -> HttpResponse:
    end_user = EndUser.objects.filter(pk=pk).first()
    if end_user is None:
        raise Http404("No such person")
    actor = actor_label(request)
    end_user_forget(tenant=access.tenant, user_id=end_user.user_id, actor="app")
    audit_record(tenant=access.tenant, actor=actor, action="end_user.forgotten",
                 target=end_user.user_id)
    messages.success(request, f"Deleted everything stored about {end_user.user_id}.")
    return _back(access, "people")


# --- Audit log -------------------------------------------------------------------------------


@tenant_page()
@require_GET
def audit(request: HtmxHttpRequest, access: TenantAccess) -> HttpResponse:
    page = Paginator(audit_entries(), 50).get_page(request.GET.get("page"))
    return _page(request, access, "audit.html", section="audit", page=page)


# --- Webhooks --------------------------------------------------------------------------------
# Endpoints are added, changed and deleted through the API (/api/v1/webhooks); this page shows
# what was sent, why an endpoint was switched off, and switches it or tests it, through the
# same services (memoryhub/services/webhooks.py), which write the audit log.


@tenant_page()
@require_GET
def webhooks(request: HtmxHttpRequest, access: TenantAccess) -> HttpResponse:
    return _page(request, access, "webhooks.html", section="webhooks", rows=webhook_rows())


def _endpoint_or_404(pk: int) -> WebhookEndpoint:
    endpoint = WebhookEndpoint.objects.filter(pk=pk).first()
    if endpoint is None:  # another tenant's id looks exactly like a missing one
        raise Http404("No such webhook endpoint")
    return endpoint


def _endpoint_changed(request: HtmxHttpRequest, access: TenantAccess, endpoint: WebhookEndpoint,
                      *, notice: str, error: bool = False) -> HttpResponse:
    """The endpoint's card with the notice for htmx, else back to the page (post/redirect/get)."""
    if is_partial_request(request):
        return _page(request, access, "webhooks.html", section="webhooks",
                     partials=("endpoint",), row=webhook_row(endpoint), notice=notice,
                     notice_error=error)
    (messages.error if error else messages.success)(request, notice)
    return _back(access, "webhooks")


@tenant_page()
@require_POST
def webhook_switch(request: HtmxHttpRequest, access: TenantAccess, pk: int) -> HttpResponse:
    endpoint = _endpoint_or_404(pk)
    form = WebhookSwitchForm(request.POST)
    if not form.is_valid():
        return _endpoint_changed(request, access, endpoint, notice="Choose on or off.",
                                 error=True)
    enabled = form.cleaned_data["enabled"]
    if enabled != endpoint.enabled:
        endpoint = webhook_update(tenant=access.tenant, endpoint=endpoint,
                                  changes={"enabled": enabled}, actor=actor_label(request))
    notice = ("Switched on: new events are sent to it again (those missed meanwhile are in "
              "the event feed)." if enabled else "Switched off: no events are sent to it.")
    return _endpoint_changed(request, access, endpoint, notice=notice)


def _test_outcome(attempt: Attempt) -> str:
    if attempt.ok:
        return f"The test event was delivered: HTTP {attempt.status}."
    return f"The test event was not delivered: {attempt.error}."


@tenant_page()
@require_POST
def webhook_test(request: HtmxHttpRequest, access: TenantAccess, pk: int) -> HttpResponse:
    endpoint = _endpoint_or_404(pk)
    attempt = webhook_test_send(tenant=access.tenant, endpoint=endpoint,
                                actor=actor_label(request))
    return _endpoint_changed(request, access, endpoint, notice=_test_outcome(attempt),
                             error=not attempt.ok)
