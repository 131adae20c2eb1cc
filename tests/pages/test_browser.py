"""What a person and an admin click, in Debian's Chromium against the live server.

The agent's side is the real API over HTTP (the memory tool with acme's key), so each test
shows a page change reaching the API, or an API change reaching the page.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from memoryhub.models import MemoryDocument
from tenants.context import tenant_context
from tests.pages.browser import Api, shot
from tests.pages.conftest import PASSWORD, person, person_url

# live_server makes every test here transactional. "migrate" is listed so the flush after each
# test (tests/conftest.py, on the owner connection) is allowed to run: pytest-django's live
# server helper holds the test's database restrictions until after that flush.
pytestmark = [pytest.mark.browser,
              pytest.mark.django_db(transaction=True)]


@pytest.fixture
def api(acme, live_server) -> Api:
    return Api(live_server.url, acme.key)


@pytest.fixture
def alice_page(pages, api, acme_team, globex, live_server):
    """alice's notes, written by the agent; her page opened through a portal link."""
    api.tool("alice", command="create", path="/memories/notes/diet.md",
             file_text="Vegetarian.\nNo nuts.\n", description="Diet")
    api.tool("alice", command="create", path="/memories/todo.md", file_text="buy milk\n",
             session_id="s-1", scope="session")
    Api(live_server.url, globex.key).tool("alice", command="create", path="/memories/g.md",
                                          file_text="GLOBEX ONLY")
    page = pages.new()
    page.goto(api.portal_link("alice"))
    expect(page.get_by_role("heading", name="What the AI remembers")).to_be_visible()
    return page


def _open(page, path: str) -> None:
    page.get_by_role("link", name=path).click()
    expect(page.locator("pre.content").first).to_be_visible()


def test_sign_in_and_edit_what_the_agent_wrote(pages, api, acme_team, live_server) -> None:
    api.tool("alice", command="create", path="/memories/notes/diet.md",
             file_text="Vegetarian.\n", description="Diet")
    page = pages.new()
    page.goto("/")
    shot(page, "sign-in")
    page.get_by_label("Email").fill("member@acme.test")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Welcome")).to_be_visible()
    # The app hands the signed-in person a portal link: asked, they link alice to the account.
    page.goto(api.portal_link("alice"))
    page.get_by_role("button", name="Link this memory to your account member@acme.test").click()
    expect(page.get_by_text("linked to your account")).to_be_visible()
    _open(page, "/notes/diet.md")
    expect(page.locator("pre.content")).to_have_text("Vegetarian.\n")
    page.get_by_role("link", name="Edit").click()
    content = page.get_by_label("Content", exact=True)
    expect(content).to_be_focused()  # focus moves into the form the swap brought in
    content.fill("Vegan since 2026.\n")
    page.get_by_label("Description").fill("Diet (corrected)")
    url_before = page.url
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#notice")).to_contain_text("Saved /notes/diet.md.")
    assert page.url == url_before  # htmx swapped the document in place, no navigation
    expect(page.locator("pre.content")).to_have_text("Vegan since 2026.\n")
    index = api.index("alice")
    line = next(x for x in index["text"].splitlines() if "/notes/diet.md" in x)
    assert "(global, 18 bytes)" in line and "[edited by the user]" in line
    assert "Diet (corrected)" in line
    viewed = api.tool("alice", command="view", path="/memories/notes/diet.md")["content"]
    assert "\tVegan since 2026." in viewed
    shot(page, "person-page-edited")
    # Signed out and back: the page is listed on the home page.
    page.get_by_role("button", name="Sign out").click()
    page.goto("/")
    page.get_by_label("Email").fill("member@acme.test")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("link", name="Acme")).to_be_visible()
    shot(page, "home")


def test_a_stale_edit_is_refused_and_nothing_is_overwritten(alice_page, pages, api, acme) -> None:
    page = alice_page
    with tenant_context(acme.tenant.id):
        document = MemoryDocument.objects.select_related("end_user").get(
            end_user__user_id="alice", path="/notes/diet.md")
    # The refused save answers 409 with the document as it is now.
    pages.expect_failed_load(409, person_url(document.end_user, "web:document_edit",
                                             document_id=document.pk))
    _open(page, "/notes/diet.md")
    page.get_by_role("link", name="Edit").click()
    page.get_by_label("Content", exact=True).fill("My version.\n")
    # Meanwhile the agent changes the document.
    changed = api.tool("alice", command="str_replace", path="/memories/notes/diet.md",
                       old_str="Vegetarian.", new_str="Pescatarian.")
    assert not changed["is_error"], changed
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("alert")).to_contain_text("changed after you opened it")
    expect(page.get_by_label("Content", exact=True)).to_have_value("Pescatarian.\nNo nuts.\n")
    expect(page.locator(".attempted pre")).to_have_text("My version.\n")
    assert "[edited by the user]" not in api.index("alice")["text"]
    shot(page, "person-page-stale-edit")


