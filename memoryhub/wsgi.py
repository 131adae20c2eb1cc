"""The WSGI entry point (gunicorn memoryhub.wsgi:application): bootstrap, then Django."""

import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from memoryhub.infra.bootstrap import bootstrap
from memoryhub.infra.checks import refuse_per_process_limits
from memoryhub.infra.chunked import with_chunked_bodies

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
bootstrap()
application = with_chunked_bodies(get_wsgi_application(),
                                  limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
refuse_per_process_limits()  # production with per-process rate limits: no start
