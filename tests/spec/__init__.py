"""The spec, black-box: what the API contract (api-v1.md) promises an outside client, over HTTP."""
