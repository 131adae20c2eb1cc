"""The conversation settings of ``GET|PATCH /api/v1/tenant`` (spec: the end of "Facts"):
the capture policy, the timeout, the message and history caps, augmentation, conversation
retention. Each is shown with its default, set, refused with a message that says why,
audited with its old and new value, and takes effect on the very next capture or history.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from tenants.context import tenant_context
from tenants.models import AuditEntry
from tenants.services import tenant_settings_update

TENANT = "/api/v1/tenant"
CAPTURE = "/api/v1/users/alice/sessions/s-1/messages"

DEFAULTS = {
    "capture": {"excluded_roles": ["system"], "drop_empty": True, "redact": []},
    "conversation_timeout_minutes": 30,
    "max_message_bytes": 65536,
    "max_history_tokens": 2000,
    "augmentation_enabled": True,
}


def patch(kit: Any, body: dict) -> Any:
    return kit.client.patch(TENANT, body, format="json")


def settings_changes(kit: Any) -> list[dict]:
    with tenant_context(kit.tenant.id):
        return [entry.data for entry in AuditEntry.objects.filter(
            action="tenant.settings_changed").order_by("id")]


def capture(kit: Any, *messages: dict, path: str = CAPTURE, **extra: Any) -> Any:
    return kit.client.post(path, {"messages": list(messages), **extra}, format="json")


def stored(kit: Any, path: str = CAPTURE) -> list[tuple[str, str]]:
    response = kit.client.get(path)
    assert response.status_code == 200, response.content
    return [(m["role"], m["content"]) for m in response.json()["messages"]]


# --- Defaults, values, null --------------------------------------------------------------------


def test_the_defaults_are_the_spec_s(acme) -> None:
    body = acme.client.get(TENANT).json()
    assert {key: body[key] for key in DEFAULTS} == DEFAULTS
    assert body["retention"]["conversation_days"] is None  # keeps conversations
    assert (body["limits"]["max_message_bytes"], body["limits"]["max_history_tokens"]) == (
        65536, 2000)


def test_every_setting_is_set_and_shown(acme, globex) -> None:
    response = patch(acme, {
        "capture": {"excluded_roles": ["tool", "developer"], "drop_empty": False,
                    "redact": [r"order-\d{6}", "(?i)project falcon"]},
        "conversation_timeout_minutes": 10080, "max_message_bytes": 1048576,
        "max_history_tokens": 1, "augmentation_enabled": False,
        "retention": {"conversation_days": 90},
    })
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["capture"] == {"excluded_roles": ["developer", "tool"], "drop_empty": False,
                               "redact": [r"order-\d{6}", "(?i)project falcon"]}
    assert (body["conversation_timeout_minutes"], body["max_message_bytes"],
            body["max_history_tokens"], body["augmentation_enabled"]) == (10080, 1048576, 1, False)
    assert body["retention"] == {"session_days": 30, "conversation_days": 90}
    assert acme.client.get(TENANT).json() == body
    # The other tenant keeps the defaults.
    other = globex.client.get(TENANT).json()
    assert {key: other[key] for key in DEFAULTS} == DEFAULTS
    assert other["retention"]["conversation_days"] is None


def test_null_switches_off_what_may_be_off(acme) -> None:
    patch(acme, {"retention": {"conversation_days": 7}})
    body = patch(acme, {"max_message_bytes": None, "max_history_tokens": None,
                        "retention": {"conversation_days": None}}).json()
    assert (body["max_message_bytes"], body["max_history_tokens"]) == (None, None)
    assert (body["limits"]["max_message_bytes"], body["limits"]["max_history_tokens"]) == (None,
                                                                                          None)
    assert body["retention"]["conversation_days"] is None


def test_an_empty_policy_is_allowed(acme) -> None:
    body = patch(acme, {"capture": {"excluded_roles": [], "redact": []}}).json()
    assert body["capture"] == {"excluded_roles": [], "drop_empty": True, "redact": []}


def test_a_capture_patch_changes_only_the_keys_it_sends(acme) -> None:
    patch(acme, {"capture": {"excluded_roles": ["tool"], "redact": ["secret-[a-z]+"]}})
    body = patch(acme, {"capture": {"drop_empty": False}}).json()
    assert body["capture"] == {"excluded_roles": ["tool"], "drop_empty": False,
                               "redact": ["secret-[a-z]+"]}
    body = patch(acme, {"capture": {"redact": []}}).json()
    assert body["capture"] == {"excluded_roles": ["tool"], "drop_empty": False, "redact": []}
    assert patch(acme, {"capture": {}}).json()["capture"] == body["capture"]


def test_excluded_roles_are_a_set(acme) -> None:
    body = patch(acme, {"capture": {"excluded_roles": ["tool", "system", "tool"]}}).json()
    assert body["capture"]["excluded_roles"] == ["system", "tool"]
    changes = len(settings_changes(acme))
    patch(acme, {"capture": {"excluded_roles": ["system", "tool"]}})
    patch(acme, {"capture": {"excluded_roles": ["tool", "system"]}})
    assert len(settings_changes(acme)) == changes  # the same set: nothing changed


# --- max_message_bytes and max_history_tokens, spelt twice ---------------------------------------


def test_the_caps_read_and_write_the_same_in_limits_and_at_the_top(acme) -> None:
    body = patch(acme, {"limits": {"max_message_bytes": 500, "max_history_tokens": 50}}).json()
    assert (body["max_message_bytes"], body["max_history_tokens"]) == (500, 50)
    assert (body["limits"]["max_message_bytes"], body["limits"]["max_history_tokens"]) == (500, 50)
    body = patch(acme, {"max_message_bytes": 600, "max_history_tokens": 60}).json()
    assert (body["limits"]["max_message_bytes"], body["limits"]["max_history_tokens"]) == (600, 60)
    # Both spellings in one body must agree.
    body = patch(acme, {"max_message_bytes": 700, "limits": {"max_message_bytes": 700}}).json()
    assert body["max_message_bytes"] == 700
    response = patch(acme, {"max_history_tokens": 70, "limits": {"max_history_tokens": 80}})
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "invalid_request",
        "message": "max_history_tokens: max_history_tokens and limits.max_history_tokens are "
                   "one setting; they differ here."}
    assert acme.client.get(TENANT).json()["max_history_tokens"] == 60


def test_the_caps_in_limits_are_checked_like_the_top_level_ones(acme) -> None:
    for bad, message in [
        ({"max_message_bytes": 0}, "Ensure this value is greater than or equal to 1."),
        ({"max_message_bytes": 1048577}, "Ensure this value is less than or equal to 1048576."),
        ({"max_history_tokens": "5"}, "Must be a whole number."),
    ]:
        response = patch(acme, {"limits": bad})
        assert response.status_code == 400, bad
        [name] = bad
        assert response.json()["error"]["message"] == f"limits: {name}: {message}"


# --- Refusals ---------------------------------------------------------------------------------

TOO_LONG = "a" * 501
REFUSED = [
    # The capture policy.
    ({"capture": {"excluded_roles": ["admin"]}},
     "capture: excluded_roles: 'admin' is not a role; the roles are system, developer, user, "
     "assistant, tool."),
    ({"capture": {"excluded_roles": ["user", "System"]}},
     "capture: excluded_roles: 'System' is not a role; the roles are system, developer, user, "
     "assistant, tool."),
    ({"capture": {"excluded_roles": "system"}},
     'capture: excluded_roles: Expected a list of items but got type "str".'),
    ({"capture": {"excluded_roles": [1]}}, "capture: excluded_roles: 0: Must be a string."),
    ({"capture": {"excluded_roles": None}}, "capture: excluded_roles: This field may not be null."),
    ({"capture": {"drop_empty": "false"}}, "capture: drop_empty: Must be true or false."),
    ({"capture": {"drop_empty": 0}}, "capture: drop_empty: Must be true or false."),
    ({"capture": {"drop_empty": None}}, "capture: drop_empty: This field may not be null."),
    ({"capture": {"redact": ["a("]}},
     "capture: redact: 'a(' is not a valid pattern (missing ): a()."),
    ({"capture": {"redact": [r"(a)\1"]}},
     r"capture: redact: '(a)\\1' is not a valid pattern (invalid escape sequence: \1)."),
    ({"capture": {"redact": ["ok", "(?<=x)y"]}},
     "capture: redact: '(?<=x)y' is not a valid pattern (invalid perl operator: (?<=)."),
    ({"capture": {"redact": ["(a+)+"]}},
     "capture: redact: '(a+)+' nests a quantifier inside another, such as (a+)+, which can "
     "take exponential time to match; write it without the nesting."),
    ({"capture": {"redact": [r"(\w+\s?)*$"]}},
     r"capture: redact: '(\\w+\\s?)*$' nests a quantifier inside another, such as (a+)+, which "
     "can take exponential time to match; write it without the nesting."),
    ({"capture": {"redact": ["x*"]}},
     "capture: redact: 'x*' matches the empty string, so it would redact nothing useful."),
    ({"capture": {"redact": ["^"]}},
     "capture: redact: '^' matches the empty string, so it would redact nothing useful."),
    ({"capture": {"redact": [TOO_LONG]}},
     f"capture: redact: {'a' * 60 + '…'!r} is 501 characters long; a redact pattern is at "
     "most 500."),
    ({"capture": {"redact": [""]}},
     "capture: redact: each redact pattern must be a non-empty string."),
    ({"capture": {"redact": [f"p{i}" for i in range(21)]}},
     "capture: redact: at most 20 redact patterns."),
    ({"capture": {"redact": [5]}}, "capture: redact: 0: Must be a string."),
    ({"capture": {"redact": "secret"}},
     'capture: redact: Expected a list of items but got type "str".'),
    ({"capture": {"redcat": []}}, "capture: Unknown fields: redcat."),
    ({"capture": ["system"]},
     "capture: non_field_errors: Invalid data. Expected a dictionary, but got list."),
    # The numbers: whole JSON numbers in range, never strings or booleans.
    ({"conversation_timeout_minutes": 0},
     "conversation_timeout_minutes: Ensure this value is greater than or equal to 1."),
    ({"conversation_timeout_minutes": 10081},
     "conversation_timeout_minutes: Ensure this value is less than or equal to 10080."),
    ({"conversation_timeout_minutes": None},
     "conversation_timeout_minutes: This field may not be null."),
    ({"conversation_timeout_minutes": "30"}, "conversation_timeout_minutes: Must be a whole number."),
    ({"conversation_timeout_minutes": True}, "conversation_timeout_minutes: Must be a whole number."),
    ({"conversation_timeout_minutes": 1.5}, "conversation_timeout_minutes: Must be a whole number."),
    ({"max_message_bytes": 0}, "max_message_bytes: Ensure this value is greater than or equal to 1."),
    ({"max_message_bytes": 1048577},
     "max_message_bytes: Ensure this value is less than or equal to 1048576."),
    ({"max_message_bytes": "65536"}, "max_message_bytes: Must be a whole number."),
    ({"max_message_bytes": False}, "max_message_bytes: Must be a whole number."),
    ({"max_history_tokens": -1},
     "max_history_tokens: Ensure this value is greater than or equal to 1."),
    ({"max_history_tokens": 2**40},
     "max_history_tokens: Ensure this value is less than or equal to 2147483647."),
    ({"max_history_tokens": True}, "max_history_tokens: Must be a whole number."),
    ({"augmentation_enabled": "true"}, "augmentation_enabled: Must be true or false."),
    ({"augmentation_enabled": 1}, "augmentation_enabled: Must be true or false."),
    ({"augmentation_enabled": None}, "augmentation_enabled: This field may not be null."),
    ({"retention": {"conversation_days": 0}},
     "retention: conversation_days: Ensure this value is greater than or equal to 1."),
    ({"retention": {"conversation_days": 36501}},
     "retention: conversation_days: Ensure this value is less than or equal to 36500."),
    ({"retention": {"conversation_days": "30"}},
     "retention: conversation_days: Must be a whole number."),
    ({"retention": {"conversation_days": True}},
     "retention: conversation_days: Must be a whole number."),
    ({"retention": {"conversations_days": 30}}, "retention: Unknown fields: conversations_days."),
    ({"conversation_timeout": 5}, "non_field_errors: Unknown fields: conversation_timeout."),
]


@pytest.mark.parametrize(("body", "message"), REFUSED, ids=[str(b) for b, _ in REFUSED])
def test_a_bad_value_is_refused_with_its_reason_and_changes_nothing(acme, body, message) -> None:
    before = acme.client.get(TENANT).json()
    response = patch(acme, {**body, "name": "Changed"})  # a good change in the same body
    assert response.status_code == 400, response.content
    assert response.json() == {"error": {"code": "invalid_request", "message": message}}
    assert acme.client.get(TENANT).json() == before
    assert settings_changes(acme) == []


def test_the_service_itself_refuses_what_breaks_a_setting_s_rule(acme) -> None:
    """The API and the page check first; any other caller meets the same rule here."""
    with pytest.raises(ValidationError) as refused:
        tenant_settings_update(tenant_id=acme.tenant.id, actor="test", changes={
            "name": "Changed", "capture_redact": ["ok", "(a+)+"],
            "capture_excluded_roles": ["robot"], "conversation_timeout_minutes": 10081})
    assert refused.value.message_dict == {
        "capture_redact": ["'(a+)+' nests a quantifier inside another, such as (a+)+, which can "
                           "take exponential time to match; write it without the nesting."],
        "capture_excluded_roles": ["'robot' is not a role; the roles are system, developer, "
                                   "user, assistant, tool."],
        "conversation_timeout_minutes": ["Must be at most 10080."],
    }
    assert acme.client.get(TENANT).json()["name"] == "Acme"
    assert settings_changes(acme) == []


def test_a_memory_key_cannot_change_the_policy(acme) -> None:
    response = acme.client_with(acme.memory_key).patch(
        TENANT, {"capture": {"excluded_roles": []}}, format="json")
    assert response.status_code == 403
    assert acme.client.get(TENANT).json()["capture"]["excluded_roles"] == ["system"]


# --- The audit log -----------------------------------------------------------------------------


def test_each_change_is_audited_with_its_old_and_new_value(acme, globex) -> None:
    patch(acme, {"capture": {"excluded_roles": ["tool"], "redact": [r"order-\d{6}"]},
                 "conversation_timeout_minutes": 5, "limits": {"max_message_bytes": 100}})
    patch(acme, {"capture": {"drop_empty": False, "redact": [r"order-\d{6}", "falcon"]},
                 "max_history_tokens": None, "augmentation_enabled": False,
                 "retention": {"conversation_days": 14}})
    patch(acme, {"capture": {"drop_empty": False}, "max_message_bytes": 100})  # no change
    assert settings_changes(acme) == [
        {"capture_excluded_roles": [["system"], ["tool"]],
         "capture_redact": [[], [r"order-\d{6}"]],
         "conversation_timeout_minutes": [30, 5],
         "max_message_bytes": [65536, 100]},
        {"capture_drop_empty": [True, False],
         "capture_redact": [[r"order-\d{6}"], [r"order-\d{6}", "falcon"]],
         "max_history_tokens": [2000, None],
         "augmentation_enabled": [True, False],
         "conversation_days": [None, 14]},
    ]
    with tenant_context(acme.tenant.id):
        actors = set(AuditEntry.objects.filter(action="tenant.settings_changed")
                     .values_list("actor", flat=True))
    assert len(actors) == 1 and actors.pop().startswith("api-key:")
    assert settings_changes(globex) == []


# --- The settings take effect on the next call --------------------------------------------------


def test_excluded_roles_decide_which_messages_are_kept(acme) -> None:
    system = {"role": "system", "content": "You are helpful."}
    tool = {"role": "tool", "content": '{"temperature": 21}'}
    first = capture(acme, system, tool)
    assert first.json()["dropped"]["excluded_role"] == 1  # the default excludes system
    assert stored(acme) == [("tool", '{"temperature": 21}')]
    patch(acme, {"capture": {"excluded_roles": ["tool"]}})
    second = capture(acme, system, tool)
    assert second.status_code == 201
    assert [m["role"] for m in second.json()["captured"]] == ["system"]
    assert second.json()["dropped"] == {"excluded_role": 1, "empty": 0, "duplicate": 0}
    assert stored(acme) == [("tool", '{"temperature": 21}'), ("system", "You are helpful.")]


def test_drop_empty_off_keeps_empty_messages(acme) -> None:
    blank = {"role": "user", "content": "  \n"}
    assert capture(acme, blank).json()["dropped"]["empty"] == 1
    patch(acme, {"capture": {"drop_empty": False}})
    reply = capture(acme, blank).json()
    assert (len(reply["captured"]), reply["dropped"]["empty"]) == (1, 0)
    assert stored(acme) == [("user", "  \n")]


def test_a_redact_pattern_redacts_from_the_next_capture(acme, globex) -> None:
    said = {"role": "user", "content": "Order order-123456 for Project Falcon."}
    capture(acme, said)
    patch(acme, {"capture": {"redact": [r"order-\d{6}", "(?i)project falcon"]}})
    reply = capture(acme, said).json()
    assert reply["redacted"] == 1
    assert stored(acme) == [("user", "Order order-123456 for Project Falcon."),
                            ("user", "Order [redacted] for [redacted].")]
    capture(globex, said)  # another tenant's policy is its own
    assert stored(globex) == [("user", "Order order-123456 for Project Falcon.")]


def test_max_message_bytes_refuses_larger_messages_and_null_switches_it_off(acme) -> None:
    patch(acme, {"max_message_bytes": 10})
    assert capture(acme, {"role": "user", "content": "0123456789"}).status_code == 201
    refused = capture(acme, {"role": "user", "content": "ok"},
                      {"role": "user", "content": "012345678é"})  # 11 bytes
    assert refused.status_code == 422
    assert refused.json()["error"]["code"] == "message_too_large"
    assert stored(acme) == [("user", "0123456789")]  # nothing of the refused request
    patch(acme, {"limits": {"max_message_bytes": None}})
    big = "x" * 100_000  # over the default 65536
    assert capture(acme, {"role": "user", "content": big}).status_code == 201


def test_the_timeout_splits_conversations(acme) -> None:
    def at(minute: int, text: str, session: str) -> str:
        path = f"/api/v1/users/alice/sessions/{session}/messages"
        created = f"2026-11-06T17:{minute:02d}:00Z"
        reply = capture(acme, {"role": "user", "content": text, "created_at": created}, path=path)
        assert reply.status_code == 201, reply.content
        return reply.json()["conversation_id"]

    # The default 30 minutes: two minutes apart is the same conversation.
    assert at(0, "one", "s-a") == at(2, "two", "s-a")
    patch(acme, {"conversation_timeout_minutes": 1})
    first = at(0, "one", "s-b")
    assert at(2, "two", "s-b") != first
    listed = acme.client.get("/api/v1/users/alice/conversations", {"session_id": "s-b"}).json()
    assert [c["message_count"] for c in listed["conversations"]] == [1, 1]


def test_max_history_tokens_caps_the_history_text(acme) -> None:
    for session in ("s-old", "s-new"):
        capture(acme, {"role": "user", "content": f"Notes of {session}. " * 10},
                path=f"/api/v1/users/alice/sessions/{session}/messages")
    full = acme.client.get("/api/v1/users/alice/history").json()
    assert "left out" not in full["text"] and len(full["conversations"]) == 2
    patch(acme, {"max_history_tokens": 100})  # 400 characters: one block of about 270
    capped = acme.client.get("/api/v1/users/alice/history").json()
    assert "Notes of s-new." in capped["text"] and "Notes of s-old." not in capped["text"]
    assert "- 1 older conversations left out\n</conversation_history>" in capped["text"]
    patch(acme, {"limits": {"max_history_tokens": None}})
    assert acme.client.get("/api/v1/users/alice/history").json()["text"] == full["text"]
