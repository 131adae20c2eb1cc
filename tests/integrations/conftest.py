"""mem0's client (tests/integrations/test_mem0.py) reads two settings when it is imported:
``MEM0_TELEMETRY`` (on by default: it would post usage events to PostHog) and ``MEM0_DIR``
(where it writes its config, ``~/.mem0`` by default). The tests keep both to themselves."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-"))
