from django.urls import path

from api.views.tenant import TenantView

app_name = "api"

urlpatterns = [
    path("tenant", TenantView.as_view(), name="tenant"),
]
