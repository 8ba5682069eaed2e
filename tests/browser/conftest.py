"""The browser suite uses the integration fixtures (real PostgreSQL, real model)."""
