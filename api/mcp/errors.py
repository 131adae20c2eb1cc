"""JSON-RPC's error shape for what /mcp refuses before the MCP SDK sees the request, with the
REST API's status codes.

/mcp runs through the API's own chain (api/middleware.py), whose refusals (a bad key, a key
without ``memory``, the rate limit, a body over 1 MiB, GET, the database unavailable) have the
REST body ``{"error": {"code", "message"}}``. An MCP client reads JSON-RPC: the SDK's client
surfaces a JSON-RPC error's message at any status, and reports any other body as "Server
returned an error response". ``mcp_shaped`` rewrites that body, and only the body, at the
end of the chain: the status and the headers (``Retry-After``, ``WWW-Authenticate``,
``Allow``) stay, and the REST code and status travel in the error's ``data``. The SDK's own
answers pass as they are: JSON-RPC, except its transport's check of the Content-Type (400)
and the endpoint's of a foreign Origin (403, the SDK's text), answered in plain text, as every
client of the SDK's servers sees them.
"""

from __future__ import annotations

from django.http import HttpResponseBase

from api.errors import body_replaced, rest_error_of

INVALID_REQUEST = -32600  # JSON-RPC 2.0: the request was refused as sent
INTERNAL_ERROR = -32603  # JSON-RPC 2.0: the server failed (a 5xx)


def mcp_shaped(response: HttpResponseBase) -> HttpResponseBase:
    """``response`` with a REST error body as a JSON-RPC error (``id`` null: the request's
    id was not read); anything else as is."""
    error = rest_error_of(response)
    if error is None:
        return response
    status = response.status_code
    return body_replaced(response, {"jsonrpc": "2.0", "id": None, "error": {
        "code": INTERNAL_ERROR if status >= 500 else INVALID_REQUEST,
        "message": error.get("message", ""), "data": {"code": error["code"], "status": status}}})
