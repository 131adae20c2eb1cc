"""Documents, app-facing (spec: Documents), for keys with ``memory``.

``.../documents/global/<path>``, ``.../documents/profile/<profile>/<path>`` and
``.../documents/session/<session_id>/<path>``: the path is the rest of the URL, with a
leading ``/`` added, so ``documents/global/memories/notes/a.md`` and
``documents/global/notes/a.md`` name the same document; responses echo the path as the
URL wrote it. A path must name a document: the root and a trailing ``/`` are
``invalid_path`` (422), like every path the contract refuses.

Versions are entity tags: ``ETag: "<version>"``. ``If-Match`` (one or more tags, or ``*``)
makes PUT and DELETE conditional (412 otherwise; compared strongly, so a weak ``W/`` tag
matches nothing); ``If-None-Match: *`` makes PUT create-only; ``If-None-Match: "<version>"``
on GET answers 304 when that version is still current.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.encoding import escape_uri_path
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import TenantAPIView
from api.errors import ApiError, error_body
from api.params import optional, valid_profile, valid_session_id, valid_user_id
from api.parsers import TextRuleJSONParser
from api.preconditions import IF_MATCH, etag, parse_entity_tags, precondition_failed
from api.representations import (
    DocumentPageSerializer,
    DocumentSerializer,
    document_page_representation,
    document_representation,
)
from api.serializers import (
    CURSOR_PARAMETER,
    LIMIT_PARAMETER,
    SCOPES,
    DocumentWriteSerializer,
    parse_page,
    with_errors,
)
from memoryhub import paths
from memoryhub.errors import MemoryRefusal, ScopeFull, TooManyWrites, VersionMismatch
from memoryhub.models import Actor, MemoryDocument, Scope
from memoryhub.selectors.documents import document_get
from memoryhub.selectors.people import DocumentFilter, end_user_documents_page
from memoryhub.services.documents import document_put, document_remove, end_user_get_or_create
from memoryhub.services.writer import Writer

TAGS = ["documents"]
RETRY_AFTER_SECONDS = 60  # the write limit's window without a turn_id


def api_error(exc: MemoryRefusal) -> ApiError:
    """A domain refusal as the contract's HTTP error (422 for broken content and limit rules).

    Every 412 says ``precondition_failed``, whichever header (If-Match, If-None-Match) failed.
    """
    if isinstance(exc, VersionMismatch):
        return precondition_failed(exc.message)
    error = ApiError(exc.http_status, exc.code, exc.message)
    if isinstance(exc, TooManyWrites):
        error.wait = RETRY_AFTER_SECONDS  # DRF's handler turns ``wait`` into Retry-After
    return error


# The longest path there is, written with /memories: a longer prefix can match nothing. Kept
# this short so that any list request the schema allows fits a request line (gunicorn's
# limit_request_line, deploy/gunicorn.conf.py), four-byte characters percent-encoded included.
MAX_PREFIX_CHARS = len(paths.MEMORIES_PREFIX) + paths.MAX_PATH_BYTES
# valid_prefix's rule: empty (not given), or "/" and anything but NUL up to MAX_PREFIX_CHARS.
PREFIX_SCHEMA = {"type": "string", "pattern": "^(?:/[^\\u0000]*)?$", "maxLength": MAX_PREFIX_CHARS}


# --- Listing -------------------------------------------------------------------------------


class DocumentListView(TenantAPIView):
    @extend_schema(
        summary="List a person's documents (metadata, no content)",
        description="Ordered by scope (global, profile, session), scope_key, then path; "
        "paginated with limit and cursor. `scope` keeps one scope, which `session_id` or "
        "`profile` narrow to one session or profile. Without `scope`, `session_id` and/or "
        "`profile` list what that conversation sees: its session, its profile and global. "
        "`prefix` keeps paths starting with it (a string prefix; `/memories` is the root). "
        "Paths are listed in their stored form, without `/memories`.",
        parameters=[
            OpenApiParameter("scope", str, enum=list(SCOPES)),
            OpenApiParameter("session_id", str),
            OpenApiParameter("profile", str),
            OpenApiParameter("prefix", PREFIX_SCHEMA, description="e.g. /notes/"),
            LIMIT_PARAMETER,
            CURSOR_PARAMETER,
        ],
        responses=with_errors({200: DocumentPageSerializer},
                              e400="invalid_user_id, invalid_scope, invalid_session_id, "
                              "invalid_profile, invalid_prefix, invalid_limit or invalid_cursor"),
        tags=TAGS,
    )
    def get(self, request: Request, user_id: str) -> Response:
        valid_user_id(user_id)  # the person came with the key; a bad user_id is still a 400
        query = request.query_params
        page = parse_page(query, arity=3)
        filters = DocumentFilter(
            scope=optional(query, "scope", valid_scope),
            session_id=optional(query, "session_id", valid_session_id),
            profile=optional(query, "profile", valid_profile),
            prefix=optional(query, "prefix", valid_prefix),
        )
        rows = end_user_documents_page(
            end_user=self.end_user, filters=filters, after=page.after, limit=page.limit
        )
        return Response(document_page_representation(rows, page))


def valid_scope(value: str) -> str:
    if value not in SCOPES:
        raise ApiError(400, "invalid_scope", "scope must be one of session, profile, global.")
    return value




def valid_prefix(value: str) -> str:
    # NUL: no path holds one, and PostgreSQL refuses it in a parameter with an error (a 500).
    if not value.startswith("/") or len(value) > MAX_PREFIX_CHARS or "\x00" in value:
        raise ApiError(400, "invalid_prefix",
                       "prefix must be a path prefix starting with /, without NUL.")
    return value


# --- One document --------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """The document a URL names: whose, which scope and key, which path (two spellings)."""

    user_id: str
    scope: str
    scope_key: str
    written_path: str  # as the URL wrote it, echoed back
    path: str  # canonical, stored


def document_target(*, user_id: str, scope: str, scope_key: str, url_path: str) -> Target:
    """The caller validates ``user_id`` and ``scope_key`` first: 400 before a path's 422."""
    written = "/" + url_path
    try:
        canonical = paths.normalize_path(written)
    except paths.InvalidPath as exc:
        raise ApiError(422, "invalid_path", str(exc)) from exc
    if canonical == paths.ROOT or paths.written_as_directory(written):
        raise ApiError(422, "invalid_path", paths.invalid_path_message(written))
    return Target(user_id, scope, scope_key, written, canonical)


