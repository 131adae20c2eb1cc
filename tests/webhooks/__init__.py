"""Webhooks: the admin API, signed and retried delivery, and a real local receiver."""