def test_delete_a_document_then_forget_everything(alice_page, api, acme) -> None:
    page = alice_page
    shot(page, "person-page")
    _open(page, "/notes/diet.md")
    page.get_by_text("Delete…").click()
    page.get_by_role("button", name="Yes, delete it").click()
    expect(page.locator("#notice")).to_contain_text("Deleted /notes/diet.md.")
    expect(page.get_by_role("link", name="/notes/diet.md")).to_have_count(0)
    assert "/notes/diet.md" not in api.index("alice", session_id="s-1")["text"]
    assert "/todo.md" in api.index("alice", session_id="s-1")["text"]
    page.get_by_label("Type FORGET to confirm").fill("FORGET")
    page.get_by_role("button", name="Forget everything").click()
    expect(page.get_by_role("heading", name="Everything was forgotten")).to_be_visible()
    assert api.index("alice", session_id="s-1")["entries"] == []
    with tenant_context(acme.tenant.pk):
        assert not MemoryDocument.objects.exists()


def test_the_person_turns_memory_off(alice_page, api) -> None:
    page = alice_page
    page.get_by_role("button", name="Turn memory off").click()
    expect(page.get_by_role("heading", name="Memory is off")).to_be_visible()
    expect(page.get_by_role("button", name="Turn memory on")).to_be_focused()
    index = api.index("alice")
    assert index["enabled"] is False and index["text"] == ""
    refused = api.tool("alice", command="view", path="/memories")
    assert refused["is_error"] and refused["content"].startswith("Error: memory is disabled")


def test_the_person_page_on_a_phone(pages, api, acme) -> None:
    api.tool("bob", command="create", path="/memories/notes/very/long/path/name/for/a/phone.md",
             file_text="x" * 300, description="A long description that has to wrap on a phone")
    page = pages.new(phone=True)
    page.goto(api.portal_link("bob"))
    _open(page, "/notes/very/long/path/name/for/a/phone.md")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390  # nothing forces sideways scrolling
    shot(page, "person-page-phone")


def test_a_portal_link_works_once(pages, api) -> None:
    url = api.portal_link("carol")
    pages.expect_failed_load(410, urlsplit(url).path)
    pages.expect_failed_load(404, "/t/acme/")
    first = pages.new()
    first.goto(url)
    expect(first.get_by_role("heading", name="What the AI remembers")).to_be_visible()
    expect(first.get_by_text("Nothing is stored about you.")).to_be_visible()
    second = pages.new()
    response = second.goto(url)
    assert response.status == 410
    expect(second.get_by_role("heading", name="This link no longer works")).to_be_visible()
    shot(second, "portal-link-used")
    # The portal session reaches nothing else.
    assert first.goto("/t/acme/").status == 404


def test_an_admin_changes_a_limit_and_the_api_enforces_it(pages, api, acme_team) -> None:
    pages.expect_failed_load(422, "/t/acme/settings")  # the refused value, shown with its reason
    page = pages.new(user=acme_team.admin)
    page.goto("/t/acme/")
    page.get_by_role("link", name="Settings").click()
    page.get_by_label("Largest document (bytes)").fill("0")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator(".errorlist").first).to_contain_text("greater than or equal to 1")
    page.get_by_label("Largest document (bytes)").fill("50")
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_text("Settings saved")).to_be_visible()
    shot(page, "tenant-settings")
    refused = api.tool("dave", command="create", path="/memories/big.md", file_text="x" * 60)
    assert refused["is_error"] and "condense" in refused["content"]
    assert not api.tool("dave", command="create", path="/memories/ok.md", file_text="x" * 40)[
        "is_error"]
    page.get_by_role("link", name="Audit log").click()
    expect(page.get_by_text("tenant.settings_changed")).to_be_visible()
    shot(page, "tenant-audit")
    page.get_by_role("link", name="Overview").click()
    expect(page.get_by_role("cell", name="created")).to_be_visible()  # dave's write
    shot(page, "tenant-overview")
    page.get_by_role("link", name="End users").click()
    page.get_by_label("Search by user id").fill("dav")
    expect(page.locator("#results")).to_contain_text("dave")
    shot(page, "tenant-end-users")



