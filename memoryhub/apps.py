from django.apps import AppConfig


class MemoryHubConfig(AppConfig):
    name = "memoryhub"
    label = "memoryhub"
    verbose_name = "Memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from memoryhub.infra.db import register_adapters

        register_adapters()
