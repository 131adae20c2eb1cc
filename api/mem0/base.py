"""The base of mem0's views: the REST API's own (``TenantAPIView``: the tenant transaction,
the key with its permissions, bound keys, the rate limit), taking the key as mem0's client
sends it (``Authorization: Token <key>``; ``Bearer`` works too), and finding the person where
mem0's requests name them.

Where the person is (``person_in``): the URL (``v2/entities/user/{user_id}/``), the body
(``add``, ``search``, ``get_all``: ``user_id`` or ``filters.user_id``), the query
(``DELETE v1/memories/?user_id=``), or nowhere (a memory's own URL, ``v1/memories/{id}/``:
the memory names its person). The person named is loaded, and locked for a write, by the
key's statement as for a REST URL's person, so a key bound to one person reaches only them in
the same one place (api/authentication.py): another person reads as absent and writing them
is 403. A body naming no one, with a bound key, names the key's person (as MCP's tools do).
A query naming someone other than by ``user_id`` (``delete_all(agent_id=)``, or the typed
``filters``, which the client sends as a Python repr) names no one: refused, never read as the
key's person, whose memories it would delete; a query naming someone twice (``user_id``
given twice, or beside ``filters``) is refused too. A memory found by its id is looked for among the
bound key's person's only.
"""

from __future__ import annotations

from typing import Any, Literal

from django.core.paginator import Paginator
from rest_framework.exceptions import APIException
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

from api.authentication import ApiPrincipal
from api.base import TenantAPIView
from api.errors import ApiError
from api.mem0.serializers import person_of
from api.params import valid_user_id
from api.serializers import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from memoryhub.numbers import parse_natural
from memoryhub.selectors.documents import end_user_find

NO_PERSON = ("user_id is required (as user_id, or in filters.user_id): MemoryHub keeps "
             "memories per person; agent_id, app_id and run_id alone name no one.")
NO_PERSON_IN_QUERY = ("user_id is required in the query (delete_all(user_id=...)): MemoryHub "
                      "keeps memories per person; agent_id, app_id, run_id and filters name no "
                      "one here.")
NAMED_TWICE_IN_QUERY = ("Name the person once, as user_id in the query (delete_all(user_id="
                        "...)), without filters: MemoryHub deletes one person's memories at a "
                        "time.")
# What else a query may name a person or an entity by: never the bound key's person.
OTHER_NAMES = ("agent_id", "app_id", "run_id", "filters")


class Mem0View(TenantAPIView):
    key_schemes = ("token", "bearer")
    serves_bound_keys = True  # the person is not in the URL; see the module's docstring
    person_in: Literal["url", "body", "query", "nowhere"] = "url"
    schema = None  # mem0's API: not in /api/schema/ (api/mem0/views.py)
    # The person's user_id as the request names it (or the bound key's), unvalidated: any
    # JSON value a body holds. Only naming no one at all gives a bound key's person.
    person_id: object = None
    _named: object = None
    _named_otherwise = False  # the query names someone, not by user_id
    _named_twice = False  # the query names someone twice: by user_id, and again
    _body_error: APIException | None = None

    def person_named(self, request: Request) -> object:
        if self.person_in == "body":
            # Parsed before the key is checked (MemoryToolView does the same, for its lock):
            # a body DRF cannot parse is kept for the handler to answer, after the 401.
            try:
                self._named = person_of(request.data)
            except APIException as exc:
                self._body_error = exc
        elif self.person_in == "query":
            self._named = request.query_params.get("user_id")  # "" is named, and malformed
            self._named_otherwise = self._named is None and any(
                name in request.query_params for name in OTHER_NAMES)
            # Two people in one query (a user_id given twice, or beside filters, which name
            # whom they like): which one to delete is a guess, so none is taken.
            self._named_twice = (len(request.query_params.getlist("user_id")) > 1
                                 or (self._named is not None and "filters" in request.query_params))
        elif self.person_in == "url":
            self._named = super().person_named(request)
        return self._named

    def perform_authentication(self, request: Request) -> None:
        super().perform_authentication(request)
        self.person_id = self._named
        principal = request.user
        if (self.person_id is None and self.person_in in ("body", "query")
                and not self._named_otherwise
                and isinstance(principal, ApiPrincipal) and principal.user_id is not None):
            self.person_id = principal.user_id
            self.end_user_locked = self.writes_end_user(request)
            self.end_user = end_user_find(user_id=principal.user_id,
                                          for_update=self.end_user_locked)

    def body(self, request: Request) -> Any:
        if self._body_error is not None:
            raise self._body_error
        return request.data

    def person(self) -> str:
        """The person's user_id, validated (400 ``invalid_user_id``, or none named)."""
        if self.person_id is None:
            raise ApiError(400, "invalid_request",
                           NO_PERSON_IN_QUERY if self.person_in == "query" else NO_PERSON)
        if self._named_twice:
            raise ApiError(400, "invalid_request", NAMED_TWICE_IN_QUERY)
        return valid_user_id(self.person_id)

    @property
    def only_user_id(self) -> str | None:
        """The person a bound key reaches, for a memory found by its id; None: anyone."""
        return self.principal.user_id


class Mem0Pagination(PageNumberPagination):
    """mem0's pages (DRF's own ``{"count", "next", "previous", "results"}``): ``page`` from 1,
    ``page_size`` 1-1000 (default 100), the REST lists' bounds. Numbers are read as the API
    reads every number from text (memoryhub/numbers.py); a page past the last is 404."""

    page_size = DEFAULT_PAGE_SIZE
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get("page_size")
        if not raw:
            return DEFAULT_PAGE_SIZE
        size = parse_natural(raw)
        if size is None or not 1 <= size <= MAX_PAGE_SIZE:
            raise ApiError(400, "invalid_limit",
                           f"page_size must be an integer from 1 to {MAX_PAGE_SIZE}.")
        return size

    def get_page_number(self, request: Request, paginator: Paginator) -> int:
        raw = request.query_params.get("page")
        if not raw:
            return 1
        number = parse_natural(raw)
        if number is None:
            raise ApiError(400, "invalid_page", "page must be a page number, 1 for the first.")
        return number
