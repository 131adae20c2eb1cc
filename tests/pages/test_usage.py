"""The overview's usage charts: writes, recalls and stored bytes per UTC day over 30 days.

The figures are seeded through the API (the memory tool, the documents API, recall and the
turn context) and read back from the page: the bars' ``data-value`` and the figures table.
"""

from __future__ import annotations

import re
from datetime import timedelta

from django.utils import timezone

from memoryhub.models import UsageDay
from memoryhub.selectors.usage import usage_day
from memoryhub.tasks import usage_snapshot_all
from tenants.context import tenant_context
from tests.pages.conftest import signed_in

CREATE = {"command": "create", "path": "/memories/notes.md", "file_text": "likes tea\n"}


def tool(kit, user_id: str, **command) -> dict:
    response = kit.client.post(f"/api/v1/users/{user_id}/memory", command, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def recall(kit, user_id: str, query: str = "tea") -> None:
    response = kit.client.post(f"/api/v1/users/{user_id}/recall", {"query": query},
                               format="json")
    assert response.status_code == 200, response.content


def bars(html: str, chart: str) -> dict[str, int]:
    """day -> value of one chart's bars."""
    svg = re.search(rf'<svg class="bars {chart}".*?</svg>', html, re.S)
    assert svg, chart
    return {day: int(value) for day, value in
            re.findall(r'data-day="([\d-]+)" data-value="(\d+)"', svg.group(0))}


def figures(html: str) -> dict[str, list[str]]:
    """day -> [writes, recalls, stored] from the figures table."""
    rows = re.findall(r'<tr data-day="([\d-]+)">.*?<td class="num">(.*?)</td>'
                      r'<td class="num">(.*?)</td><td class="num">(.*?)</td></tr>', html, re.S)
    return {day: [writes, recalls, re.sub(r"<.*?>", "", stored).replace("\xa0", " ")]
            for day, writes, recalls, stored in rows}


def overview(team) -> str:
    response = signed_in(team.admin).get(f"/t/{team.tenant.slug}/")
    assert response.status_code == 200
    return response.content.decode()


def test_writes_and_recalls_of_today_are_counted_for_this_tenant_only(
    acme, globex, acme_team,
) -> None:
    tool(acme, "alice", **CREATE)
    tool(acme, "alice", command="str_replace", path="/memories/notes.md", old_str="tea",
         new_str="green tea")
    put = acme.client.put("/api/v1/users/bob/documents/global/b.md", {"content": "12345"},
                          format="json")
    assert put.status_code == 201
    # Neither a read nor a refused write is a write.
    tool(acme, "alice", command="view", path="/memories/notes.md")
    refused = tool(acme, "alice", command="create", path="/memories/notes.md", file_text="again")
    assert refused["is_error"]
    recall(acme, "alice")
    recall(acme, "nobody")  # a person never written for: still a recall
    context = acme.client.post("/api/v1/users/alice/context", {"query": "tea"}, format="json")
    assert context.status_code == 200
    no_query = acme.client.post("/api/v1/users/alice/context", {}, format="json")
    assert no_query.status_code == 200  # index only: no recall
    tool(globex, "carol", **CREATE)
    recall(globex, "carol")

    today = usage_day(timezone.now()).isoformat()
    html = overview(acme_team)
    assert bars(html, "writes")[today] == 3
    assert bars(html, "recalls")[today] == 3
    stored = len("likes green tea\n") + len("12345")
    assert bars(html, "stored")[today] == stored  # today's reading is live
    assert figures(html)[today] == ["3", "3", f"{stored} bytes"]
    stats = dict(re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", html))
    assert stats["Writes today"] == "3"


def test_forgetting_a_person_does_not_rewrite_the_count(acme, globex, acme_team) -> None:
    tool(acme, "alice", **CREATE)
    assert acme.client.delete("/api/v1/users/alice").status_code == 204
    today = usage_day(timezone.now()).isoformat()
    # The creation and the "forgotten" change: both happened, though alice's events are gone.
    assert bars(overview(acme_team), "writes")[today] == 2


def test_thirty_days_with_past_readings_and_gaps(acme, globex, acme_team) -> None:
    today = usage_day(timezone.now())
    with tenant_context(acme.tenant.id):
        UsageDay.objects.create(day=today - timedelta(days=29), writes=7, recalls=70,
                                stored_bytes=2048)
        UsageDay.objects.create(day=today - timedelta(days=3), writes=1, recalls=0)
        UsageDay.objects.create(day=today - timedelta(days=30), writes=99, recalls=99,
                                stored_bytes=1)  # 31 days ago: off the chart
    with tenant_context(globex.tenant.id):
        UsageDay.objects.create(day=today - timedelta(days=1), writes=55, recalls=55,
                                stored_bytes=55)
    html = overview(acme_team)
    writes, recalls, stored = (bars(html, name) for name in ("writes", "recalls", "stored"))
    days = [(today - timedelta(days=n)).isoformat() for n in range(29, -1, -1)]
    assert list(writes) == days and list(recalls) == days
    assert writes[days[0]] == 7 and writes[days[-4]] == 1 and sum(writes.values()) == 8
    assert recalls[days[0]] == 70 and sum(recalls.values()) == 70
    # Stored bytes are readings: a day without one has no bar, today is read live (nothing).
    assert stored == {days[0]: 2048, days[-1]: 0}
    table = figures(html)
    assert table[days[0]] == ["7", "70", "2.0 KB"]
    assert table[days[-4]] == ["1", "0", "no reading"]
    assert table[days[-2]] == ["0", "0", "no reading"]  # globex's day is not acme's
    # The tallest bar fills the chart below its label (100 - 14); the others scale with it.
    heights = re.findall(r'height="([\d.]+)" data-day="([\d-]+)"', html)
    assert (("86.0", days[0]) in heights and ("12.29", days[-4]) in heights), heights[:3]


def test_the_hourly_reading_records_each_tenants_stored_bytes(acme, globex, acme_team) -> None:
    tool(acme, "alice", **CREATE)
    tool(globex, "carol", command="create", path="/memories/big.md", file_text="x" * 1000)
    assert usage_snapshot_all() >= 2
    today = usage_day(timezone.now())
    with tenant_context(acme.tenant.id):
        assert UsageDay.objects.get(day=today).stored_bytes == len("likes tea\n")
    with tenant_context(globex.tenant.id):
        assert UsageDay.objects.get(day=today).stored_bytes == 1000
    # A later reading of the same day replaces the earlier one.
    tool(acme, "alice", command="delete", path="/memories/notes.md")
    usage_snapshot_all()
    with tenant_context(acme.tenant.id):
        row = UsageDay.objects.get(day=today)
    assert (row.stored_bytes, row.writes) == (0, 2)
