"""Forms of the web pages: they parse and validate input; the rules live in services."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import forms

from memoryhub.capture_policy import MAX_PATTERNS, ROLES
from memoryhub.identifiers import (
    PROFILE_RULE,
    USER_ID_RULE,
    is_profile_name,
    is_session_id,
    is_user_id,
)
from tenants.models import DEFAULT_LIMITS, Permission, Role
from tenants.services import (
    MAX_CONVERSATION_TIMEOUT_MINUTES,
    MAX_SESSION_DAYS,
    tenant_setting_problem,
)

FORGET_WORD = "FORGET"


def _lf(text: str) -> str:
    """Browsers submit a textarea's line breaks as CRLF; memory (documents, facts) uses LF."""
    return text.replace("\r\n", "\n")


def focus_first_error(form: forms.Form) -> None:
    """A refused form's page opens with the keyboard on the first field that has an error (the
    form's first field when only the form as a whole was refused), as a person's own forms do."""
    if not form.is_bound or not form.errors:
        return
    names = [name for name in form.fields if name in form.errors] or list(form.fields)
    for name in names:
        field = form.fields[name]
        if not field.widget.is_hidden:
            field.widget.attrs["autofocus"] = True
            return


def _no_newline(value: str) -> None:
    if "\n" in value or "\r" in value:
        raise forms.ValidationError("The description is one line.")


class DocumentEditForm(forms.Form):
    content = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "true"})
    )
    description = forms.CharField(
        required=False, max_length=200, validators=[_no_newline],
        help_text="One line, at most 200 characters.",
    )
    # The version the form was rendered with: the save refuses if the document moved on.
    version = forms.IntegerField(min_value=1, widget=forms.HiddenInput)

    def clean_content(self) -> str:
        return _lf(self.cleaned_data["content"])


class DocumentDeleteForm(forms.Form):
    version = forms.IntegerField(min_value=1, widget=forms.HiddenInput)


class SessionDeleteForm(forms.Form):
    session_id = forms.CharField(max_length=128, widget=forms.HiddenInput)

    def clean_session_id(self) -> str:
        value: str = self.cleaned_data["session_id"]
        if not is_session_id(value):
            raise forms.ValidationError("Not a session id.")
        return value


class ForgetForm(forms.Form):
    confirm = forms.CharField(
        label=f"Type {FORGET_WORD} to confirm", max_length=20,
        widget=forms.TextInput(attrs={"autocomplete": "off", "autocapitalize": "characters"}),
    )

    def clean_confirm(self) -> str:
        value: str = self.cleaned_data["confirm"].strip()
        if value != FORGET_WORD:
            raise forms.ValidationError(f"Type the word {FORGET_WORD} in capitals to confirm.")
        return value


class MemorySwitchForm(forms.Form):
    enabled = forms.TypedChoiceField(
        choices=[("on", "on"), ("off", "off")], coerce=lambda v: v == "on"
    )


class PortalChoiceForm(forms.Form):
    """A signed-in account's answer to a portal link: link the person for good, or open
    their page this time only."""

    LINK, ONCE = "link", "once"
    choice = forms.ChoiceField(choices=[(LINK, LINK), (ONCE, ONCE)])


class ConversationPlaceForm(forms.Form):
    """Where the person is among their conversations: the page of the list (a delete brings
    that page back) and, in an opened conversation, the seq of the first message shown."""

    page = forms.IntegerField(min_value=1, max_value=2**31 - 1, required=False,
                              widget=forms.HiddenInput)
    start = forms.IntegerField(min_value=1, max_value=2**31 - 1, required=False)


# --- Tenant administration ---------------------------------------------------------------


def _limit_field(label: str) -> forms.IntegerField:
    return forms.IntegerField(
        label=label, required=False, min_value=1, max_value=2**31 - 1,
        help_text="Blank switches this limit off.",
        widget=forms.NumberInput(attrs={"inputmode": "numeric"}),
    )


