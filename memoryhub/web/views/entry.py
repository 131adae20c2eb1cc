"""Ways in: the home page (tenant picker), portal links, invitation links."""

from __future__ import annotations

from allauth.account.adapter import get_adapter
from allauth.mfa.models import Authenticator
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.views import redirect_to_login
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from memoryhub.services.people import end_user_account_link, portal_link_redeem
from memoryhub.web.access import ADMIN_ROLES
from memoryhub.web.adapters import INVITATION_SESSION_KEY
from memoryhub.web.http import HtmxHttpRequest
from memoryhub.web.portal import portal_entry, portal_grant_end, portal_grant_start
from memoryhub.web.selectors import account_end_users, account_memberships
from tenants.context import tenant_context
from tenants.services import MembershipRuleError, invitation_accept, invitation_find


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


@portal_entry
@require_GET
def portal_redeem(request: HtmxHttpRequest, token: str) -> HttpResponse:
    """A one-time link: a signed-in account gets the person linked to it; anyone else gets a
    portal session fenced to the person's page."""
    end_user = portal_link_redeem(token=token)
    if end_user is None:
        return render(request, "web/portal_error.html", status=410)
    if request.user.is_authenticated:
        with tenant_context(end_user.tenant_id):
            end_user_account_link(end_user=end_user, user=request.user)
        messages.success(request, "This memory page is now linked to your account.")
    else:
        portal_grant_start(request, tenant_id=end_user.tenant_id, end_user_id=end_user.pk)
    return redirect("web:person", tenant_id=end_user.tenant_id, end_user_id=end_user.pk)


@portal_entry
@require_POST
def portal_leave(request: HtmxHttpRequest) -> HttpResponse:
    portal_grant_end(request)
    return render(request, "web/portal_left.html")


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
