"""allauth: sign-up is open only to the holder of an invitation link, for the invited email.

The invitation view puts the link's token in the session; while it names a pending
invitation, the sign-up form is open, its email must be the invited one, and the new
account becomes a member with the invited role. Without it allauth shows "Sign Up Closed".
"""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from django import forms
from django.contrib import messages
from django.http import HttpRequest

from tenants.context import tenant_context
from tenants.models import Invitation
from tenants.services import invitation_accept, invitation_find

INVITATION_SESSION_KEY = "memoryhub_invitation"


def session_invitation(request: HttpRequest) -> Invitation | None:
    token = request.session.get(INVITATION_SESSION_KEY)
    return invitation_find(token=token) if isinstance(token, str) else None


class InvitationAccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request: HttpRequest) -> bool:
        return session_invitation(request) is not None

    def clean_email(self, email: str) -> str:
        email = super().clean_email(email)
        invitation = session_invitation(self.request) if self.request is not None else None
        if invitation is not None and email.strip().lower() != invitation.email:
            raise forms.ValidationError(
                f"This invitation is for {invitation.email}; sign up with that address."
            )
        return email

    def save_user(self, request: HttpRequest, user: Any, form: Any, commit: bool = True) -> Any:
        user = super().save_user(request, user, form, commit=commit)
        invitation = session_invitation(request)
        if commit and invitation is not None:
            with tenant_context(invitation.tenant_id):
                invitation_accept(invitation=invitation, user=user)
            request.session.pop(INVITATION_SESSION_KEY, None)
            messages.success(request, f"Welcome: you joined {invitation.tenant.name}.")
        return user
