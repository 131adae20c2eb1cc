"""Credential detection: secrets are refused, ordinary notes are not.

Sample secrets are assembled from pieces so that this file does not itself look like a leak
to secret scanners; none of them is real.
"""

from __future__ import annotations

import re

import pytest

from memoryhub import credentials
from memoryhub.credentials import (
    DETECTORS,
    credential_message,
    find_credential,
    register_detector,
)
from tests.domain.backtracking import backtracking_risks

ALNUM = "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY"  # 32 mixed characters


def _body(length: int) -> str:
    return (ALNUM * (length // len(ALNUM) + 1))[:length]


SECRETS = {
    "anthropic_api_key": "sk-ant-" + "api03-" + _body(86) + "-" + _body(6) + "AA",
    "openai_legacy": "sk-" + _body(48),
    "openai_project": "sk-" + "proj-" + _body(60) + "_" + _body(60),
    "aws_access_key_id": "AKIA" + "IOSFODNN7EXAMPLE",
    "aws_temporary": "ASIA" + "Y34FZKBOKMUTVV7A",
    "google_api_key": "AIza" + "SyD-" + _body(31),
    "github_classic": "ghp" + "_" + _body(36),
    "github_oauth": "gho" + "_" + _body(36),
    "github_app_user": "ghu" + "_" + _body(36),
    "github_app_server": "ghs" + "_" + _body(36),
    "github_refresh": "ghr" + "_" + _body(36),
    "github_fine_grained": "github" + "_pat_" + "11ABCDEFG0" + _body(12) + "_" + _body(59),
    "slack_bot": "xoxb" + "-123456789012-1234567890123-" + _body(24),
    "slack_user": "xoxp" + "-123456789012-123456789012-123456789012-" + _body(32),
    "slack_webhook": "https://hooks.slack.com/services/" + "T00000000/B00000000/" + _body(24),
    "slack_refresh": "xoxe" + "-1-" + _body(140),
    "slack_app": "xapp" + "-1-A0123456789-1234567890123-" + "0f" * 32,
    "jwt": "eyJ"
    + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "pem_rsa": "-----BEGIN "
    + "RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA...\n-----END RSA PRIVATE KEY-----",
    "pem_pkcs8": "-----BEGIN " + "PRIVATE KEY-----\nMIIE...",
    "pem_openssh": "-----BEGIN " + "OPENSSH PRIVATE KEY-----",
    "pem_encrypted": "-----BEGIN " + "ENCRYPTED PRIVATE KEY-----",
    "pem_pgp": "-----BEGIN " + "PGP PRIVATE KEY BLOCK-----",
    "postgres_url": "postgres://app:" + "s3cr3t-pw@db.internal:5432/app",
    "redis_url": "redis://default:" + "hunter2@cache:6379/0",
    "https_basic_auth": "https://alice:" + "Tr0ub4dor&3@example.com/path",
    "redis_url_no_user": "redis://:" + "S3cretPassw0rd@cache:6379/0",
    "ado_net": "Server=db;Database=app;User Id=sa;" + "Password=S3cretPassw0rd;",
    "libpq": "host=db dbname=app user=admin " + "password=S3cretPassw0rd",
    "jdbc_query": "jdbc:postgresql://db:5432/app?user=admin&" + "password=S3cretPassw0rd",
    "dotenv": "DB_" + "PASSWORD=hunter22",
    "memoryhub_api_key": "mh_" + "ab12cd34_" + _body(43),
}

EXPECTED_NAME = {
    "anthropic_api_key": "anthropic_api_key",
    "openai_legacy": "openai_api_key",
    "openai_project": "openai_api_key",
    "aws_access_key_id": "aws_access_key_id",
    "aws_temporary": "aws_access_key_id",
    "google_api_key": "google_api_key",
    "github_classic": "github_token",
    "github_oauth": "github_token",
    "github_app_user": "github_token",
    "github_app_server": "github_token",
    "github_refresh": "github_token",
    "github_fine_grained": "github_token",
    "slack_bot": "slack_token",
    "slack_user": "slack_token",
    "slack_webhook": "slack_webhook",
    "slack_refresh": "slack_token",
    "slack_app": "slack_app_token",
    "jwt": "jwt",
    "pem_rsa": "pem_private_key",
    "pem_pkcs8": "pem_private_key",
    "pem_openssh": "pem_private_key",
    "pem_encrypted": "pem_private_key",
    "pem_pgp": "pem_private_key",
    "postgres_url": "connection_string_password",
    "redis_url": "connection_string_password",
    "https_basic_auth": "connection_string_password",
    "redis_url_no_user": "connection_string_password",
    "ado_net": "connection_string_password_field",
    "libpq": "connection_string_password_field",
    "jdbc_query": "connection_string_password_field",
    "dotenv": "connection_string_password_field",
    "memoryhub_api_key": "memoryhub_api_key",
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_detects_secret_alone_and_inside_prose(kind: str) -> None:
    secret = SECRETS[kind]
    assert find_credential(secret) == EXPECTED_NAME[kind]
    assert find_credential(f"My key is {secret} please remember it.") == EXPECTED_NAME[kind]
    assert find_credential(f'config = {{"key": "{secret}"}}') == EXPECTED_NAME[kind]


@pytest.mark.parametrize(("text", "name"), [
    ("my key is sk-ant-api03-abc123", "anthropic_api_key"),  # short, made-up or truncated
    ("sk-ant-oat01-x7Y8z9w0", "anthropic_api_key"),
    ("OPENAI_API_KEY=sk-proj-abc123def456", "openai_api_key"),
    ("sk-svcacct-9f8e7d6c5b", "openai_api_key"),
])
def test_a_short_key_after_a_prefix_only_keys_have_is_refused(text: str, name: str) -> None:
    assert find_credential(text) == name


@pytest.mark.parametrize("text", [
    "Anthropic keys start with sk-ant- and OpenAI project keys with sk-proj-.",
    "sk-ant-api-keys", "sk-proj-roadmap", "sk-ant-12", "sk-admin-panel-v",
])
def test_a_keys_prefix_in_prose_passes(text: str) -> None:
    assert find_credential(text) is None


def test_anthropic_is_named_before_the_generic_sk_pattern() -> None:
    assert find_credential(SECRETS["anthropic_api_key"]) == "anthropic_api_key"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "She loves sk-ills like sk-iing and sk-ating.",
        "Add it to the task-list and the desk-lamp order.",
        "Use the risk-assessment-checklist-for-the-whole-quarter template.",  # long, no digit
        "sk-short1",
        "The AKIA prefix marks AWS keys; AKIA123 is too short.",
        "Google keys start with AIza, like AIzaShort.",
        "ghp_ tokens are GitHub's; ghp_abc is not one.",
        "Slack tokens start xoxb-, e.g. xoxb-1-2.",
        "A JWT starts with eyJ and has three dot-separated parts.",
        "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.",  # unsigned: no secret in it
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq...",
        "-----BEGIN CERTIFICATE-----",
        "Visit https://example.com:8080/path?a=b@c or mailto:someone@example.com.",
        "postgres://app@db:5432/app (no password)",
        "postgres://app:****@db:5432/app",
        "postgres://app:xxx@db/app",
        "postgres://app:<password>@db/app",
        "postgres://app:${DB_PASSWORD}@db/app",
        "postgres://app:{password}@db/app",
        "postgres://app:$PGPASSWORD@db/app",
        "password=<password>", "Password=***;", "password=${DB_PASSWORD}", "pwd=%s",
        "password=$PGPASSWORD", "password=None", 'password=""', "reset password=yes",
        "password = getpass()", "connect(password=settings.DB_PASSWORD)",
        'connect(password=os.environ["PW"])', "The password field is required.",
        "Meeting at 10:30 with bob@example.com about http://intranet/wiki.",
        "mh_ keys look like mh_abcd1234_ followed by a secret.",
        "mh_ABCD1234_" + "x" * 40,  # lookup id must be lowercase
        "Vegetarian; prefers metric units; birthday 1990-04-12.",
        "The hash is 3f786850e387550fdab836ed7e6dc881de23001b.",
    ],
)
def test_ordinary_text_passes(text: str) -> None:
    assert find_credential(text) is None


def test_memoryhub_key_needs_32_secret_characters() -> None:
    assert find_credential("mh_ab12cd34_" + "A" * 31) is None
    assert find_credential("mh_ab12cd34_" + "A" * 32) == "memoryhub_api_key"
    assert find_credential("mh_ab12cd34_" + "-_" * 16) == "memoryhub_api_key"


def test_memoryhub_key_as_issued_with_its_tenant_id() -> None:
    # tenants.services.api_key_create issues mh_<tenant id>_<lookup id>_<secret>.
    assert find_credential("key mh_42_ab12cd34_" + "Zq-_" * 11) == "memoryhub_api_key"


def test_message() -> None:
    assert credential_message("github_token") == (
        "Error: the content looks like a credential (github_token); memory must not store "
        "secrets. Remove it and try again."
    )


def test_register_detector_extends_and_rejects_duplicates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(credentials, "DETECTORS", list(DETECTORS))
    detector = register_detector("acme_token", r"acme_[0-9a-f]{16}")
    assert detector.name == "acme_token"
    assert isinstance(detector.pattern, re.Pattern)
    assert find_credential("token acme_0123456789abcdef here") == "acme_token"
    with pytest.raises(ValueError):
        register_detector("acme_token", re.compile("x"))
    assert "acme_token" not in {d.name for d in DETECTORS}  # the real registry is untouched


def test_registry_order_and_names_are_unique() -> None:
    names = [d.name for d in DETECTORS]
    assert len(names) == len(set(names))
    assert names.index("anthropic_api_key") < names.index("openai_api_key")


# Speed on adversarial input is `make bench-credentials` (tests/benchmarks/bench_credentials.py);
# here, the shapes that would make it slow are looked for in each pattern's parse tree.
@pytest.mark.parametrize("detector", DETECTORS, ids=lambda d: d.name)
def test_no_detector_can_backtrack_catastrophically(detector) -> None:
    assert backtracking_risks(detector.pattern.pattern) == [], detector.pattern.pattern


@pytest.mark.parametrize("pattern", [
    r"(a+)+$", r"(?:x+x+)+y", r"(\w+\s?)+$", r"(.*,)*x", r"(?:[0-9]+_?)+x",  # nested repeats
    r"^(([a-z])+.)+[A-Z]([a-z])+$", r"(a*)*b", r"(a|)+b",  # ... and empty iterations
    r"(a|ab)*c", r"(?:x|[xy]z)+!",  # alternatives that begin alike, under a repeat
    r"\d+\d+x", r"\w+\s?\w+!",  # neighbouring repeats that eat the same characters
    r"(?=(a+)+b)",  # inside a lookaround too
])
def test_the_check_finds_each_shape_of_catastrophic_backtracking(pattern: str) -> None:
    assert backtracking_risks(pattern) != []


@pytest.mark.parametrize("pattern", [
    r"(?:-[a-z]+)+", r"(?:[A-Z0-9]+ )*KEY",  # each iteration begins or ends with a separator
    r"a+b+", r"[a-z]+@[a-z]+", r"(?:ab|cd)+", r"(?:\d{3}-)+",
    r"(?:a++)+", r"(?>a+)+",  # possessive and atomic: nothing is given back
])
def test_the_check_lets_unambiguous_shapes_pass(pattern: str) -> None:
    assert backtracking_risks(pattern) == []
