"""Adapters that plug the store into the frameworks assistants are built on.

Each module needs its framework installed (``pip install 'nous-memory[openai-agents]'``,
``[langchain]``, ``[hermes]``) and imports it at the top, so import only the one you use.
The core never imports this package (the layers contract in ``pyproject.toml``).
"""
