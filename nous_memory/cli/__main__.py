"""``python -m nous_memory.cli``: the same as the ``nous-memory`` command."""

from .main import main

raise SystemExit(main())
