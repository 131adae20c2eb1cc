"""The ASGI entry point: bootstrap, then Django."""

import os

from django.core.asgi import get_asgi_application

from memoryhub.infra.bootstrap import bootstrap
from memoryhub.infra.checks import refuse_per_process_limits

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
bootstrap()
application = get_asgi_application()
refuse_per_process_limits()  # production with per-process rate limits: no start
