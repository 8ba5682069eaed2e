"""Scheduled maintenance for nous-memory (APScheduler), reserved for the nightly jobs.

No job ships yet: trim, archive and procedure compression arrive with their issue. The
design keeps jobs thin: each will call a store method that works in set-based SQL.
"""
