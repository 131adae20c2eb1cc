"""The web pages: what a person and an admin see and may do (test client, and Chromium)."""
