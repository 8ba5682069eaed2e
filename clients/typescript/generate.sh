#!/usr/bin/env bash
# Regenerate the client from the service: openapi.json from the app itself, then the
# types in src/generated/schema.ts from it (openapi-typescript, pinned in package.json).
# Run after any change to the REST API; tests/integration/test_typescript_client.py
# fails while the committed files differ from what this prints.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-../../.venv/bin/python}
"$PYTHON" scripts/openapi.py > openapi.json
node node_modules/openapi-typescript/bin/cli.js openapi.json --default-non-nullable false --output src/generated/schema.ts
