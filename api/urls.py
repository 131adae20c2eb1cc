from django.urls import path, re_path

from api.views.conversations import (
    ConversationListView,
    ConversationSummaryView,
    ConversationView,
    HistoryView,
    SessionMessagesView,
    TurnContextView,
)
from api.views.documents import (
    DocumentListView,
    GlobalDocumentView,
    ProfileDocumentView,
    SessionDocumentView,
)
from api.views.events import EventListView
from api.views.facts import FactHistoryView, FactListView, FactView
from api.views.keys import ApiKeyListView, ApiKeyView
from api.views.memory import MemoryIndexView, MemorySnapshotView, MemoryToolView
from api.views.profiles import ProfileListView, ProfileView
from api.views.recall import RecallView
from api.views.tenant import TenantView
from api.views.users import (
    ExportView,
    PortalLinkView,
    SessionView,
    UserListView,
    UserView,
)
from api.views.webhooks import WebhookListView, WebhookView

app_name = "api"

urlpatterns = [
    # The memory tool, the index and the documents API first: Django tries patterns in order,
    # and these serve nearly every request (the patterns are disjoint, so order is free).
    path("users/<str:user_id>/memory", MemoryToolView.as_view(), name="memory-tool"),
    path("users/<str:user_id>/memory/index", MemoryIndexView.as_view(), name="memory-index"),
    # The document path is the rest of the URL (slashes included; may be empty, which the
    # view refuses as invalid_path with the API's error body rather than a bare 404). (?s):
    # a newline (%0A) matches too, so such a path is refused as invalid_path like any other.
    re_path(r"^users/(?P<user_id>[^/]+)/documents/global/(?P<path>(?s:.*))$",
            GlobalDocumentView.as_view(), name="document-global"),
    re_path(r"^users/(?P<user_id>[^/]+)/documents/profile/(?P<profile>[^/]+)/(?P<path>(?s:.*))$",
            ProfileDocumentView.as_view(), name="document-profile"),
    re_path(r"^users/(?P<user_id>[^/]+)/documents/session/(?P<session_id>[^/]+)/(?P<path>(?s:.*))$",
            SessionDocumentView.as_view(), name="document-session"),
    path("tenant", TenantView.as_view(), name="tenant"),
    path("profiles", ProfileListView.as_view(), name="profiles"),
    path("profiles/<str:profile>", ProfileView.as_view(), name="profile"),
    path("events", EventListView.as_view(), name="events"),
    path("users", UserListView.as_view(), name="users"),
    path("users/<str:user_id>", UserView.as_view(), name="user"),
    path("users/<str:user_id>/sessions/<str:session_id>", SessionView.as_view(),
         name="user-session"),
    path("users/<str:user_id>/export", ExportView.as_view(), name="user-export"),
    path("users/<str:user_id>/portal-link", PortalLinkView.as_view(), name="user-portal-link"),
    path("users/<str:user_id>/documents", DocumentListView.as_view(), name="documents"),
    path("users/<str:user_id>/recall", RecallView.as_view(), name="recall"),
    path("users/<str:user_id>/memory/snapshot", MemorySnapshotView.as_view(),
         name="memory-snapshot"),
    path("users/<str:user_id>/sessions/<str:session_id>/messages", SessionMessagesView.as_view(),
         name="session-messages"),
    path("users/<str:user_id>/conversations", ConversationListView.as_view(),
         name="conversations"),
    path("users/<str:user_id>/conversations/<str:conversation_id>", ConversationView.as_view(),
         name="conversation"),
    path("users/<str:user_id>/conversations/<str:conversation_id>/summary",
         ConversationSummaryView.as_view(), name="conversation-summary"),
    path("users/<str:user_id>/history", HistoryView.as_view(), name="history"),
    path("users/<str:user_id>/context", TurnContextView.as_view(), name="turn-context"),
    path("users/<str:user_id>/facts", FactListView.as_view(), name="facts"),
    path("users/<str:user_id>/facts/<str:fact_id>", FactView.as_view(), name="fact"),
    path("users/<str:user_id>/facts/<str:fact_id>/history", FactHistoryView.as_view(),
         name="fact-history"),
    path("webhooks", WebhookListView.as_view(), name="webhooks"),
    path("webhooks/<id:webhook_id>", WebhookView.as_view(), name="webhook"),
    path("keys", ApiKeyListView.as_view(), name="keys"),
    path("keys/<id:key_id>", ApiKeyView.as_view(), name="key"),
]
