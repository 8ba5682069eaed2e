"""Column shapes the table models share (``models.py``, ``service_tables.py``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column, DateTime, Text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlmodel import Field


def text_array() -> Any:
    return Field(default_factory=list, sa_column=Column(ARRAY(Text), nullable=False))


def key(**kwargs: Any) -> Any:
    return Field(primary_key=True, **kwargs)


def timestamp(**kwargs: Any) -> Any:
    return Field(sa_type=DateTime(timezone=True), **kwargs)  # timestamptz everywhere
