"""Ways in: the home page (tenant picker), portal links, invitation links."""

from __future__ import annotations

import logging
from typing import Any

from allauth.account.adapter import get_adapter
from allauth.account.views import LoginView
from allauth.core.internal.httpkit import get_client_ip
from allauth.mfa.models import Authenticator
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import NON_FIELD_ERRORS, RequestDataTooBig
from django.forms import Form
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.views import defaults
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from memoryhub.infra.observability import route_of
from memoryhub.models import EndUser
from memoryhub.services.people import end_user_account_link, portal_link_redeem
from memoryhub.web.access import ADMIN_ROLES
from memoryhub.web.adapters import INVITATION_SESSION_KEY
from memoryhub.web.forms import PortalChoiceForm
from memoryhub.web.http import HtmxHttpRequest
from memoryhub.web.portal import (
    PortalGrant,
    portal_entry,
    portal_grant_add,
    portal_grant_end,
    portal_grant_start,
    portal_pending,
    portal_pending_pop,
    portal_pending_set,
)
from memoryhub.web.selectors import account_end_users, account_memberships
from tenants.context import tenant_context
from tenants.services import MembershipRuleError, invitation_accept, invitation_find

# One logger and message for every refusal of a web rate limit, for log-based alerting
# (the API's 429s are in the access log with their status).
limits_logger = logging.getLogger("memoryhub.ratelimit")


def rate_limit_refused(request: HttpRequest, *, limit: str) -> None:
    # The URL pattern, not the path: a password reset link's path holds its key.
    limits_logger.warning("rate limit refused %s %s (%s) from %s", request.method,
                          route_of(request), limit, get_client_ip(request) or "unknown address",
                          extra={"rate_limit": limit})


class SignInView(LoginView):
    """allauth's sign-in, with 429 when too many failed attempts refuse it: allauth itself
    answers 200 with the form's error, which monitoring cannot tell from a mistyped password.
    (allauth's per-address limit on sign-in requests answers 429 through ``too_many``.)"""

    def form_invalid(self, form: Form) -> HttpResponse:
        response: HttpResponse = super().form_invalid(form)
        if form.has_error(NON_FIELD_ERRORS, code="too_many_login_attempts"):
            rate_limit_refused(self.request, limit="login_failed")
            response.status_code = 429
        return response


sign_in = SignInView.as_view()


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponseBase:
    """``handler400``: Django's, except for a body over ``DATA_UPLOAD_MAX_MEMORY_SIZE``, which
    is 413 as the API answers it. A note too large to send was a 400, for which the pages'
    script tells the person to reload, losing the text; on 413 it says the text is too large."""
    if isinstance(exception, RequestDataTooBig):
        return render(request, "413.html", status=413)
    return defaults.bad_request(request, exception)


