"""Render a whole page, or only named partials of it for an htmx request (radiofeed's idea).

Each page is one template; its ``{% partialdef %}`` blocks are the pieces htmx swaps. The
first partial is the request's target; any further ones carry ``hx-swap-oob`` themselves
(the notice line, counters) and are appended to the same response.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.http import HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from memoryhub.web.http import HtmxHttpRequest


def is_partial_request(request: HtmxHttpRequest) -> bool:
    """An htmx request that targets a piece of the page: not a boosted navigation, and not a
    history restore (going back to a pushed URL needs the whole page)."""
    htmx = request.htmx
    return bool(htmx) and not htmx.boosted and not htmx.history_restore_request


def render_page(
    request: HtmxHttpRequest, template: str, context: dict[str, Any], *,
    partials: Sequence[str] = (), status: int = 200,
) -> HttpResponse:
    if partials and is_partial_request(request):
        body = "".join(
            render_to_string(f"{template}#{name}", context, request=request) for name in partials
        )
        return HttpResponse(body, status=status)
    return render(request, template, context, status=status)
