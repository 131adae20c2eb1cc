from django.urls import include, path

from memoryhub.web.views import dashboard, entry, person

app_name = "web"

person_urls = [
    path("", person.page, name="person"),
    path("doc/<id:document_id>/", person.document_open, name="document_open"),
    path("doc/<id:document_id>/summary", person.document_summary, name="document_summary"),
    path("doc/<id:document_id>/edit", person.document_edit, name="document_edit"),
    path("doc/<id:document_id>/delete", person.document_delete, name="document_delete"),
    path("sessions/delete", person.session_delete, name="session_delete"),
    path("conversations/<uuid:conversation_id>/", person.conversation_show,
         {"folded": False}, name="conversation_open"),
    path("conversations/<uuid:conversation_id>/fold", person.conversation_show,
         {"folded": True}, name="conversation_fold"),
    path("conversations/<uuid:conversation_id>/delete", person.conversation_delete_view,
         name="conversation_delete"),
    path("conversations/<uuid:conversation_id>/summary", person.conversation_summary,
         name="conversation_summary"),
    path("facts/<uuid:fact_id>/", person.fact_show, name="fact_show"),
    path("facts/<uuid:fact_id>/edit", person.fact_edit, name="fact_edit"),
    path("facts/<uuid:fact_id>/invalidate", person.fact_invalidate, name="fact_invalidate"),
    path("facts/<uuid:fact_id>/revalidate", person.fact_revalidate, name="fact_revalidate"),
    path("facts/<uuid:fact_id>/delete", person.fact_delete_view, name="fact_delete"),
    path("switch", person.memory_switch, name="memory_switch"),
    path("forget", person.forget, name="forget"),
    path("export", person.export, name="export"),
]

tenant_urls = [
    path("", dashboard.overview, name="tenant_overview"),
    path("memory", dashboard.memory_toggle, name="tenant_memory"),
    path("settings", dashboard.settings_page, name="tenant_settings"),
    path("profiles", dashboard.profiles, name="tenant_profiles"),
    path("profiles/<id:pk>", dashboard.profile_toggle, name="tenant_profile_toggle"),
    path("keys", dashboard.api_keys, name="tenant_keys"),
    path("keys/<id:pk>/revoke", dashboard.api_key_revoke_view, name="tenant_key_revoke"),
    path("members", dashboard.members, name="tenant_members"),
    path("members/<id:pk>/role", dashboard.member_role, name="tenant_member_role"),
    path("members/<id:pk>/remove", dashboard.member_remove, name="tenant_member_remove"),
    path("invitations/<id:pk>/revoke", dashboard.invitation_revoke_view,
         name="tenant_invitation_revoke"),
    path("people", dashboard.people, name="tenant_people"),
    path("people/<id:pk>/forget", dashboard.person_forget, name="tenant_person_forget"),
    path("people/<id:pk>/key", dashboard.person_key, name="tenant_person_key"),
    path("people/<id:pk>/portal-link", dashboard.person_portal_link,
         name="tenant_person_portal_link"),
    path("audit", dashboard.audit, name="tenant_audit"),
    path("webhooks", dashboard.webhooks, name="tenant_webhooks"),
    path("webhooks/<id:pk>/switch", dashboard.webhook_switch, name="tenant_webhook_switch"),
    path("webhooks/<id:pk>/test", dashboard.webhook_test, name="tenant_webhook_test"),
]

urlpatterns = [
    path("", entry.home, name="home"),
    path("portal/<str:token>", entry.portal_redeem, name="portal_redeem"),
    path("portal-leave", entry.portal_leave, name="portal_leave"),
    path("portal-ended", entry.portal_ended, name="portal_ended"),
    path("invite/<str:token>", entry.invitation, name="invitation"),
    path("memory/<id:tenant_id>/<id:end_user_id>/", include(person_urls)),
    path("t/<slug:slug>/", include(tenant_urls)),
]
