"""The dashboard's settings page, conversation part: the capture policy, the timeout, the
message and history caps, augmentation and conversation retention. The page's rules are the
API's (one check, tenants.services.tenant_setting_problem), a refusal shows beside its field
and saves nothing, and a saved policy applies to the next capture over the API.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tenants.context import tenant_context
from tenants.models import AuditEntry
from tests.pages.browser import Api, shot
from tests.pages.conftest import signed_in
from tests.pages.test_dashboard import SETTINGS

CAPTURE = "/api/v1/users/alice/sessions/s-1/messages"
POLICY = {
    "capture_excluded_roles": ["tool", "developer"], "capture_drop_empty": "",
    "capture_redact": "order-\\d{6}\r\n\r\n(?i)project falcon\r\n",
    "conversation_timeout_minutes": "5", "max_message_bytes": "100", "max_history_tokens": "",
    "augmentation_enabled": "", "conversation_days": "14",
}


def _settings_changes(tenant) -> list[dict]:
    with tenant_context(tenant.pk):
        return [e.data for e in AuditEntry.objects.filter(action="tenant.settings_changed")]


def _page_form(html: str) -> str:
    start = html.index("<legend>Conversations")
    return html[start:html.index("</form>", start)]


def test_the_page_shows_the_defaults(acme, acme_team) -> None:
    html = _page_form(signed_in(acme_team.admin).get("/t/acme/settings").content.decode())
    assert 'value="system" id="id_capture_excluded_roles_0" checked' in html
    assert 'value="tool" id="id_capture_excluded_roles_4">' in html
    assert 'name="capture_drop_empty" aria-describedby="id_capture_drop_empty_helptext" ' \
           'id="id_capture_drop_empty" checked' in html
    assert 'name="conversation_timeout_minutes" value="30"' in html
    assert 'name="max_message_bytes" value="65536"' in html
    assert 'name="max_history_tokens" value="2000"' in html


def test_a_policy_saved_on_the_page_applies_to_the_next_capture(acme, globex, acme_team) -> None:
    client = signed_in(acme_team.admin)
    response = client.post("/t/acme/settings", {**SETTINGS, **POLICY})
    assert response.status_code == 302
    body = acme.client.get("/api/v1/tenant").json()
    assert body["capture"] == {"excluded_roles": ["developer", "tool"], "drop_empty": False,
                               "redact": [r"order-\d{6}", "(?i)project falcon"]}
    assert (body["conversation_timeout_minutes"], body["max_message_bytes"],
            body["max_history_tokens"], body["augmentation_enabled"]) == (5, 100, None, False)
    assert body["retention"]["conversation_days"] == 14
    assert globex.client.get("/api/v1/tenant").json()["capture"]["redact"] == []
    # The page shows what was saved, one pattern a line.
    html = _page_form(client.get("/t/acme/settings").content.decode())
    assert "order-\\d{6}\n(?i)project falcon</textarea>" in html
    # The next capture follows the policy.
    reply = acme.client.post(CAPTURE, {"messages": [
        {"role": "system", "content": "Be brief."}, {"role": "tool", "content": "{}"},
        {"role": "user", "content": " "}, {"role": "user", "content": "Ship order-123456."},
    ]}, format="json").json()
    assert reply["dropped"] == {"excluded_role": 1, "empty": 0, "duplicate": 0}
    stored = acme.client.get(CAPTURE).json()["messages"]
    assert [(m["role"], m["content"]) for m in stored] == [
        ("system", "Be brief."), ("user", " "), ("user", "Ship [redacted].")]
    too_large = acme.client.post(CAPTURE, {"messages": [{"role": "user", "content": "x" * 101}]},
                                 format="json")
    assert too_large.json()["error"]["code"] == "message_too_large"
    # One audit entry, old and new values, the account's email.
    [change] = _settings_changes(acme.tenant)
    assert change == {
        "capture_excluded_roles": [["system"], ["developer", "tool"]],
        "capture_drop_empty": [True, False],
        "capture_redact": [[], [r"order-\d{6}", "(?i)project falcon"]],
        "conversation_timeout_minutes": [30, 5], "max_message_bytes": [65536, 100],
        "max_history_tokens": [2000, None], "augmentation_enabled": [True, False],
        "conversation_days": [None, 14],
    }
    audit = client.get("/t/acme/audit").content.decode()
    assert "capture_redact" in audit and "project falcon" in audit
    # Saving the page unchanged changes nothing and records nothing.
    assert client.post("/t/acme/settings", {**SETTINGS, **POLICY}).status_code == 302
    assert len(_settings_changes(acme.tenant)) == 1


@pytest.mark.parametrize(("field", "bad", "message"), [
    ("capture_redact", "fine\n(a+)+", "&#x27;(a+)+&#x27; nests a quantifier inside another"),
    ("capture_redact", "a(", "&#x27;a(&#x27; is not a valid pattern (missing ): a()."),
    ("capture_redact", "x*", "&#x27;x*&#x27; matches the empty string"),
    ("capture_redact", "b" * 501, "is 501 characters long; a redact pattern is at most 500."),
    ("capture_redact", "\n".join(f"p{i}" for i in range(21)), "at most 20 redact patterns, not 21."),
    ("capture_excluded_roles", ["system", "admin"], "admin is not one of the available choices."),
    ("conversation_timeout_minutes", "0", "Ensure this value is greater than or equal to 1."),
    ("conversation_timeout_minutes", "10081", "Must be at most 10080."),
    ("conversation_timeout_minutes", "", "This field is required."),
    ("max_message_bytes", "1048577", "Must be at most 1048576."),
    ("max_message_bytes", "lots", "Enter a whole number."),
    ("max_history_tokens", "0", "Ensure this value is greater than or equal to 1."),
    ("conversation_days", "36501", "Must be at most 36500."),
    ("conversation_days", "1.5", "Enter a whole number."),
])
def test_a_refusal_shows_beside_its_field_and_saves_nothing(acme, acme_team, field, bad,
                                                            message) -> None:
    before = acme.client.get("/api/v1/tenant").json()
    response = signed_in(acme_team.admin).post("/t/acme/settings",
                                               {**SETTINGS, **POLICY, field: bad})
    assert response.status_code == 422
    html = response.content.decode()
    errors = html[html.index(f'id="id_{field}_error"'):]
    assert errors[:errors.index("</ul>")].count("<li>") == 1
    assert message in errors[:errors.index("</ul>")]
    assert acme.client.get("/api/v1/tenant").json() == before
    assert _settings_changes(acme.tenant) == []


# --- In the browser -------------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_sets_the_capture_policy_in_the_browser(pages, acme, acme_team,
                                                         live_server) -> None:
    api = Api(live_server.url, acme.key)
    pages.expect_failed_load(422, "/t/acme/settings")  # the bad pattern, refused with its reason
    page = pages.new(user=acme_team.admin)
    page.goto("/t/acme/settings")
    page.get_by_label("tool").check()
    page.get_by_label("system").uncheck()
    page.get_by_label("Redaction patterns").fill("(a+)+\nproject falcon")
    page.get_by_label("New conversation after (minutes idle)").fill("1")
    page.get_by_role("button", name="Save settings").click()
    # A bad pattern: its reason beside the field, nothing saved, what was typed kept.
    error = page.locator("#id_capture_redact_error")
    expect(error).to_contain_text("'(a+)+' nests a quantifier inside another")
    expect(page.get_by_label("Redaction patterns")).to_have_value("(a+)+\nproject falcon")
    shot(page, "tenant-settings-bad-pattern")
    assert api.http.get("/tenant").json()["capture"] == {
        "excluded_roles": ["system"], "drop_empty": True, "redact": []}
    page.get_by_label("Redaction patterns").fill("(?i)project falcon")
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_text("Settings saved")).to_be_visible()
    expect(page.get_by_label("tool")).to_be_checked()
    expect(page.get_by_label("system")).not_to_be_checked()
    expect(page.get_by_label("Redaction patterns")).to_have_value("(?i)project falcon")
    shot(page, "tenant-settings-conversations")
    # The agent's next capture follows the saved policy.
    reply = api.http.post("/users/alice/sessions/s-1/messages", json={"messages": [
        {"role": "system", "content": "Be brief.", "created_at": "2026-11-06T17:00:00Z"},
        {"role": "tool", "content": "{}", "created_at": "2026-11-06T17:00:00Z"},
        {"role": "user", "content": "About Project Falcon", "created_at": "2026-11-06T17:00:00Z"},
    ]})
    assert reply.status_code == 201, reply.text
    assert reply.json()["dropped"]["excluded_role"] == 1
    later = api.http.post("/users/alice/sessions/s-1/messages", json={"messages": [
        {"role": "user", "content": "Two minutes on", "created_at": "2026-11-06T17:02:00Z"}]})
    assert later.json()["conversation_id"] != reply.json()["conversation_id"]  # timeout 1
    messages = api.http.get("/users/alice/sessions/s-1/messages").json()["messages"]
    assert [(m["role"], m["content"]) for m in messages] == [
        ("system", "Be brief."), ("user", "About [redacted]"), ("user", "Two minutes on")]
    page.get_by_role("link", name="Audit log").click()
    expect(page.get_by_text("capture_redact")).to_be_visible()
    expect(page.get_by_text("capture_excluded_roles")).to_be_visible()
    shot(page, "tenant-audit-conversations")