class PatternListField(forms.CharField):
    """A textarea of one pattern a line; its value is the list (blank lines left out)."""

    widget = forms.Textarea(attrs={"rows": 4, "spellcheck": "false", "autocapitalize": "off"})

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(strip=False, **kwargs)

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        text = super().to_python(value) or ""
        return [line for line in text.splitlines() if line.strip()]


LIMIT_LABELS = {
    "max_document_bytes": "Largest document (bytes)",
    "max_index_entries": "Prompt index: most entries",
    "max_index_tokens": "Prompt index: most tokens",
    "max_scope_bytes": "Largest scope (bytes)",
    "max_writes_per_turn": "Most writes per turn",
}
assert set(LIMIT_LABELS) == set(DEFAULT_LIMITS)


class TenantSettingsForm(forms.Form):
    name = forms.CharField(max_length=200)
    memory_enabled = forms.BooleanField(
        required=False, label="Memory is on for this tenant",
        help_text="Off: every index is empty and every memory tool command is refused.",
    )
    session_days = forms.IntegerField(
        label="Keep session memory (days)", required=False, min_value=1, max_value=MAX_SESSION_DAYS,
        help_text="Blank keeps session memory until the session is deleted.",
    )
    recall_threshold = forms.FloatField(
        label="Recall threshold", min_value=0.0, max_value=1.0,
        help_text="Recall results scoring under this are dropped (0 to 1).",
    )
    # Conversations: named as the model names them, like the fields above.
    capture_excluded_roles = forms.MultipleChoiceField(
        label="Roles not captured", required=False, widget=forms.CheckboxSelectMultiple,
        choices=[(role, role) for role in ROLES],
        help_text="Messages of a ticked role are not stored.",
    )
    capture_drop_empty = forms.BooleanField(
        label="Drop empty messages", required=False,
        help_text="A message of only spaces and line breaks is not stored.",
    )
    capture_redact = PatternListField(
        label="Redaction patterns", required=False,
        help_text=f"One regular expression a line, at most {MAX_PATTERNS}; what they match "
                  "is stored as [redacted]. Credentials are always redacted.",
    )
    conversation_timeout_minutes = forms.IntegerField(
        label="New conversation after (minutes idle)", min_value=1,
        help_text=f"From 1 minute to a week ({MAX_CONVERSATION_TIMEOUT_MINUTES}).",
        widget=forms.NumberInput(attrs={"inputmode": "numeric"}),
    )
    max_message_bytes = _limit_field("Largest message (bytes)")
    max_history_tokens = _limit_field("History text: most tokens")
    augmentation_enabled = forms.BooleanField(
        label="Learn facts from conversations", required=False,
        help_text="Off: conversations are kept as history only.",
    )
    conversation_days = forms.IntegerField(
        label="Keep conversations (days)", required=False, min_value=1,
        help_text="Blank keeps conversations until they are deleted.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, label in LIMIT_LABELS.items():
            self.fields[name] = _limit_field(label)
        # In the page's order, so the first field in error is the first one the page shows.
        self.order_fields(["name", "memory_enabled", *LIMIT_LABELS, "session_days",
                           "recall_threshold", "conversation_days"])
        # Each field carries the value the page showed, so ``changed_data`` names only what
        # the admin edited: saving the page must not put back a setting that the API or
        # another admin changed since it was opened.
        for field in self.fields.values():
            field.show_hidden_initial = True

    def limit_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in LIMIT_LABELS]

    def edited(self) -> dict[str, Any]:
        """The valid values the admin changed on the page; a field sent without the value the
        page showed (a script's POST) counts as changed, blank and unticked included."""
        return {name: self.cleaned_data[name] for name in self.fields
                if name in self.changed_data or self[name].html_initial_name not in self.data}

    def clean(self) -> dict[str, Any]:
        # The settings' own rules (tenants.services), the same the API applies: not repeated here.
        cleaned = super().clean() or {}
        for name in self.fields:
            if name in cleaned and (problem := tenant_setting_problem(name, cleaned[name])):
                self.add_error(name, problem)
        return cleaned


