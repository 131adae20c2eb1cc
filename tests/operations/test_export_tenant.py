"""``manage.py export_tenant``: everything the tenant holds as JSON lines, nothing of another
tenant, no secret, the API's shapes where the API has them, progress on stderr."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memoryhub.models import WebhookEndpoint
from memoryhub.selectors.tenant_export import KINDS, LEFT_OUT
from tenants.context import tenant_context
from tenants.managers import tenant_owned_models
from tenants.models import AuditEntry
from tests.operations.seed import ok, seed_every_table
from tests.webhooks.receiver import private_urls_allowed  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("private_urls_allowed")


def export(slug: str, *args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("export_tenant", slug, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_every_tenant_table_is_exported_or_left_out_for_a_reason() -> None:
    assert set(KINDS).isdisjoint(LEFT_OUT)
    assert set(KINDS) | set(LEFT_OUT) == set(tenant_owned_models())


def test_the_export_holds_everything_of_the_tenant_and_nothing_of_another(
    acme, globex, tmp_path,
) -> None:
    seed_every_table(acme, "acmemark")
    seed_every_table(globex, "globexmark")
    # bob is forgotten: his last event names no one the tenant still holds.
    ok(acme.client.post("/api/v1/users/bob/memory", {"command": "create", "path": "/memories/b.md",
                                                    "file_text": "b"}, format="json"))
    ok(acme.client.delete("/api/v1/users/bob"), 204)
    with tenant_context(acme.tenant.id):
        secret = WebhookEndpoint.objects.get().secret
        audit_rows = AuditEntry.objects.count()
    target = tmp_path / "acme.jsonl"
    out, err = export("acme", "--output", str(target))
    assert out == "" and not (tmp_path / "acme.jsonl.partial").exists()
    text = target.read_text()
    assert "acmemark" in text and "globexmark" not in text
    # A key is mh_<tenant>_<prefix>_<secret>, and the secret's own alphabet holds "_".
    key_secret = acme.key.split("_", 3)[3]
    assert key_secret not in text and secret not in text  # no secret leaves

    header, tenant, *records, end = (json.loads(line) for line in text.splitlines())
    kinds = Counter(record["kind"] for record in records)
    assert (header["kind"], tenant["kind"], end["kind"]) == ("export", "tenant", "end")
    assert header["data"]["slug"] == "acme" and header["data"]["version"] == 1
    assert header["data"]["counts"] == end["data"]["counts"] == {**kinds, "tenant": 1}
    assert set(kinds) == set(KINDS.values()) | {"event"}
    assert kinds["audit"] == audit_rows and kinds["api_key"] == 2 and kinds["member"] == 1
    # The API's own shapes: the tenant's settings, and each person's export, exactly.
    assert tenant["data"] == acme.client.get("/api/v1/tenant").json()
    [alice] = [record["data"] for record in records if record["kind"] == "end_user"]
    assert alice == acme.client.get("/api/v1/users/alice/export").json()
    assert alice["conversations"][0]["messages"][0]["content"] == "I am acmemark."
    # Every event once: alice's in her record, bob's "forgotten" on its own.
    [forgotten] = [record["data"] for record in records if record["kind"] == "event"]
    assert (forgotten["user_id"], forgotten["data"]["change"]) == ("bob", "forgotten")
    [key] = [r["data"] for r in records if r["kind"] == "api_key" and r["data"]["name"] == "full"]
    assert key["masked"].endswith("_…")
    assert "100%" in err and "Exported" in err
    with tenant_context(acme.tenant.id):
        [entry] = AuditEntry.objects.filter(action="tenant.exported")
    assert entry.data == {"records": sum(kinds.values()) + 1}


def test_to_stdout_with_progress_apart_and_gzipped(acme, globex, tmp_path) -> None:
    seed_every_table(acme, "acmemark")
    out, err = export("acme")
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[0]["kind"] == "export" and lines[-1]["kind"] == "end"
    assert "Exported" not in out and "Exported" in err
    target = tmp_path / "acme.jsonl.gz"
    export("acme", "-o", str(target))
    with gzip.open(target, "rt", encoding="utf-8") as stream:
        zipped = [json.loads(line) for line in stream]
    # The same records, and one more: the first export's own audit entry.
    more = Counter(line["kind"] for line in zipped) - Counter(line["kind"] for line in lines)
    assert more == Counter({"audit": 1})


def test_an_unknown_tenant_is_an_error(db) -> None:
    with pytest.raises(CommandError, match="No tenant 'nope'"):
        export("nope")


@pytest.mark.django_db(transaction=True)
def test_the_export_reads_one_snapshot_in_its_own_transaction(acme, globex) -> None:
    """Outside a test's transaction the export opens its own, REPEATABLE READ and read-only."""
    seed_every_table(acme, "acmemark")
    out, _ = export("acme")
    assert '"kind":"end_user"' in out and "globex" not in out.split("\n", 1)[1]


@pytest.mark.parametrize("where", ["a directory", "a missing directory", "nowhere"])
def test_an_output_that_cannot_be_written_is_refused_before_the_export(
    acme, tmp_path, where,
) -> None:
    """A directory was found only at the end, when the finished file was renamed onto it (the
    whole export thrown away, then IsADirectoryError), and an unwritable place was a
    traceback; both are a one-line error now, before anything is read or audited."""
    output = {"a directory": str(tmp_path), "nowhere": "",
              "a missing directory": str(tmp_path / "missing" / "acme.jsonl")}[where]
    with pytest.raises(CommandError, match="Cannot write the export") as refused:
        export("acme", "--output", output)
    assert output in str(refused.value)
    assert list(tmp_path.iterdir()) == [] and not (tmp_path.parent / f"{tmp_path.name}.partial"
                                                   ).exists()
    with tenant_context(acme.tenant.id):
        assert not AuditEntry.objects.filter(action="tenant.exported").exists()


def test_an_existing_file_is_replaced_only_with_force(acme, tmp_path) -> None:
    """An earlier export under the same name was silently replaced; now it is kept, with an
    error that says how to replace it."""
    target = tmp_path / "acme.jsonl"
    target.write_text("an earlier export\n")
    with pytest.raises(CommandError, match="exists: name another file, or add --force"):
        export("acme", "--output", str(target))
    assert target.read_text() == "an earlier export\n"
    with tenant_context(acme.tenant.id):
        assert not AuditEntry.objects.filter(action="tenant.exported").exists()
    export("acme", "--output", str(target), "--force")
    assert target.read_text().startswith('{"kind":"export"')
