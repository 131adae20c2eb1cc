"""Entity tags, shared by the views of versioned things (documents, facts).

``ETag: "<version>"``; ``If-Match`` (one or more tags, or ``*``) makes a write conditional
(412 ``precondition_failed`` otherwise); ``If-None-Match: "<version>"`` on GET answers 304
while that version is current.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter

from api.errors import ApiError
from memoryhub.models import Fact, MemoryDocument
from memoryhub.numbers import parse_natural


def parse_entity_tags(header: str, *, strong: bool = False) -> set[int] | None:
    """``"3", W/"4"`` -> {3, 4}; ``*`` -> None (any version). Tags not of ours match nothing.

    ``strong``: RFC 9110's strong comparison, which If-Match uses (13.1.1): a weak tag
    (``W/"4"``) matches nothing there. If-None-Match compares weakly (13.1.2).
    """
    if header.strip() == "*":
        return None
    versions = set()
    for tag in header.split(","):
        tag = tag.strip()
        if tag.startswith("W/"):
            if strong:
                continue
            tag = tag[2:]
        version = parse_natural(tag[1:-1]) if len(tag) >= 3 and tag[0] == tag[-1] == '"' else None
        if version is not None:
            versions.add(version)
    return versions


def etag(versioned: MemoryDocument | Fact) -> str:
    """A document's or a fact's version as its entity tag."""
    return f'"{versioned.version}"'


def precondition_failed(message: str) -> ApiError:
    return ApiError(412, "precondition_failed", message)


IF_MATCH = OpenApiParameter(
    "If-Match", str, OpenApiParameter.HEADER,
    description='"<version>" (or *): act only on that version, else 412',
)