def test_saving_the_settings_page_keeps_what_changed_since_it_was_opened(
        pages, api, acme_team) -> None:
    """Another admin, or a deploy script through the API, changes a limit while the page is
    open; saving the page with another edit put the old limit back, unseen."""
    page = pages.new(user=acme_team.admin)
    page.goto("/t/acme/settings")
    expect(page.get_by_label("Largest document (bytes)")).to_have_value("16384")
    assert api.http.patch("/tenant", json={"limits": {"max_document_bytes": 100},
                                           "capture": {"redact": ["a+b", "c"]}}).status_code == 200
    page.get_by_label("Name").fill("Acme Corp")
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_text("Settings saved")).to_be_visible()
    settings = api.http.get("/tenant").json()
    assert settings["name"] == "Acme Corp"
    assert settings["limits"]["max_document_bytes"] == 100
    assert settings["capture"]["redact"] == ["a+b", "c"]
    expect(page.get_by_label("Largest document (bytes)")).to_have_value("100")
    page.get_by_label("Largest document (bytes)").fill("")  # blank still switches it off
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_text("Settings saved")).to_be_visible()
    assert api.http.get("/tenant").json()["limits"]["max_document_bytes"] is None

def test_an_admin_disables_a_profile_and_the_index_turns_off(pages, api, acme_team) -> None:
    api.tool("erin", command="create", path="/memories/recipes.md", file_text="soup",
             scope="profile", profile="cooking")
    assert api.index("erin", profile="cooking")["enabled"] is True
    page = pages.new(user=acme_team.owner)
    page.goto("/t/acme/profiles")
    page.get_by_label("Profile name").fill("cooking")
    page.get_by_role("button", name="Add profile").click()
    page.get_by_role("button", name="Disable cooking").click()
    expect(page.get_by_text("Profile cooking is disabled.")).to_be_visible()
    shot(page, "tenant-profiles")
    assert api.index("erin", profile="cooking") == {
        "enabled": False, "text": "", "entries": [], "omitted": 0}
    assert api.index("erin")["enabled"] is True  # other conversations keep memory


def test_an_admin_creates_a_key_that_works_on_the_api(pages, acme_team, live_server) -> None:
    page = pages.new(user=acme_team.admin)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto("/t/acme/keys")
    page.get_by_label("Key name").fill("support bot")
    page.get_by_role("button", name="Create key").click()
    secret = page.locator("#new-key-secret").inner_text()
    assert re.fullmatch(r"mh_\d+_[a-z0-9]{8}_\S+", secret)
    page.get_by_role("button", name="Copy").click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == secret
    shot(page, "tenant-keys")
    new_key = Api(live_server.url, secret)
    assert new_key.tool("frank", command="create", path="/memories/a.md", file_text="hi")[
        "content"] == "File created successfully at: /memories/a.md"
    page.reload()
    assert secret not in page.content()  # shown once
    expect(page.get_by_role("row", name=re.compile("support bot"))).to_contain_text("memory")



def test_an_admin_binds_a_key_to_someone_who_has_no_memory_yet(pages, api, acme_team,
                                                                live_server) -> None:
    """The MCP client of a person set up before their first conversation: the people page
    lists only those who have memory, so the keys page takes the user id, as the API does."""
    pages.expect_failed_load(422, "/t/acme/keys")  # the refused combination, with its reason
    page = pages.new(user=acme_team.admin)
    page.goto("/t/acme/keys")
    page.get_by_label("Key name").fill("gina's laptop")
    page.get_by_label("admin: change the tenant's settings").check()
    page.get_by_label("Bound to end user (optional)").fill("gina")
    page.get_by_role("button", name="Create key").click()
    expect(page.get_by_text("cannot have the admin permission")).to_be_visible()
    expect(page.get_by_label("Bound to end user (optional)")).to_have_value("gina")
    page.get_by_label("admin: change the tenant's settings").uncheck()
    page.get_by_role("button", name="Create key").click()
    secret = page.locator("#new-key-secret").inner_text()
    expect(page.get_by_role("row", name=re.compile("gina's laptop"))).to_contain_text("gina")
    bound = Api(live_server.url, secret)
    assert not bound.tool("gina", command="create", path="/memories/a.md", file_text="hi")[
        "is_error"]
    assert bound.http.get("/users/alice/documents/global/a.md").status_code == 404
    assert [u["user_id"] for u in bound.http.get("/users").json()["users"]] == ["gina"]

