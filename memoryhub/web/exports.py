"""The person's "download everything" file: the same JSON as ``GET /api/v1/users/{u}/export``.

Built from the API's own representation functions, so the page and the API cannot drift
apart (the API view composes them inline; if it grows a helper, use that here).
"""

from __future__ import annotations

import json
from typing import Any

from rest_framework.utils.encoders import JSONEncoder

from api.views.admin import event_representation
from api.views.documents import document_representation
from api.views.users import person_representation
from memoryhub.selectors.people import PersonExport


def export_data(export: PersonExport) -> dict[str, Any]:
    return {
        **person_representation(export.summary),
        "account_email": export.account_email,
        "documents": [document_representation(d) for d in export.documents],
        "events": [event_representation(e) for e in export.events],
        "portal_links": [
            {"created_at": link.created_at, "expires_at": link.expires_at,
             "used_at": link.used_at}
            for link in export.portal_links
        ],
    }


def export_json(export: PersonExport) -> str:
    return json.dumps(export_data(export), cls=JSONEncoder, indent=2, ensure_ascii=False)
