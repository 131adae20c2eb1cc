"""The person's page, "What the AI remembers": every document, edit, delete, forget, switch,
and their conversations (newest first, paged; opened one at a time to read every message).

Reached by a portal session for this end user or by the account linked to it
(``person_page``). Writes go through the same services as the API, with actor ``user``, so
the same limits and content rules apply and their messages are shown as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial, wraps
from typing import Any
from uuid import UUID

from django.contrib import messages
from django.core.paginator import Page, Paginator
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import reswap, retarget

from memoryhub.errors import DocumentNotFound, MemoryDisabled, MemoryRefusal, VersionMismatch
from memoryhub.models import Actor, Conversation, EndUser, Fact, MemoryDocument
from memoryhub.selectors.conversations import (
    ConversationRun,
    conversation_find,
    conversation_run,
    conversations_with_messages,
    end_user_conversations,
)
from memoryhub.selectors.documents import end_user_find
from memoryhub.selectors.facts import fact_find
from memoryhub.selectors.people import end_user_export
from memoryhub.services.conversations import (
    ConversationNotFound,
    conversation_delete,
    conversation_summary_put,
)
from memoryhub.services.documents import document_put, document_remove
from memoryhub.services.facts import fact_delete, fact_update
from memoryhub.services.people import end_user_forget, end_user_memory_set, session_forget
from memoryhub.services.writer import Writer
from memoryhub.web.access import PersonAccess, person_page
from memoryhub.web.exports import export_json
from memoryhub.web.forms import (
    FORGET_WORD,
    ConversationPlaceForm,
    DocumentDeleteForm,
    DocumentEditForm,
    FactChangeForm,
    FactEditForm,
    ForgetForm,
    MemorySwitchForm,
    SessionDeleteForm,
    SummaryEditForm,
)
from memoryhub.web.http import HtmxHttpRequest
from memoryhub.web.partials import is_partial_request, render_page
from memoryhub.web.portal import portal_grant_end
from memoryhub.web.selectors import (
    end_user_document,
    end_user_memory,
    person_fact,
    person_facts,
)

TEMPLATE = "web/person.html"
STALE_MESSAGE = (
    "This document changed after you opened it, so your edit was not saved. "
    "The newer text is shown below; your text is kept underneath to copy from."
)
CONVERSATIONS_PAGE = 10
PREVIEW_MESSAGES = 2  # the list shows each conversation's first messages; opening shows all
MESSAGES_PAGE = 50


def _person_url(access: PersonAccess, name: str = "web:person", **kwargs: Any) -> str:
    return reverse(name, kwargs={"tenant_id": access.tenant.pk,
                                 "end_user_id": access.end_user.pk, **kwargs})


@dataclass(frozen=True)
class ConversationList:
    """The conversations section: a page of them (``page`` drives the pager), or one alone
    (``page`` None) when a conversation's own URL is opened without htmx. ``at`` is the
    number of the list's page the person is on, kept through opening, paging and deleting."""

    page: Page[Conversation] | None
    runs: list[ConversationRun]
    at: int


def _conversation_list(access: PersonAccess, page_number: int | str | None) -> ConversationList:
    """Three queries whatever the page: the count, the page, the first messages of each."""
    page = Paginator(end_user_conversations(end_user=access.end_user), CONVERSATIONS_PAGE)
    shown = page.get_page(page_number)  # a bad or too large number gives the first or last
    runs = conversations_with_messages(list(shown), first=PREVIEW_MESSAGES)
    return ConversationList(shown, runs, at=shown.number)


def _place(data: QueryDict) -> tuple[int, int]:
    """(the list's page, the first message's seq) from the request; 1 for what is missing or
    not a number."""
    form = ConversationPlaceForm(data)
    form.is_valid()
    return form.cleaned_data.get("page") or 1, form.cleaned_data.get("start") or 1