def test_members_page_and_another_tenants_pages_are_404(pages, acme_team, globex_team) -> None:
    page = pages.new(user=acme_team.owner, phone=True)
    page.goto("/t/acme/members")
    page.get_by_label("Email address").fill("newcomer@acme.test")
    page.get_by_role("button", name="Send invitation").click()
    expect(page.get_by_role("heading", name="Invitation sent to newcomer@acme.test")).to_be_visible()
    shot(page, "tenant-members-phone")
    for url in ("/t/globex/", "/t/globex/settings", "/t/globex/keys"):
        pages.expect_failed_load(404, url)
        response = page.goto(url)
        assert response.status == 404
        expect(page.get_by_role("heading", name="Not found")).to_be_visible()


def _overflow(page) -> int:
    """How far the page is wider than the window (0: nothing sticks out sideways)."""
    return page.evaluate("document.documentElement.scrollWidth"
                         " - document.documentElement.clientWidth")


@pytest.mark.parametrize("phone", [False, True], ids=["desktop", "phone"])
def test_long_unbroken_text_wraps_instead_of_widening_the_page(pages, api, acme_team,
                                                               phone) -> None:
    user_id = "u" * 128
    api.tool(user_id, command="create", path="/memories/n.md", file_text="x\n",
             description="D" * 200)
    fact = api.http.post(f"/users/{user_id}/facts", json={"content": "F" * 1900})
    assert fact.status_code == 201, fact.text
    page = pages.new(phone=phone)
    page.goto(api.portal_link(user_id))
    expect(page.locator(".fact-content")).to_be_visible()
    assert _overflow(page) == 0
    page.get_by_role("link", name="Edit").last.click()  # the fact's
    page.get_by_role("button", name="Save").click()  # its notice repeats the fact
    expect(page.locator("#notice")).to_contain_text("Saved: FFF")
    assert _overflow(page) == 0
    admin = pages.new(user=acme_team.admin, phone=phone)  # the dashboard lists the user id
    admin.goto("/t/acme/people")
    expect(admin.get_by_text(user_id).first).to_be_visible()
    assert _overflow(admin) == 0


def test_an_edit_in_progress_survives_a_delete_elsewhere_in_the_list(alice_page, api) -> None:
    """Deleting another note (or a session's memory) replaces the whole list: the note being
    edited stays open, with what the person typed, even what they typed while the delete was
    on its way, and the caret where it was."""
    page = alice_page
    api.tool("alice", command="create", path="/memories/b.md", file_text="bee\n")
    page.reload()
    _open(page, "/notes/diet.md")
    page.get_by_role("link", name="Edit").click()
    content = page.get_by_label("Content", exact=True)
    content.fill("Vegan, typed and not saved yet.\n")
    page.get_by_label("Description").fill("Half-typed description")
    # Deleting /b.md: the answer is held until the person is typing in the note again.
    held: list = []
    page.route("**/doc/*/delete", lambda route: held.append(route))
    page.get_by_role("link", name="/b.md").click()
    page.locator("#memory-list li", has_text="/b.md").get_by_text("Delete…").click()
    page.get_by_role("button", name="Yes, delete it").click()
    while not held:  # the route's handler runs while Playwright waits for something
        page.wait_for_timeout(20)
    content.press("End")
    content.type(" More.")
    held[0].continue_()
    expect(page.locator("#notice")).to_contain_text("Deleted /b.md.")
    expect(page.get_by_role("link", name="/b.md")).to_have_count(0)
    expect(content).to_have_value("Vegan, typed and not saved yet.\n More.")
    expect(page.get_by_label("Description")).to_have_value("Half-typed description")
    expect(content).to_be_focused()
    # Deleting a session's memory too, then the kept form still saves.
    page.get_by_text("Delete this session's memory…").click()
    page.get_by_role("button", name="Yes, delete this session's memory").click()
    expect(page.locator("#notice")).to_contain_text("Deleted the memory of session s-1")
    expect(content).to_have_value("Vegan, typed and not saved yet.\n More.")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#notice")).to_contain_text("Saved /notes/diet.md.")
    viewed = api.tool("alice", command="view", path="/memories/notes/diet.md")["content"]
    assert "\tVegan, typed and not saved yet." in viewed and "\t More." in viewed


