"""Template filters of the pages (``{% load shown %}``: settings.TEMPLATES' libraries)."""

from __future__ import annotations

import json
from typing import Any

from django import template

register = template.Library()


@register.filter
def as_json(value: Any) -> str:
    """A value of stored JSON (a message's metadata) as the app sent it: a string as itself,
    anything else as JSON (``{"b": 1}``, ``true``, ``null``), where Django's ``str`` showed
    Python's ``{'b': 1}``, ``True`` and ``None``. Escaped by the template, as any text."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
