"""The person's "download everything" file: the same JSON as ``GET /api/v1/users/{u}/export``.

Built by the API's own ``export_representation`` (api/representations.py, the one module of
the API the web pages import), so the page and the API cannot drift apart.
"""

from __future__ import annotations

import json

from rest_framework.utils.encoders import JSONEncoder

from api.representations import export_representation
from memoryhub.selectors.people import EndUserExport


def export_json(export: EndUserExport) -> str:
    return json.dumps(export_representation(export), cls=JSONEncoder, indent=2, ensure_ascii=False)
