"""Fixtures of the fault tests."""

from collections.abc import Iterator

import pytest

from tests.pgserver import PostgresServer, start_postgres


@pytest.fixture(scope="module")
def cluster() -> Iterator[PostgresServer]:
    """A PostgreSQL cluster of the test module's own: its tests stop and start it, which the
    session-wide `postgres` fixture's other users must never see."""
    server = start_postgres()
    try:
        yield server
    finally:
        server.stop()