def _on_off() -> forms.TypedChoiceField:
    """A switch's field: "on" or "off", read as a bool."""
    return forms.TypedChoiceField(choices=[("on", "on"), ("off", "off")],
                                  coerce=lambda v: v == "on")


class MemoryToggleForm(forms.Form):
    memory_enabled = _on_off()


class WebhookSwitchForm(forms.Form):
    enabled = _on_off()


class ProfileSwitchForm(forms.Form):
    disabled = _on_off()


def _profile_name(value: str) -> None:
    if not is_profile_name(value):
        raise forms.ValidationError(f"{PROFILE_RULE} (lowercase).")


class ProfileForm(forms.Form):
    name = forms.CharField(
        label="Profile name", max_length=64,
        validators=[_profile_name],
    )


def _user_id(value: str) -> None:
    if not is_user_id(value):
        raise forms.ValidationError(f"A user id is {USER_ID_RULE}.")


class ApiKeyForm(forms.Form):
    name = forms.CharField(max_length=100, label="Key name")
    permissions = forms.MultipleChoiceField(
        choices=[(Permission.MEMORY, "memory: agents and the app read and write memory"),
                 (Permission.ADMIN, "admin: change the tenant's settings")],
        widget=forms.CheckboxSelectMultiple, initial=[Permission.MEMORY],
    )
    # As POST /api/v1/keys takes it: the person need not have any memory yet (an MCP client
    # set up before its first conversation); the people page binds those who have.
    user_id = forms.CharField(
        label="Bound to end user (optional)", required=False, max_length=128,
        validators=[_user_id],
        help_text="The key then reaches only this user id, and cannot have admin.",
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("user_id") and Permission.ADMIN in cleaned.get("permissions", []):
            self.add_error("permissions",
                           "A key bound to one end user cannot have the admin permission.")
        return cleaned


ROLE_CHOICES = [(Role.MEMBER, "Member"), (Role.ADMIN, "Admin"), (Role.OWNER, "Owner")]


class InviteForm(forms.Form):
    # As long as an account's and an invitation's email can be (a longer one was a 500).
    email = forms.EmailField(label="Email address", max_length=254)
    role = forms.ChoiceField(choices=ROLE_CHOICES, initial=Role.MEMBER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=ROLE_CHOICES)


class PeopleSearchForm(forms.Form):
    q = forms.CharField(label="Search by user id", required=False, max_length=128)


class SummaryEditForm(forms.Form):
    """A conversation's summary as the person writes it (empty: no summary), and when the
    summary the form was rendered with was written (empty: there was none): the save
    refuses if it changed since."""

    summary = forms.CharField(required=False, strip=True,
                              widget=forms.Textarea(attrs={"rows": 3}))
    seen = forms.CharField(required=False, widget=forms.HiddenInput)

    def clean_summary(self) -> str:
        return _lf(self.cleaned_data["summary"])

    def clean_seen(self) -> datetime | None:
        seen = self.cleaned_data["seen"]
        try:
            return datetime.fromisoformat(seen) if seen else None
        except ValueError:
            raise forms.ValidationError("Open the conversation again to edit its summary.") from None


class FactEditForm(forms.Form):
    content = forms.CharField(strip=True, widget=forms.Textarea(attrs={"rows": 2}),
                              error_messages={"required": "Write the fact to save."})
    # The version the form was rendered with: the save refuses if the fact moved on.
    version = forms.IntegerField(min_value=1, widget=forms.HiddenInput)

    def clean_content(self) -> str:
        return _lf(self.cleaned_data["content"])


# Marking a fact no longer true or deleting it: the version the page showed, when sent.
FactChangeForm = DocumentDeleteForm
