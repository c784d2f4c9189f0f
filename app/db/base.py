"""Declarative base with a naming convention, and the portable column types every table uses."""

from typing import Any

from sqlalchemy import JSON, Double, MetaData
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeEngine

# A fixed naming convention makes constraint names deterministic, which Alembic needs to drop or
# alter them (and SQLite batch mode needs to recreate tables).
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

#: JSON on SQLite, JSONB on PostgreSQL (indexable, rejects what JSON can't hold, e.g. NUL).
JsonType: TypeEngine[Any] = JSON().with_variant(JSONB(), "postgresql")

#: Epoch seconds as a double: ADK's wire format for times, exact on both backends.
EpochSeconds = Double


class Base(DeclarativeBase):
    """Base of every `Storage*` table."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
