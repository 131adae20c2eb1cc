from django.apps import AppConfig

# At module level: memoryhub.infra.db imports no model, so it may load with the app registry.
from memoryhub.infra.db import register_adapters


class MemoryHubConfig(AppConfig):
    name = "memoryhub"
    label = "memoryhub"
    verbose_name = "Memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        register_adapters()
        from memoryhub import health  # noqa: F401 - registers the database role's deploy check
        from memoryhub.infra import checks  # noqa: F401 - registers the system checks
