"""The WSGI entry point (gunicorn memoryhub.wsgi:application): bootstrap, then Django."""

import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from memoryhub.infra.bodies import with_request_bodies
from memoryhub.infra.bootstrap import bootstrap
from memoryhub.infra.checks import refuse_per_process_limits
from memoryhub.numbers import parse_natural

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
bootstrap()
# Unread bodies are drained up to what deploy/nginx lets through (client_max_body_size 2m)
# and a little more: a larger one closes the connection (memoryhub/infra/bodies.py).
application = with_request_bodies(get_wsgi_application(),
                                  limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
                                  drain_limit=4 * settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
                                  parse_length=parse_natural)
refuse_per_process_limits()  # production with per-process rate limits: no start
