#!/usr/bin/env python
"""Django's command-line utility for MemoryHub.

Starts the embedded PostgreSQL first when ``DATABASE_URL`` is unset (memoryhub.infra.bootstrap).
"""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    from memoryhub.infra.bootstrap import bootstrap

    bootstrap()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
