from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from api.mcp.endpoint import mcp_endpoint
from api.views.fallback import api_not_found
from memoryhub import health

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("api/v1/", include("api.urls")),
    path("mcp", mcp_endpoint, name="mcp"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    re_path(r"^api/(?P<rest>.*)$", api_not_found),
    path("accounts/", include("allauth.urls")),
    path("platform-admin/", admin.site.urls),
    path("", include("memoryhub.web.urls")),
]
