"""The base of every tenant API view: authenticate, then run the handler as that tenant.

Authentication and the handler run inside ``tenant_context`` of the tenant the key names:
one transaction with ``app.tenant_id`` set locally. ``dispatch``'s
``finally`` always leaves the context, because server threads are reused; an exception
rolls the transaction back before DRF turns it into an error response.

The path of a request: the view says what authentication loads besides the key (the end
user its URL's ``user_id`` names, with the person's write lock when it declares that it
writes them), ``key_authenticate`` reads both in one statement, and the handler passes
``self.end_user`` on to the service or selector it calls (a read never looks the person up
by ``user_id`` again).

A key bound to one end user is checked here for every view, so none can forget it: another
person's URL reads as an absent person's, and anything but a declared read of them is 403
(``reads_only``, decided before authentication like the lock; an undeclared method counts
as a write, which fails closed); an endpoint whose URL names no person is 403 too unless the
view serves bound keys (``serves_bound_keys``: the user list, which shows them only their
person).
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from typing import Any, NoReturn

from django.db import transaction
from django.http import HttpRequest, HttpResponseBase
from django.utils.functional import cached_property
from rest_framework import exceptions
from rest_framework.exceptions import APIException
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.authentication import (
    BEARER,
    ApiPrincipal,
    OtherPersonRefused,
    key_authenticate,
    request_key,
    tenant_hint,
)
from api.errors import ApiError
from api.middleware import API_PREFIX
from memoryhub.errors import echo
from memoryhub.identifiers import is_user_id
from memoryhub.models import EndUser
from tenants.context import tenant_context
from tenants.models import ApiKey, Tenant


class TenantAPIView(APIView):
    _tenant_stack: ExitStack | None = None
    # The methods whose handler writes the person the URL names (see writes_end_user).
    writing_methods: frozenset[str] = frozenset()
    # The methods besides GET and HEAD whose handler only reads the person the URL names (a
    # search sent as POST): see reads_only.
    reading_methods: frozenset[str] = frozenset()
    # Whether a key bound to one end user may call this view although its URL names no
    # person; the view then shows them only their own person.
    serves_bound_keys: bool = False
    # The Authorization schemes this view takes a key in (api.authentication.BEARER).
    key_schemes: tuple[str, ...] = BEARER
    # The end user the URL's user_id names, read with the key in this transaction; None for
    # an unknown person or a URL without user_id. ``end_user_locked``: read with the person's
    # write lock (the view declared that this request writes them).
    end_user: EndUser | None = None
    end_user_locked: bool = False

    @property
    def principal(self) -> ApiPrincipal:
        return self.request.user  # type: ignore[return-value]

    @property
    def tenant_id(self) -> int:
        return self.principal.tenant_id

    @cached_property
    def tenant(self) -> Tenant:
        """Read with the API key on every request, so an admin's change to limits applies at once."""
        key = self.request.auth
        if isinstance(key, ApiKey) and key.tenant_id == self.tenant_id:
            return key.tenant
        return Tenant.objects.get(pk=self.tenant_id)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # The key names its tenant, so the transaction opens before authentication and the
        # key lookup and the handler share it: one BEGIN/COMMIT per request. A key that does
        # not authenticate raises, and the finally in dispatch rolls the transaction back.
        tenant_id = tenant_hint(request, self.key_schemes)
        if tenant_id is not None:
            stack = ExitStack()
            stack.enter_context(tenant_context(tenant_id))
            # Only once it is open: a BEGIN that failed (the database is away) left no
            # transaction for handle_exception to mark for rollback.
            self._tenant_stack = stack
        super().initial(request, *args, **kwargs)
        repeated = sorted(name for name, values in request.query_params.lists() if len(values) > 1)
        if repeated and request.path_info.startswith(API_PREFIX):  # not mem0's: its own rules
            # Every query parameter of this API holds one value; Django would read the last of
            # several (``?limit=abc&limit=`` as no limit), so a client's mistake went unseen.
            raise ApiError(400, "invalid_request",
                           f"Give each query parameter once: {echo(', '.join(repeated))}.")

    def person_named(self, request: Request) -> object:
        """The ``user_id`` of the person this request is about, as the request names it (None:
        it names no one), asked before authentication so that the key's statement loads them:
        the URL's. A surface whose requests name the person elsewhere (mem0's bodies, any JSON
        value, api/mem0) says where."""
        user_id = self.kwargs.get("user_id")
        return user_id if isinstance(user_id, str) else None

    def writes_end_user(self, request: Request) -> bool:
        """Whether this request writes the person the URL names, decided before
        authentication: then the key's statement takes the person's write lock as well.
        Views declare it with ``writing_methods`` (or override it); False is always safe, as
        a write service handed an unlocked person takes the lock itself."""
        return request.method in self.writing_methods

    def reads_only(self, request: Request) -> bool:
        """Whether this request only reads the person the URL names, decided before
        authentication: a key bound to another person then reads them as absent, and is
        refused anything else. Views declare reads with ``reading_methods`` (or override
        it); False is always safe."""
        return request.method in SAFE_METHODS or request.method in self.reading_methods

    def perform_authentication(self, request: Request) -> None:
        # Most handlers read or write the person the URL names next, so the key's statement
        # loads them too (and locks them for a write): one round trip instead of two or three.
        try:
            parsed = request_key(request, self.key_schemes)
            if parsed is None:  # no credentials: the permission check answers 401
                # settings: UNAUTHENTICATED_USER is None (the stubs know only Django's users)
                request.user = request.auth = None  # type: ignore[assignment]
                return
            user_id = self.person_named(request)  # the handler answers a malformed one: 400
            # Only a well-formed user_id reaches the key's statement: no person has any other
            # (and PostgreSQL refuses a NUL in a parameter with an error, not an empty row).
            person = user_id if is_user_id(user_id) else None
            locked = person is not None and self.writes_end_user(request)
            found = key_authenticate(parsed, user_id=person, lock_person=locked,
                                     writes=not self.reads_only(request))
            if found.principal.user_id is not None and user_id is None and not self.serves_bound_keys:
                raise OtherPersonRefused("This API key is bound to one end user; this endpoint "
                                         "needs a key that is not.")
        except APIException:
            request.user = request.auth = None  # type: ignore[assignment]  # as DRF leaves it
            raise
        # An API request's user is its key's principal, not a Django user (the stubs' type).
        request.user, request.auth = found.principal, found.key  # type: ignore[assignment]
        self.end_user, self.end_user_locked = found.end_user, locked

    def permission_denied(self, request: Request, message: str | None = None,
                          code: str | None = None) -> NoReturn:
        # DRF tells 401 from 403 by asking its authenticators again (a second key lookup),
        # which take Bearer alone: a key this view accepted in another scheme (mem0's Token)
        # looked absent, and lacking a permission gave 401. The key this view accepted decides.
        if request.auth is None:
            raise exceptions.NotAuthenticated()
        raise exceptions.PermissionDenied(detail=message, code=code)

    def raise_uncaught_exception(self, exc: Exception) -> NoReturn:
        # DRF's DEBUG branch reads request.accepted_renderer, which is unset when the failure
        # came before content negotiation (initial opens the tenant first): its AttributeError
        # then hid the real exception. The API handler answers it with JSON either way.
        raise exc

    def handle_exception(self, exc: Exception) -> Response:
        if self._tenant_stack is not None:
            transaction.set_rollback(True)
        return super().handle_exception(exc)

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        self.started = time.perf_counter()  # for views that report Server-Timing
        try:
            return super().dispatch(request, *args, **kwargs)
        finally:
            if self._tenant_stack is not None:
                self._tenant_stack.close()
                self._tenant_stack = None