NOT_FOUND = "No document at this path."

PATH_PARAMETER = OpenApiParameter(
    "path", str, OpenApiParameter.PATH,
    description="the document path without its leading /, e.g. notes/a.md (or memories/notes/a.md)",
)
IF_NONE_MATCH_PUT = OpenApiParameter(
    "If-None-Match", str, OpenApiParameter.HEADER, enum=["*"],
    description="*: create only, 412 if the document exists",
)
IF_NONE_MATCH_GET = OpenApiParameter(
    "If-None-Match", str, OpenApiParameter.HEADER,
    description='"<version>": 304 while that version is current',
)
ETAG_HEADER = OpenApiParameter(
    "ETag", str, OpenApiParameter.HEADER, response=[200, 201, 304],
    description='"<version>" of the document returned',
)
RULES_422 = ("document_too_large, scope_full, credential_detected, not_text or invalid_path")


class DocumentView(TenantAPIView):
    """One document; subclasses say how the URL names its scope."""

    scope: str = ""
    parser_classes = [TextRuleJSONParser]  # invalid UTF-8 in content is 422 not_text
    # PUT and DELETE write the person: the key's statement then locks them, so the document
    # the handler finds and the version If-Match names stay as read until it commits. (A
    # DELETE that found the document unlocked lost it to a concurrent rename or edit: a 412
    # for If-Match: * on a document that existed throughout.)
    writing_methods = frozenset({"PUT", "DELETE"})

    def scope_key(self, kwargs: dict[str, str]) -> str:
        raise NotImplementedError

    def target(self, kwargs: dict[str, str]) -> Target:
        # The identifiers in the order the URL names them, so a bad user_id is always
        # invalid_user_id, whatever else is wrong.
        user_id = valid_user_id(kwargs["user_id"])
        return document_target(
            user_id=user_id, scope=self.scope, scope_key=self.scope_key(kwargs),
            url_path=kwargs["path"],
        )

    def find(self, target: Target) -> MemoryDocument | None:
        """The document, with ``end_user`` loaded (None for an unknown person or path)."""
        end_user = self.end_user  # the person target.user_id names, read with the key
        document = document_get(
            end_user=end_user, scope=target.scope, scope_key=target.scope_key, path=target.path
        )
        if document is not None:
            document.end_user = end_user  # type: ignore[assignment]
        return document

    def respond(self, document: MemoryDocument, target: Target, status: int = 200) -> Response:
        response = Response(document_representation(document, path=target.written_path),
                            status=status)
        response["ETag"] = etag(document)
        return response

    def get(self, request: Request, **kwargs: str) -> Response:
        target = self.target(kwargs)
        document = self.find(target)
        if document is None:
            raise ApiError(404, "not_found", NOT_FOUND)
        cached = request.headers.get("If-None-Match")
        if cached is not None:
            versions = parse_entity_tags(cached)
            if versions is None or document.version in versions:
                return Response(status=304, headers={"ETag": etag(document)})
        return self.respond(document, target)

    def put(self, request: Request, **kwargs: str) -> Response:
        target = self.target(kwargs)
        body = DocumentWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        expected_version = self.expected_version(request, target)
        create_only = self.create_only(request)
        # The key's statement read the person with their write lock (writing_methods); a
        # person not yet known is created here, and comes back locked as well.
        end_user, locked = self.end_user, self.end_user_locked
        if end_user is None:
            end_user, locked = end_user_get_or_create(tenant=self.tenant,
                                                     user_id=target.user_id), True
        try:
            document, created = document_put(
                writer=Writer(tenant=self.tenant, actor=Actor.APP), end_user=end_user,
                scope=target.scope, scope_key=target.scope_key, path=target.written_path,
                content=body.validated_data["content"],
                description=body.validated_data.get("description"),
                confidence=body.validated_data.get("confidence"),
                expected_version=expected_version, create_only=create_only,
                end_user_locked=locked,
            )
        except ScopeFull as exc:
            # Answered, not raised: raising rolls the transaction back, and the refusal's
            # memory.pressure event must be kept (the service changed nothing else).
            return Response(error_body(exc.code, exc.message), status=exc.http_status)
        except MemoryRefusal as exc:
            raise api_error(exc) from exc
        response = self.respond(document, target, status=201 if created else 200)
        if created:
            # request.path is decoded: a path's "?" or "#" (sent as %3F, %23) must be encoded
            # again, or the Location names another URL (a query string, a fragment).
            response["Location"] = request.build_absolute_uri(escape_uri_path(request.path))
        return response

    def delete(self, request: Request, **kwargs: str) -> Response:
        target = self.target(kwargs)
        document = self.find(target)
        if document is None:
            raise ApiError(404, "not_found", NOT_FOUND)
        expected_version = self.expected_version(request, target, document)
        try:
            document_remove(writer=Writer(tenant=self.tenant, actor=Actor.APP),
                            end_user=document.end_user, document=document,
                            expected_version=expected_version)
        except MemoryRefusal as exc:
            raise api_error(exc) from exc
        return Response(status=204)

    def expected_version(
        self, request: Request, target: Target, document: MemoryDocument | None = None
    ) -> int | None:
        """The version ``If-Match`` allows, checked now and handed to the service, which
        checks it again under its lock (a concurrent write between the two gives 412)."""
        header = request.headers.get("If-Match")
        if header is None:
            return None
        document = document or self.find(target)
        versions = parse_entity_tags(header, strong=True)  # If-Match compares strongly
        if document is None or (versions is not None and document.version not in versions):
            raise precondition_failed("If-Match: the document is not at that version.")
        return document.version

    def create_only(self, request: Request) -> bool:
        header = request.headers.get("If-None-Match")
        if header is None:
            return False
        if header.strip() != "*":
            raise ApiError(400, "invalid_precondition", "On PUT, If-None-Match accepts only *.")
        return True


