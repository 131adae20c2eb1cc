"""The test run's bootstrap: a pytest plugin (``-p memoryhub.infra.pytest_plugin`` in
pyproject's addopts) that starts the embedded PostgreSQL before pytest-django loads the
settings.

pytest-django imports the settings in its own ``pytest_load_initial_conftests``, before any
conftest.py is imported, so a conftest is too late; a plugin named with ``-p`` is imported
earlier, and ``tryfirst`` puts this hook ahead of pytest-django's.
"""

from __future__ import annotations

import os

import pytest

from memoryhub.infra.bootstrap import bootstrap


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> None:
    # The settings' default is "auto" (the local model where it is installed): the tests
    # expect hashing's deterministic vectors, whatever this machine has installed. Set
    # before the settings are read, and inherited by the servers and workers tests start;
    # the embedder's own tests build their providers themselves.
    os.environ.setdefault("EMBEDDINGS_PROVIDER", "hashing")
    bootstrap()
