from django.contrib import admin
from django.urls import include, path, re_path, register_converter
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from api.mcp.endpoint import mcp_endpoint
from api.mem0.errors import mem0_not_found
from api.views.fallback import api_not_found
from memoryhub import health, metrics
from memoryhub.numbers import IdConverter
from memoryhub.web.views.entry import sign_in

# <id:...> in api/urls.py and memoryhub/web/urls.py, which the includes below import.
register_converter(IdConverter, "id")

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("api/v1/", include("api.urls")),
    path("mcp", mcp_endpoint, name="mcp"),
    path("mcp/", mcp_endpoint, name="mcp"),  # the same server (api.middleware.is_mcp)
    # mem0's platform API for mem0ai's MemoryClient (api/mem0), then a JSON 404 in mem0's shape.
    # "/mem0//v1/ping/" too: AsyncMemoryClient pings f"{host}/v1/ping/", so a host given with
    # its trailing slash ("https://memory.example.com/mem0/") doubles it.
    re_path(r"^mem0/+", include("api.mem0.urls")),
    re_path(r"^mem0/(?P<rest>(?s:.*))$", mem0_not_found),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    # (?s): a path may hold a newline (%0A), which "." does not match.
    re_path(r"^api/(?P<rest>(?s:.*))$", api_not_found),
    # allauth's sign-in, answering 429 when its failed-attempts limit refuses (issue 17).
    path("accounts/login/", sign_in, name="account_login"),
    path("accounts/", include("allauth.urls")),
    path("platform-admin/", admin.site.urls),
    path("", include("memoryhub.web.urls")),
]

# Django's pages, except for /api/ paths (the JSON error body; with DEBUG on, Django shows its
# debug pages instead of calling these, and /api/v1/ never reaches them: api/middleware.py).
handler404 = "api.views.fallback.not_found"
handler500 = "api.views.fallback.server_error"
# A body over the limit is 413 on the pages too, not Django's 400.
handler400 = "memoryhub.web.views.entry.bad_request"
# allauth's rate limits answer with ROOT_URLCONF.handler429 (a page, and a logged refusal).
handler429 = "memoryhub.web.views.entry.too_many"
