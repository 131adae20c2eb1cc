"""mem0's routes, with the trailing slashes its client sends; everything else under /mem0/
is a JSON 404 in mem0's error shape (``mem0_not_found``, after this conf in memoryhub/urls.py)."""

from django.urls import path

from api.mem0.views import (
    AddView,
    BatchView,
    EntityListView,
    EntityView,
    MemoryHistoryView,
    MemoryListView,
    MemoryView,
    PersonMemoriesView,
    PingView,
    SearchView,
)

app_name = "mem0"

urlpatterns = [
    path("v1/ping/", PingView.as_view(), name="ping"),
    path("v3/memories/add/", AddView.as_view(), name="add"),
    path("v3/memories/search/", SearchView.as_view(), name="search"),
    path("v3/memories/", MemoryListView.as_view(), name="get-all"),
    path("v1/memories/", PersonMemoriesView.as_view(), name="delete-all"),
    path("v1/memories/<str:memory_id>/", MemoryView.as_view(), name="memory"),
    path("v1/memories/<str:memory_id>/history/", MemoryHistoryView.as_view(), name="history"),
    path("v1/entities/", EntityListView.as_view(), name="entities"),
    path("v2/entities/user/<str:user_id>/", EntityView.as_view(), name="entity"),
    path("v1/batch/", BatchView.as_view(), name="batch"),
]