def _context(access: PersonAccess, *, conversations_at: int | str | None = None,
             facts_at: QueryDict | None = None, **extra: Any) -> dict[str, Any]:
    """``facts_at``: the query that names the facts' pages (``facts``, ``invalid``)."""
    end_user = access.end_user
    focus = extra.get("fact_focus")
    facts = partial(person_facts, end_user=end_user,
                    page_number=facts_at.get("facts") if facts_at else None,
                    invalid_page_number=facts_at.get("invalid") if facts_at else None,
                    showing=focus.fact if focus else None)
    return {
        "access": access,
        "tenant": access.tenant,
        "end_user": end_user,
        "person_url": _person_url(access),
        "groups": end_user_memory(end_user=end_user),
        "facts": SimpleLazyObject(facts),
        # Read only by renders that show the section (not by a document's partial).
        "conversation_list": SimpleLazyObject(partial(_conversation_list, access,
                                                      conversations_at)),
        "forget_word": FORGET_WORD,
        "forget_form": extra.pop("forget_form", None) or ForgetForm(),
        **extra,
    }


def _document(
    request: HtmxHttpRequest, access: PersonAccess, doc: MemoryDocument, *, state: str,
    status: int = 200, **extra: Any,
) -> HttpResponse:
    """One document in a state (summary, open, edit): its partial, or the page around it."""
    context = _context(access, doc=doc, focus=doc, state=state, **extra)
    return render_page(request, TEMPLATE, context, partials=["document", "notice"], status=status)


class _Gone(Exception):
    """The row an action addresses is not the person's (any more): deleted elsewhere after
    the page showed it, or never theirs, which must look the same. :func:`_answers_gone`
    turns it into the notice and the refreshed ``section`` without the stale item (htmx),
    or 404 (a plain request: the URL names nothing). ``kept`` is the text a Save carried,
    which must not be lost with the row."""

    def __init__(self, section: str, notice: str, *, error: bool = True,
                 kept: str | None = None) -> None:
        super().__init__(notice)
        self.section, self.notice, self.error, self.kept = section, notice, error, kept


DOCUMENT_GONE = "This document was deleted after the page showed it; nothing was changed."
# A Save that found its row deleted: the typed text stays under the notice, to copy.
EDIT_LOST = "This {} was deleted after you opened it; nothing was saved. Your text is below."
CONVERSATION_GONE = "This conversation was deleted after the page showed it."
FACT_GONE = "This fact was deleted after the page showed it; nothing was changed."