def test_back_never_shows_what_was_deleted_or_forgotten(pages, api, acme_team, live_server) -> None:
    """The person's pages are not kept by the browser: after a delete on the page, or after
    forgetting everything, going away and coming Back shows the page as it is now, not the
    copy the browser loaded first (the same account's session, so nothing else changed)."""
    person(acme_team.tenant, "alice", account=acme_team.member)
    api.tool("alice", command="create", path="/memories/notes/diet.md", file_text="Vegetarian.\n")
    api.tool("alice", command="create", path="/memories/todo.md", file_text="buy milk\n")
    page = pages.new(user=acme_team.member)
    page.goto("/")
    page.locator("#memory-heading + p + ul").get_by_role("link", name="Acme").click()
    mine = urlsplit(page.url).path
    _open(page, "/notes/diet.md")
    page.get_by_text("Delete…").click()
    page.get_by_role("button", name="Yes, delete it").click()
    expect(page.locator("#notice")).to_contain_text("Deleted /notes/diet.md.")
    page.goto("/")
    page.go_back()
    expect(page.get_by_role("link", name="/todo.md")).to_be_visible()
    expect(page.get_by_role("link", name="/notes/diet.md")).to_have_count(0)

    page.get_by_label("Type FORGET to confirm").fill("FORGET")
    page.get_by_role("button", name="Forget everything").click()
    expect(page.get_by_role("heading", name="Everything was forgotten")).to_be_visible()
    pages.expect_failed_load(404, mine)  # the person is gone: their page with them
    page.go_back()
    expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    expect(page.get_by_text("/todo.md")).to_have_count(0)


def test_a_save_while_memory_is_off_says_what_to_do_and_keeps_the_text(alice_page, pages, api,
                                                                       acme) -> None:
    """The refusal the service gives the model ("continue without reading or saving
    memories") is not for the person: they read why and what to do, their text kept; turning
    memory on, the same form saves."""
    page = alice_page
    with tenant_context(acme.tenant.id):
        document = MemoryDocument.objects.select_related("end_user").get(path="/notes/diet.md")
    pages.expect_failed_load(422, person_url(document.end_user, "web:document_edit",
                                             document_id=document.pk))
    page.get_by_role("button", name="Turn memory off").click()
    expect(page.get_by_role("heading", name="Memory is off")).to_be_visible()
    _open(page, "/notes/diet.md")
    page.get_by_role("link", name="Edit").click()
    page.get_by_label("Content", exact=True).fill("Vegan.\n")
    page.get_by_role("button", name="Save").click()
    alert = page.locator("#memory-list").get_by_role("alert")
    expect(alert).to_have_text("Memory is off, so your notes cannot be changed: turn memory on "
                               "to save this text, or delete the note.")
    expect(page.get_by_label("Content", exact=True)).to_have_value("Vegan.\n")
    page.get_by_role("button", name="Turn memory on").click()
    expect(page.get_by_role("heading", name="Memory is on")).to_be_visible()
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#notice")).to_contain_text("Saved /notes/diet.md.")
    assert "\tVegan." in api.tool("alice", command="view", path="/memories/notes/diet.md")["content"]


def test_a_refused_forget_shows_why_where_the_person_is(alice_page, pages, api, acme) -> None:
    """A confirmation word other than FORGET comes back as the whole page: focus goes to the
    field with its message (a long page is not left at its top, the message out of sight),
    the typed word kept, and nothing is forgotten."""
    page = alice_page
    for n in range(12):  # a page taller than the window
        api.tool("alice", command="create", path=f"/memories/n{n:02}.md", file_text="x\n")
    page.reload()
    with tenant_context(acme.tenant.id):
        mine = person_url(MemoryDocument.objects.select_related("end_user")
                          .filter(path="/todo.md").get().end_user, "web:forget")
    pages.expect_failed_load(422, mine)
    field = page.get_by_label("Type FORGET to confirm")
    field.fill("forget")
    page.get_by_role("button", name="Forget everything").click()
    expect(page.get_by_text("Type the word FORGET in capitals to confirm.")).to_be_in_viewport()
    expect(field).to_be_focused()
    expect(field).to_have_value("forget")
    assert len(api.index("alice", session_id="s-1")["entries"]) == 14
