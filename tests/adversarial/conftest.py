"""The adversarial suite uses the integration fixtures (real PostgreSQL, real model)."""

from tests.integration.conftest import client  # noqa: F401 - a fixture, by name