def _answers_gone(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @wraps(view)
    def wrapper(request: HtmxHttpRequest, access: PersonAccess, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, access, **kwargs)
        except _Gone as gone:
            if not is_partial_request(request) and gone.kept is None:
                raise Http404(gone.notice) from None
            at = _place(request.POST if request.method == "POST" else request.GET)[0]
            return _list_changed(request, access, gone.notice, error=gone.error,
                                 section=gone.section, conversations_at=at, kept=gone.kept)

    return wrapper


def _document_or_gone(access: PersonAccess, document_id: int, *,
                      notice: str = DOCUMENT_GONE, error: bool = True,
                      kept: str | None = None) -> MemoryDocument:
    doc = end_user_document(end_user=access.end_user, document_id=document_id)
    if doc is None:
        raise _Gone("memory-list", notice, error=error, kept=kept)
    return doc


# Where a plain request lands after a section changed (post/redirect/get).
SECTION_ANCHORS = {"memory-list": "", "facts": "#facts", "conversations": "#conversations"}


def _list_changed(request: HtmxHttpRequest, access: PersonAccess, notice: str,
                  *, error: bool = False, section: str = "memory-list",
                  conversations_at: int | None = None, kept: str | None = None,
                  also: tuple[str, ...] = ()) -> HttpResponse:
    """After a delete or a move: the refreshed ``section`` for htmx, or back to the page
    (post/redirect/get); the conversations come back at the page they were deleted from.
    ``also`` names sections the change reached too, refreshed out of band.

    The section replaces itself whatever the request targeted (a document's own item, for
    a Save that found the document gone): ``HX-Retarget`` and ``HX-Reswap`` say so. ``kept``
    is the text a refused Save carried, shown under the notice to copy; a plain request gets
    the page itself, since a redirect would lose it, as a 404: the row is not there (another
    person's is answered alike)."""
    if kept is not None or is_partial_request(request):
        context = _context(access, notice=notice, notice_error=error, notice_kept=kept,
                           conversations_at=conversations_at, out_of_band=also)
        if not is_partial_request(request):
            return render_page(request, TEMPLATE, context, status=404)
        response = render_page(request, TEMPLATE, context, partials=[section, *also, "notice"])
        return reswap(retarget(response, f"#{section}"), "outerHTML")
    (messages.error if error else messages.success)(request, notice)
    if section == "conversations" and conversations_at is not None:
        return redirect(f"{_person_url(access)}?page={conversations_at}#conversations")
    return redirect(f"{_person_url(access)}{SECTION_ANCHORS[section]}")


def _refused(request: HtmxHttpRequest, access: PersonAccess, notice: str) -> HttpResponse:
    """A request the page refuses as it is: the notice alone for htmx (what it targeted
    stays as it was: ``HX-Reswap: none``, the notice swapping out of band), else back to the
    page with the message."""
    if is_partial_request(request):
        context = _context(access, notice=notice, notice_error=True)
        return reswap(render_page(request, TEMPLATE, context, partials=["notice"], status=422),
                      "none")
    messages.error(request, notice)
    return redirect(_person_url(access))


@person_page
@require_GET
def page(request: HtmxHttpRequest, access: PersonAccess) -> HttpResponse:
    return render(request, TEMPLATE, _context(access, conversations_at=request.GET.get("page"),
                                              facts_at=request.GET))


@person_page
@require_GET
@_answers_gone
def document_open(request: HtmxHttpRequest, access: PersonAccess, document_id: int) -> HttpResponse:
    return _document(request, access, _document_or_gone(access, document_id), state="open")


@person_page
@require_GET
@_answers_gone
def document_summary(
    request: HtmxHttpRequest, access: PersonAccess, document_id: int
) -> HttpResponse:
    doc = _document_or_gone(access, document_id)
    if not is_partial_request(request):
        return redirect(f"{_person_url(access)}#doc-{doc.pk}")
    return _document(request, access, doc, state="summary")


@person_page
@require_http_methods(["GET", "POST"])
@_answers_gone
def document_edit(request: HtmxHttpRequest, access: PersonAccess, document_id: int) -> HttpResponse:
    # A Save on a document deleted meanwhile keeps the typed text on the page to copy.
    typed = request.POST.get("content", "") if request.method == "POST" else None
    doc = _document_or_gone(access, document_id,
                            notice=DOCUMENT_GONE if typed is None else EDIT_LOST.format("document"),
                            kept=typed)
    if request.method == "GET":
        form = DocumentEditForm(
            initial={"content": doc.content, "description": doc.description, "version": doc.version}
        )
        return _document(request, access, doc, state="edit", form=form)

    form = DocumentEditForm(request.POST)
    if not form.is_valid():
        return _document(request, access, doc, state="edit", form=form, status=422)
    data = form.cleaned_data
    try:
        saved, _ = document_put(
            writer=Writer(tenant=access.tenant, actor=Actor.USER), end_user=access.end_user,
            scope=doc.scope, scope_key=doc.scope_key, path=doc.path, content=data["content"],
            description=data["description"], expected_version=data["version"],
        )
    except VersionMismatch:
        return _stale(request, access, document_id, attempted=data["content"])
    except MemoryDisabled:
        form.add_error(None, _memory_off_message(access, doc))
        return _document(request, access, doc, state="edit", form=form, status=422)
    except MemoryRefusal as error:
        form.add_error(None, error.message)
        return _document(request, access, doc, state="edit", form=form, status=422)
    if not is_partial_request(request):
        messages.success(request, f"Saved {saved.path}.")
        return redirect(f"{_person_url(access)}#doc-{saved.pk}")
    return _document(request, access, saved, state="open", notice=f"Saved {saved.path}.")


def _memory_off_message(access: PersonAccess, doc: MemoryDocument) -> str:
    """Why a note's Save was refused with memory off, for the person: the service's text
    tells the model to carry on without memory."""
    if not access.end_user.memory_enabled:
        return ("Memory is off, so your notes cannot be changed: turn memory on to save this "
                "text, or delete the note.")
    if access.tenant.memory_enabled:  # then it is the note's profile that is switched off
        return (f"The app has switched memory off for the profile {doc.scope_key}, so its "
                "notes cannot be changed for now; you can still delete them.")
    return ("The app has switched memory off, so notes cannot be changed for now; you can "
            "still delete them.")


def _stale(request: HtmxHttpRequest, access: PersonAccess, document_id: int,
           *, attempted: str) -> HttpResponse:
    """Refuse a stale edit: nothing is written; the newer text comes back to edit instead."""
    newer = end_user_document(end_user=access.end_user, document_id=document_id)
    if newer is None:
        return _list_changed(request, access, EDIT_LOST.format("document"), error=True,
                             kept=attempted)
    form = DocumentEditForm(initial={"content": newer.content, "description": newer.description,
                                     "version": newer.version})
    return _document(request, access, newer, state="edit", form=form, stale=True,
                     stale_message=STALE_MESSAGE, attempted=attempted, status=409)


@person_page
@require_POST
@_answers_gone
def document_delete(
    request: HtmxHttpRequest, access: PersonAccess, document_id: int
) -> HttpResponse:
    doc = _document_or_gone(access, document_id, notice="This document was already deleted.",
                            error=False)
    form = DocumentDeleteForm(request.POST)
    version = form.cleaned_data["version"] if form.is_valid() else None
    try:
        document_remove(writer=Writer(tenant=access.tenant, actor=Actor.USER),
                        end_user=access.end_user, document=doc, expected_version=version)
    except DocumentNotFound:
        return _list_changed(request, access, f"{doc.path} was already deleted.")
    except VersionMismatch:
        return _list_changed(
            request, access,
            f"{doc.path} changed after you opened it and was not deleted. Check it again.",
            error=True,
        )
    return _list_changed(request, access, f"Deleted {doc.path}.")


@person_page
@require_POST
def session_delete(request: HtmxHttpRequest, access: PersonAccess) -> HttpResponse:
    form = SessionDeleteForm(request.POST)
    if not form.is_valid():
        return _list_changed(request, access, "That is not a session of yours.", error=True)
    session_id = form.cleaned_data["session_id"]
    count = session_forget(tenant=access.tenant, user_id=access.end_user.user_id,
                           session_id=session_id, actor=Actor.USER)
    if count == 0:  # deleted meanwhile, or a session id the page never showed
        return _list_changed(request, access, f"Nothing was stored for session {session_id}.")
    return _list_changed(
        request, access,
        f"Deleted the memory of session {session_id} ({count} document{'s' if count > 1 else ''}).",
    )


# --- Conversations ---------------------------------------------------------------------------


def _conversation_or_gone(access: PersonAccess, conversation_id: UUID, *,
                          notice: str = CONVERSATION_GONE) -> Conversation:
    """The person's own conversation; another person's or tenant's id looks deleted."""
    conversation = conversation_find(end_user=access.end_user,
                                     conversation_id=str(conversation_id))
    if conversation is None:
        raise _Gone("conversations", notice)
    return conversation


def _conversation(request: HtmxHttpRequest, access: PersonAccess, run: ConversationRun,
                  *, is_open: bool, at: int, focus_messages: bool = False, status: int = 200,
                  **extra: Any) -> HttpResponse:
    """One conversation, folded (its first messages) or open (a page of its messages): its
    partial, or the page around it, showing it alone. ``focus_messages``: the messages shown
    take focus (the link pressed went with the swap). ``extra``: a notice, with the notice's
    partial."""
    context = _context(access, run=run, is_open=is_open, focus_run=run if is_open else None,
                       conversation_list=ConversationList(page=None, runs=[run], at=at),
                       focus_messages=focus_messages, **extra)
    if is_open:
        later = run.last_seq + 1 if run.has_later else None
        earlier = max(1, run.first_seq - MESSAGES_PAGE) if run.has_earlier else None
        context.update(earlier_start=earlier, later_start=later)
    partials = ["conversation", "notice"] if "notice" in extra else ["conversation"]
    return render_page(request, TEMPLATE, context, partials=partials, status=status)


@person_page
@require_GET
@_answers_gone
def conversation_show(
    request: HtmxHttpRequest, access: PersonAccess, conversation_id: UUID, folded: bool
) -> HttpResponse:
    """Open (a page of its messages, from ``?start=``) or folded again (its first messages;
    without htmx that is the page itself)."""
    conversation = _conversation_or_gone(access, conversation_id)
    at, start = _place(request.GET)
    if not folded:
        run = conversation_run(conversation=conversation, first_seq=start, limit=MESSAGES_PAGE)
    elif is_partial_request(request):
        [run] = conversations_with_messages([conversation], first=PREVIEW_MESSAGES)
    else:
        return redirect(f"{_person_url(access)}?page={at}#conv-{conversation.pk}")
    # "Show all" and the pager name the first message (?start=); the title, which opens and
    # folds, does not and keeps focus itself (htmx finds its id again).
    paged = is_partial_request(request) and "start" in request.GET
    return _conversation(request, access, run, is_open=not folded, at=at, focus_messages=paged)


SUMMARY_STALE = ("This summary changed after the page showed it, so your edit was not saved. "
                 "It is shown as it is now; your text is below, to edit it again.")


@person_page
@require_POST
@_answers_gone
def conversation_summary(
    request: HtmxHttpRequest, access: PersonAccess, conversation_id: UUID
) -> HttpResponse:
    """The person writes or clears a conversation's summary, as an app's PUT .../summary
    does (actor ``user``; augmentation then leaves it as it is); refused when the summary
    changed since the page showed it. The conversation comes back open, with a notice."""
    _conversation_or_gone(access, conversation_id)
    at, _ = _place(request.POST)
    form = SummaryEditForm(request.POST)
    failure, status = _summary_saved(access, conversation_id, form)
    conversation = _conversation_or_gone(access, conversation_id)
    if failure is None:
        notice = "Summary saved." if conversation.summary else "Summary cleared."
        if not is_partial_request(request):
            messages.success(request, notice)
            return redirect(f"{_person_url(access)}conversations/{conversation.pk}/"
                            f"?page={at}#conv-{conversation.pk}")
    run = conversation_run(conversation=conversation, first_seq=1, limit=MESSAGES_PAGE)
    return _conversation(request, access, run, is_open=True, at=at, status=status,
                         notice=failure or notice, notice_error=failure is not None,
                         notice_kept=form.data.get("summary") if failure else None)


def _summary_saved(access: PersonAccess, conversation_id: UUID,
                   form: SummaryEditForm) -> tuple[str | None, int]:
    """(None, 200) once stored, else (why not, the status)."""
    if not form.is_valid():
        return " ".join(str(e) for errors in form.errors.values() for e in errors), 422
    try:
        conversation_summary_put(
            tenant=access.tenant, end_user=access.end_user, conversation_id=str(conversation_id),
            summary=form.cleaned_data["summary"], actor=Actor.USER,
            seen=form.cleaned_data["seen"])
    except ConversationNotFound:
        raise _Gone("conversations", CONVERSATION_GONE) from None
    except VersionMismatch:
        return SUMMARY_STALE, 409
    except MemoryRefusal as refusal:
        return refusal.message, 422
    return None, 200


@person_page
@require_POST
@_answers_gone
def conversation_delete_view(
    request: HtmxHttpRequest, access: PersonAccess, conversation_id: UUID
) -> HttpResponse:
    conversation = _conversation_or_gone(access, conversation_id,
                                         notice="This conversation was already deleted.")
    at, _ = _place(request.POST)
    try:
        conversation_delete(tenant=access.tenant, user_id=access.end_user.user_id,
                            conversation_id=str(conversation.pk), actor=Actor.USER)
    except ConversationNotFound:
        notice = "This conversation was already deleted."
    else:
        count = conversation.message_count
        notice = (f"Deleted a conversation of session {conversation.session_id} "
                  f"({count} message{'' if count == 1 else 's'}).")
    # Facts learnt only from the conversation went with it (conversations_remove).
    return _list_changed(request, access, notice, section="conversations", conversations_at=at,
                         also=("facts",))


@person_page
@require_POST
def memory_switch(request: HtmxHttpRequest, access: PersonAccess) -> HttpResponse:
    form = MemorySwitchForm(request.POST)
    if not form.is_valid():
        return _refused(request, access, "Choose on or off: nothing was changed.")
    enabled = form.cleaned_data["enabled"]
    end_user = end_user_memory_set(tenant=access.tenant, user_id=access.end_user.user_id,
                                   enabled=enabled)
    access = PersonAccess(access.tenant, end_user, access.by_portal)
    notice = ("Memory is on again." if enabled
              else "Memory is off: the AI will not read or save notes about you.")
    if not is_partial_request(request):
        messages.success(request, notice)
        return redirect(_person_url(access))
    return render_page(request, TEMPLATE, _context(access, notice=notice),
                       partials=["switch", "notice"])


@person_page
@require_POST
def forget(request: HtmxHttpRequest, access: PersonAccess) -> HttpResponse:
    form = ForgetForm(request.POST)
    if not form.is_valid():
        # The page comes back from its top, the form at its foot: focus takes the person
        # (and a screen reader) to the field and its message.
        form.fields["confirm"].widget.attrs["autofocus"] = True
        return render(request, TEMPLATE, _context(access, forget_form=form), status=422)
    end_user_forget(tenant=access.tenant, user_id=access.end_user.user_id, actor=Actor.USER)
    if access.by_portal:
        portal_grant_end(request)
    return render(request, "web/forgotten.html", {"tenant": access.tenant})


@person_page
@require_GET
def export(request: HtmxHttpRequest, access: PersonAccess) -> HttpResponse:
    # With the person's write lock, as the API's export: one moment, not one per statement
    # (None: forgotten since the page's access check, so nothing is left to export).
    held = end_user_find(user_id=access.end_user.user_id, for_update=True)
    body = export_json(end_user_export(user_id=access.end_user.user_id, end_user=held))
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response = HttpResponse(body, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="memory-{stamp}.json"'
    return response


# --- Facts ---------------------------------------------------------------------------------
#
# Like a document, a fact is shown, edited in place and saved (htmx swaps its own item: the
# partial ``fact``), a stale edit refused with the newer text shown; marking it no longer
# true or deleting it refreshes the section (``facts``), since the fact moves or goes. Each
# view answers the whole page (or a redirect) without htmx.

FACT_STALE_MESSAGE = (
    "This fact changed after you opened it, so your edit was not saved. "
    "The newer text is shown below; your text is kept underneath to copy from."
)
FACT_MOVED_ON = "This fact changed after you opened it and was not {}. Check it again."


def _fact_or_gone(access: PersonAccess, fact_id: UUID) -> Fact:
    """The person's fact, to show; another person's or tenant's looks deleted."""
    fact = fact_find(end_user=access.end_user, fact_id=str(fact_id))
    if fact is None:
        raise _Gone("facts", FACT_GONE)
    return fact


def _locked_fact(access: PersonAccess, fact_id: UUID,
                 *, kept: str | None = None) -> tuple[EndUser, Fact]:
    """The person's write lock, then their fact; another person's or tenant's looks deleted
    (with ``kept``, the text of a Save, shown to copy)."""
    end_user = end_user_find(user_id=access.end_user.user_id, for_update=True)
    fact = fact_find(end_user=end_user, fact_id=str(fact_id), for_update=True)
    if end_user is None or fact is None:
        raise _Gone("facts", FACT_GONE if kept is None else EDIT_LOST.format("fact"), kept=kept)
    return end_user, fact


def _fact(request: HtmxHttpRequest, access: PersonAccess, fact: Fact, *, state: str,
          status: int = 200, **extra: Any) -> HttpResponse:
    """One fact in a state (show, edit): its partial, or the page around it."""
    row = person_fact(end_user=access.end_user, fact=fact)
    context = _context(access, row=row, fact_focus=row, fact_state=state, **extra)
    return render_page(request, TEMPLATE, context, partials=["fact", "notice"], status=status)


def _fact_edit_form(fact: Fact) -> FactEditForm:
    return FactEditForm(initial={"content": fact.content, "version": fact.version})


_facts_changed = partial(_list_changed, section="facts")  # after a fact moved or went


def _expected_version(request: HtmxHttpRequest) -> int | None:
    form = FactChangeForm(request.POST)
    return form.cleaned_data["version"] if form.is_valid() else None


@person_page
@require_GET
@_answers_gone
def fact_show(request: HtmxHttpRequest, access: PersonAccess, fact_id: UUID) -> HttpResponse:
    """The fact as listed (the edit's Cancel); without htmx, the page at the fact."""
    fact = _fact_or_gone(access, fact_id)
    if not is_partial_request(request):
        return redirect(f"{_person_url(access)}#fact-{fact.pk}")
    return _fact(request, access, fact, state="show")


@person_page
@require_http_methods(["GET", "POST"])
@_answers_gone
def fact_edit(request: HtmxHttpRequest, access: PersonAccess, fact_id: UUID) -> HttpResponse:
    if request.method == "GET":
        fact = _fact_or_gone(access, fact_id)
        return _fact(request, access, fact, state="edit", form=_fact_edit_form(fact))
    end_user, fact = _locked_fact(access, fact_id, kept=request.POST.get("content", ""))
    form = FactEditForm(request.POST)
    if not form.is_valid():
        return _fact(request, access, fact, state="edit", form=form, status=422)
    try:
        fact = fact_update(end_user=end_user, fact=fact, actor=Actor.USER,
                           expected_version=form.cleaned_data["version"],
                           content=form.cleaned_data["content"])
    except VersionMismatch:
        # Nothing was written; the fact as it is now comes back to edit instead.
        return _fact(request, access, fact, state="edit", form=_fact_edit_form(fact), stale=True,
                     stale_message=FACT_STALE_MESSAGE, attempted=form.cleaned_data["content"],
                     status=409)
    except MemoryRefusal as refusal:
        form.add_error("content", refusal.message)
        return _fact(request, access, fact, state="edit", form=form, status=422)
    notice = f"Saved: {fact.content}"
    if not is_partial_request(request):
        messages.success(request, notice)
        return redirect(f"{_person_url(access)}#fact-{fact.pk}")
    return _fact(request, access, fact, state="show", notice=notice)


@person_page
@require_POST
@_answers_gone
def fact_invalidate(request: HtmxHttpRequest, access: PersonAccess, fact_id: UUID) -> HttpResponse:
    end_user, fact = _locked_fact(access, fact_id)
    if fact.invalid_at is not None:
        return _facts_changed(request, access, f"Already marked as no longer true: {fact.content}")
    try:
        fact_update(end_user=end_user, fact=fact, actor=Actor.USER, invalid_at=timezone.now(),
                    expected_version=_expected_version(request))
    except VersionMismatch:
        return _facts_changed(request, access, FACT_MOVED_ON.format("marked"), error=True)
    return _facts_changed(request, access, f"Marked as no longer true: {fact.content}")


@person_page
@require_POST
@_answers_gone
def fact_revalidate(request: HtmxHttpRequest, access: PersonAccess, fact_id: UUID) -> HttpResponse:
    """"Still true": a fact marked no longer true (by the person, by mistake, or by a later
    conversation) becomes true again, as the API's PATCH with invalid_at null makes it."""
    end_user, fact = _locked_fact(access, fact_id)
    if fact.invalid_at is None:
        return _facts_changed(request, access, f"Already true: {fact.content}")
    try:
        fact_update(end_user=end_user, fact=fact, actor=Actor.USER, invalid_at=None,
                    expected_version=_expected_version(request))
    except VersionMismatch:
        return _facts_changed(request, access, FACT_MOVED_ON.format("marked"), error=True)
    return _facts_changed(request, access, f"Marked as true again: {fact.content}")


@person_page
@require_POST
@_answers_gone
def fact_delete_view(request: HtmxHttpRequest, access: PersonAccess, fact_id: UUID) -> HttpResponse:
    end_user, fact = _locked_fact(access, fact_id)
    try:
        fact_delete(end_user=end_user, fact=fact, actor=Actor.USER,
                    expected_version=_expected_version(request))
    except VersionMismatch:
        return _facts_changed(request, access, FACT_MOVED_ON.format("deleted"), error=True)
    return _facts_changed(request, access, f"Deleted: {fact.content}")
