"""The WSGI entry point (gunicorn memoryhub.wsgi:application): bootstrap, then Django."""

import os

from django.core.wsgi import get_wsgi_application

from memoryhub.infra.bootstrap import bootstrap

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
bootstrap()
application = get_wsgi_application()
