"""The ASGI entry point: bootstrap, then Django."""

import os

from django.core.asgi import get_asgi_application

from memoryhub.infra.bootstrap import bootstrap

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
bootstrap()
application = get_asgi_application()
