"""The base of every tenant API view: authenticate, then run the handler as that tenant.

After DRF's ``initial()`` (authentication, permissions, throttles) the handler runs inside
``tenant_context``: one transaction with ``app.tenant_id`` set locally. ``dispatch``'s
``finally`` always leaves the context, because server threads are reused; an exception
rolls the transaction back before DRF turns it into an error response.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from django.db import transaction
from django.http import HttpRequest, HttpResponseBase
from django.utils.functional import cached_property
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.authentication import ApiPrincipal
from tenants.context import tenant_context
from tenants.models import Tenant


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
        """Loaded once per request, so an admin's change to limits applies to the next one."""
        return Tenant.objects.get(pk=self.tenant_id)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        self._tenant_stack = ExitStack()
        self._tenant_stack.enter_context(tenant_context(request.user.tenant_id))

    def handle_exception(self, exc: Exception) -> Response:
        if self._tenant_stack is not None:
            transaction.set_rollback(True)
        return super().handle_exception(exc)

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            return super().dispatch(request, *args, **kwargs)
        finally:
            if self._tenant_stack is not None:
                self._tenant_stack.close()
                self._tenant_stack = None
