"""The base of every tenant API view: authenticate, then run the handler as that tenant.

Authentication and the handler run inside ``tenant_context`` of the tenant the key names:
one transaction with ``app.tenant_id`` set locally. ``dispatch``'s
``finally`` always leaves the context, because server threads are reused; an exception
rolls the transaction back before DRF turns it into an error response.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from typing import Any

from django.db import transaction
from django.http import HttpRequest, HttpResponseBase
from django.utils.functional import cached_property
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.authentication import ApiPrincipal, tenant_hint
from memoryhub.selectors.documents import enduser_prefetched
from tenants.context import tenant_context
from tenants.models import ApiKey, Tenant


class TenantAPIView(APIView):
    _tenant_stack: ExitStack | None = None

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
        tenant_id = tenant_hint(request)
        if tenant_id is not None:
            self._tenant_stack = ExitStack()
            self._tenant_stack.enter_context(tenant_context(tenant_id))
        super().initial(request, *args, **kwargs)
        # The person the URL names came with the key, in this transaction: no second query.
        end_user = getattr(request, "prefetched_end_user", None)
        if end_user is not None and self._tenant_stack is not None:
            locked = getattr(request, "prefetched_end_user_locked", False)
            self._tenant_stack.enter_context(enduser_prefetched(end_user, locked=locked))

    def writes_memory(self, request: Request) -> bool:
        """Whether the request writes the person's memory, known before authentication: then
        the key's query takes the person's write lock as well (api/authentication.py).
        Views that write override it; False is always safe (the write locks on its own)."""
        return False

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
