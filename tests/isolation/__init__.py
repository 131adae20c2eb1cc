"""Tenancy: one tenant never sees another (managers, row-level security, every route), API keys."""
