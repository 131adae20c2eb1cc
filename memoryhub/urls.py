from django.contrib import admin
from django.urls import include, path, re_path, register_converter
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from api.views.fallback import api_not_found
from memoryhub import health
from memoryhub.numbers import IdConverter

# <id:...> in api/urls.py and memoryhub/web/urls.py, which the includes below import.
register_converter(IdConverter, "id")

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("api/v1/", include("api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    re_path(r"^api/(?P<rest>.*)$", api_not_found),
    path("accounts/", include("allauth.urls")),
    path("platform-admin/", admin.site.urls),
    path("", include("memoryhub.web.urls")),
]