def document_schema(scope: str, key: OpenApiParameter | None = None) -> Any:
    """The same OpenAPI annotations on each of the three URL forms (one view class each)."""
    params = [PATH_PARAMETER, *([key] if key else [])]
    missing = "not_found: no such document (also another tenant's)"
    return extend_schema_view(
        get=extend_schema(
            summary=f"Read a {scope} document",
            parameters=[*params, IF_NONE_MATCH_GET, ETAG_HEADER],
            responses=with_errors(
                {200: OpenApiResponse(DocumentSerializer, description='ETag: "<version>"'),
                 304: OpenApiResponse(description="If-None-Match: still that version")},
                e404=missing, e422="invalid_path"),
            tags=TAGS,
        ),
        put=extend_schema(
            summary=f"Create or replace a {scope} document",
            description="updated_by becomes `app`. Omitted description and confidence keep "
            "their current values (on create: empty and 1.0).",
            parameters=[*params, IF_MATCH, IF_NONE_MATCH_PUT, ETAG_HEADER],
            request=DocumentWriteSerializer,
            responses=with_errors(
                {200: OpenApiResponse(DocumentSerializer, description="replaced"),
                 201: OpenApiResponse(DocumentSerializer, description="created")}, body=True,
                e403="permission_denied, or memory_disabled",
                e412="precondition_failed", e422=RULES_422),
            tags=TAGS,
        ),
        delete=extend_schema(
            summary=f"Delete a {scope} document",
            parameters=[*params, IF_MATCH],
            request=None,
            responses=with_errors({204: OpenApiResponse(description="deleted")},
                                  e404=missing, e412="precondition_failed",
                                  e422="invalid_path"),
            tags=TAGS,
        ),
    )


@document_schema("global")
class GlobalDocumentView(DocumentView):
    scope = Scope.GLOBAL

    def scope_key(self, kwargs: dict[str, str]) -> str:
        return ""


@document_schema("profile", OpenApiParameter("profile", str, OpenApiParameter.PATH))
class ProfileDocumentView(DocumentView):
    scope = Scope.PROFILE

    def scope_key(self, kwargs: dict[str, str]) -> str:
        return valid_profile(kwargs["profile"])


@document_schema("session", OpenApiParameter("session_id", str, OpenApiParameter.PATH))
class SessionDocumentView(DocumentView):
    scope = Scope.SESSION

    def scope_key(self, kwargs: dict[str, str]) -> str:
        return valid_session_id(kwargs["session_id"])
