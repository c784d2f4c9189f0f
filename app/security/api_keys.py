"""API keys: `agentd_<id>_<secret>`; the database keeps the id and the secret's sha256 only.

Secrets are 32 random bytes, so a plain sha256 (not a slow password hash) is the right tool: it
cannot be brute-forced and costs nothing per request. Lookups go by id and compare digests in
constant time. Revoking sets `revoke_time`; a revoked key is refused at once on every replica.
"""

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from typing import cast

from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db import fast
from app.db.engine import create_sessionmaker, write_options
from app.db.tables import StorageApiKey
from app.db.units import Units
from app.security.principal import Principal

PREFIX = "agentd"

_keys = cast(Table, StorageApiKey.__table__)
_KEY_BY_ID = select(_keys).where(_keys.c.id == bindparam("k_id"))


@dataclass(frozen=True)
class CreatedKey:
    """A new key: the secret is shown once, never stored."""

    id: str
    token: str


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiKeyService:
    """Create, list, revoke and verify API keys."""

    def __init__(self, db_engine: AsyncEngine) -> None:
        self._units = Units(db_engine)
        self._sessionmaker = create_sessionmaker(db_engine)

    async def create(
        self,
        *,
        name: str,
        apps: list[str] | None = None,
        user_id: str | None = None,
        admin: bool = False,
    ) -> CreatedKey:
        """A new key bound to `apps` (None: all) and `user_id` (None: all users)."""
        key_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        async with self._sessionmaker() as db, db.begin():
            await db.connection(execution_options=write_options)
            db.add(
                StorageApiKey(
                    id=key_id,
                    name=name,
                    secret_sha256=_digest(secret),
                    apps=sorted(apps) if apps else None,
                    user_id=user_id,
                    admin=admin,
                    create_time=time.time(),
                )
            )
        return CreatedKey(id=key_id, token=f"{PREFIX}_{key_id}_{secret}")

    async def list_keys(self) -> list[StorageApiKey]:
        """Every key (revoked ones too), oldest first."""
        async with self._sessionmaker() as db:
            return list(
                (await db.scalars(select(StorageApiKey).order_by(StorageApiKey.create_time))).all()
            )

    async def revoke(self, key_id: str) -> bool:
        """Revoke a key; False if there is no such (unrevoked) key."""
        async with self._sessionmaker() as db, db.begin():
            await db.connection(execution_options=write_options)
            result = await db.execute(
                update(StorageApiKey)
                .where(StorageApiKey.id == key_id, StorageApiKey.revoke_time.is_(None))
                .values(revoke_time=time.time())
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    async def verify(self, token: str) -> Principal | None:
        """The principal of a presented key, or None if it is unknown, malformed or revoked."""
        prefix, _, rest = token.partition("_")
        key_id, _, secret = rest.partition("_")
        if prefix != PREFIX or not key_id or not secret or len(token) > 256:
            return None
        # Every request of an authenticated deployment passes here: one prebuilt Core statement on
        # a plain connection, no ORM identity map.
        row = await self._units.read(lambda db: fast.first(db, _KEY_BY_ID, {"k_id": key_id}))
        if row is None or row.revoke_time is not None:
            return None
        if not hmac.compare_digest(row.secret_sha256, _digest(secret)):
            return None
        return Principal(
            id=f"key:{row.id}",
            kind="api_key",
            apps=frozenset(row.apps) if row.apps else None,
            user_id=row.user_id,
            admin=row.admin,
        )
