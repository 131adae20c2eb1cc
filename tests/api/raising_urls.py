"""A test-only URLconf: the project's routes plus API views that fail, for the 500 body.

``raises`` fails in the handler after writing (the write must be rolled back); ``clashes``
has PostgreSQL roll its transaction back as a deadlock's victim (SQLSTATE 40P01); ``raises-early``
fails before DRF's content negotiation, where DRF's DEBUG branch used to fail itself
(``accepted_renderer``); ``raises-plain`` is a Django view, outside DRF; ``/api/other/raises``
runs through the pages' chain.
"""

from __future__ import annotations

from typing import Any, NoReturn

from django.db import connection
from django.http import HttpRequest
from django.urls import path
from rest_framework.request import Request

from api.base import TenantAPIView
from memoryhub import urls as project_urls
from memoryhub.services.documents import end_user_get_or_create


class Broken(RuntimeError):
    pass


class RaisingView(TenantAPIView):
    def get(self, request: Request) -> NoReturn:
        end_user_get_or_create(tenant=self.tenant, user_id="written-before-the-bug")
        raise Broken("a bug in a view")


class ClashingView(TenantAPIView):
    def get(self, request: Request) -> NoReturn:
        with connection.cursor() as cursor:  # the server's own error, as a deadlock ends
            cursor.execute("DO $$ BEGIN RAISE EXCEPTION 'deadlock detected' "
                           "USING ERRCODE = 'deadlock_detected'; END $$")
        raise AssertionError("PostgreSQL raised nothing")


class EarlyRaisingView(TenantAPIView):
    def initial(self, request: Request, *args: Any, **kwargs: Any) -> NoReturn:
        raise Broken("a bug before content negotiation")


def plain_raising_view(request: HttpRequest) -> NoReturn:
    raise Broken("a bug in a plain Django view")


urlpatterns = [
    path("api/v1/raises", RaisingView.as_view()),
    path("api/v1/clashes", ClashingView.as_view()),
    path("api/v1/raises-early", EarlyRaisingView.as_view()),
    path("api/v1/raises-plain", plain_raising_view),
    path("api/other/raises", plain_raising_view),
    *project_urls.urlpatterns,
]
handler404 = project_urls.handler404
handler500 = project_urls.handler500
