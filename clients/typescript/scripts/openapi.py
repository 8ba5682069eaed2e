"""Print the service's own OpenAPI document, as a deployment without keys serves it.

The TypeScript types are generated from this output (``generate.sh``); settings from the
environment are ignored so that every machine prints the same document.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

for name in [n for n in os.environ if n.startswith("NOUS_MEMORY_")]:
    del os.environ[name]

from nous_memory.api import create_app  # noqa: E402  (after the environment is cleared)
from nous_memory.config import Settings  # noqa: E402

document = create_app(settings=Settings(data_dir=Path("/nonexistent-unused"))).openapi()
sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
