"""Scheduled maintenance for nous-memory (APScheduler).

The jobs are thin: each calls a store method that does its work in set-based SQL.
"""
