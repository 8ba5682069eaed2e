"""The ``nous-memory`` command line.

``main`` builds the parser from one module per group of commands (memories, facts,
episodes and conversations, recall and context, jobs); every command module formats
through ``output``, and none of them imports the entry point.
"""

from .main import main

__all__ = ["main"]