def too_many(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """``handler429``: allauth answers its own limits' refusals with it."""
    rate_limit_refused(request, limit="allauth")
    return render(request, "429.html", status=429)


@require_GET
def home(request: HtmxHttpRequest) -> HttpResponse:
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    memberships = account_memberships(user=request.user)
    manages = any(m.role in ADMIN_ROLES for m in memberships)
    return render(request, "web/home.html", {
        "memberships": memberships,
        "admin_roles": ADMIN_ROLES,
        "end_users": account_end_users(user=request.user),
        # Owners and admins hold the keys to a tenant: suggest a second factor until they have one.
        "suggest_totp": manages and not Authenticator.objects.filter(
            user=request.user, type=Authenticator.Type.TOTP).exists(),
    })


def _person_page(grant: PortalGrant) -> HttpResponse:
    return redirect("web:person", tenant_id=grant.tenant_id, end_user_id=grant.end_user_id)


def _link_gone(request: HtmxHttpRequest) -> HttpResponse:
    return render(request, "web/portal_error.html", status=410)


@portal_entry
@require_http_methods(["GET", "POST"])
def portal_redeem(request: HtmxHttpRequest, token: str) -> HttpResponse:
    """A one-time link. Anyone without an account gets a portal session fenced to the
    person's page. A signed-in account redeems it too (so nobody else can), then is asked
    (POST, below) whether to link the person to the account or to open the page this time
    only; an account the person is already linked to just goes there."""
    if not request.user.is_authenticated:
        if request.method != "GET":
            return _link_gone(request)
        end_user = portal_link_redeem(token=token)
        if end_user is None:
            return _link_gone(request)
        portal_grant_start(request, tenant_id=end_user.tenant_id, end_user_id=end_user.pk)
        return _person_page(PortalGrant(end_user.tenant_id, end_user.pk))
    if request.method == "POST":
        return _portal_choice(request, token, user=request.user)
    grant = portal_pending(request, token=token)  # reopened before choosing: ask again
    if grant is None:
        end_user = portal_link_redeem(token=token)
        if end_user is None:
            return _link_gone(request)
        grant = PortalGrant(end_user.tenant_id, end_user.pk)
        if end_user.account_id == request.user.pk:
            return _person_page(grant)
        portal_pending_set(request, token=token, grant=grant)
    return _portal_question(request, grant, form=PortalChoiceForm())


def _portal_question(request: HtmxHttpRequest, grant: PortalGrant, *, form: PortalChoiceForm,
                     status: int = 200) -> HttpResponse:
    with tenant_context(grant.tenant_id):
        end_user = EndUser.objects.select_related("tenant").filter(pk=grant.end_user_id).first()
    if end_user is None:  # forgotten since the link was opened
        return _link_gone(request)
    return render(request, "web/portal_confirm.html",
                  {"end_user": end_user, "form": form, "choice": PortalChoiceForm},
                  status=status)


def _portal_choice(request: HtmxHttpRequest, token: str, *, user: User) -> HttpResponse:
    """The account's answer: link for good (it comes back with its password), or a grant
    in its session for this visit only. The pending link is taken once."""
    form = PortalChoiceForm(request.POST)
    if not form.is_valid():
        grant = portal_pending(request, token=token)
        if grant is None:
            return _link_gone(request)
        return _portal_question(request, grant, form=form, status=422)
    grant = portal_pending_pop(request, token=token)
    if grant is None:
        return _link_gone(request)
    if form.cleaned_data["choice"] == PortalChoiceForm.LINK:
        with tenant_context(grant.tenant_id):
            end_user = EndUser.objects.filter(pk=grant.end_user_id).first()
            if end_user is None:  # forgotten since the link was opened
                return _link_gone(request)
            end_user_account_link(end_user=end_user, user=user)
        messages.success(request, "This memory page is now linked to your account.")
    else:
        portal_grant_add(request, grant)
        messages.success(request, "Opened for this visit only; nothing was linked to your "
                                  "account.")
    return _person_page(grant)


@portal_entry
@require_POST
def portal_leave(request: HtmxHttpRequest) -> HttpResponse:
    portal_grant_end(request)
    return render(request, "web/portal_left.html")


@portal_entry
@require_GET
def portal_ended(request: HtmxHttpRequest) -> HttpResponse:
    """Where an action on a memory page whose session ended lands (``person_page``): the
    portal session expired, or the account signed out. The page says so and offers both ways
    back, since it cannot tell which it was."""
    back = request.GET.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure()):
        back = ""
    login_url = reverse("account_login") + (f"?{urlencode({'next': back})}" if back else "")
    return render(request, "web/portal_ended.html", {"login_url": login_url})


@require_GET
def invitation(request: HtmxHttpRequest, token: str) -> HttpResponse:
    """An invitation link: accept it when signed in as the invited email, else sign up (new
    email) or sign in (known email) and come back."""
    found = invitation_find(token=token)
    if found is None:
        return render(request, "web/invitation.html", {"state": "invalid"}, status=410)
    user = request.user
    if user.is_authenticated:
        if (user.email or "").lower() != found.email:
            return render(request, "web/invitation.html",
                          {"state": "other_account", "invitation": found}, status=403)
        try:
            with tenant_context(found.tenant_id):
                invitation_accept(invitation=found, user=user)
        except MembershipRuleError:
            return render(request, "web/invitation.html", {"state": "invalid"}, status=410)
        messages.success(request, f"You joined {found.tenant.name}.")
        return redirect("web:home")
    request.session[INVITATION_SESSION_KEY] = token
    if get_user_model().objects.filter(email__iexact=found.email).exists():
        return render(request, "web/invitation.html", {
            "state": "sign_in", "invitation": found,
            "login_url": f"{reverse('account_login')}?next={request.path}",
        })
    # allauth pre-fills the sign-up form with this email and records it as verified: the
    # invitation link reached that inbox.
    get_adapter(request).stash_verified_email(request, found.email)
    return redirect("account_signup")
