"""API keys: `agentd_<id>_<secret>`; the database keeps the id and the secret's sha256 only.

Secrets are 32 random bytes, so a plain sha256 (not a slow password hash) is the right tool: it
cannot be brute-forced and costs nothing per request. Lookups go by id and compare digests in
constant time. Revoking sets `revoke_time`; a revoked key is refused at once on every replica.
Each method is one unit of work whose statements live in `ApiKeyRepository`.
"""

import dataclasses
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.db.repositories.security import ApiKeyRepository
from app.db.uow import Db, UnitOfWork, from_row
from app.security.principal import Principal

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

PREFIX = "agentd"


@dataclass(frozen=True)
class CreatedKey:
    """A new key: the secret is shown once, never stored."""

    id: str
    token: str


@dataclass(frozen=True)
class ApiKey:
    """A key as listed: its scope and lifetime, never its secret or digest."""

    id: str
    name: str
    apps: list[str] | None  # None: every app
    user_id: str | None  # None: every user
    admin: bool
    create_time: float
    revoke_time: float | None  # None: active


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiKeyService:
    """Create, list, revoke and verify API keys."""

    def __init__(self, db_engine: "AsyncEngine") -> None:
        self._uow = UnitOfWork(db_engine)

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
        row = {
            "id": key_id,
            "name": name,
            "secret_sha256": _digest(secret),
            "apps": sorted(apps) if apps else None,
            "user_id": user_id,
            "admin": admin,
            "create_time": time.time(),
        }
        await self._uow.write("create_api_key", lambda db: ApiKeyRepository(db).insert(row))
        return CreatedKey(id=key_id, token=f"{PREFIX}_{key_id}_{secret}")

    async def list_keys(self) -> list[ApiKey]:
        """Every key (revoked ones too), oldest first."""
        rows = await self._uow.read(lambda db: ApiKeyRepository(db).all())
        return [from_row(ApiKey, row) for row in rows]

    async def revoke(self, key_id: str) -> bool:
        """Revoke a key; False if there is no such (unrevoked) key."""
        now = time.time()
        return await self._uow.write(
            "revoke_api_key", lambda db: ApiKeyRepository(db).revoke(key_id, now=now)
        )

    async def revoke_matching(self, id_or_key: str) -> tuple[ApiKey, bool] | None:
        """Revoke the key named by its id or by its whole string (`agentd keys revoke`): the key
        and whether this call revoked it (False: it was revoked already); None if none matches.

        A whole key string must carry the key's secret: a guessed id with a wrong secret
        revokes nothing, as it would authenticate nothing.
        """
        key_id, secret = id_or_key, None
        if id_or_key.startswith(f"{PREFIX}_"):
            key_id, _, secret = id_or_key.removeprefix(f"{PREFIX}_").partition("_")
        now = time.time()

        def revoke(db: Db) -> tuple[ApiKey, bool] | None:
            keys = ApiKeyRepository(db)
            row = keys.get(key_id)
            if row is None:
                return None
            if secret is not None and not hmac.compare_digest(row.secret_sha256, _digest(secret)):
                return None
            revoked = keys.revoke(key_id, now=now)
            key = from_row(ApiKey, row)
            if revoked:
                key = dataclasses.replace(key, revoke_time=now)
            return key, revoked

        return await self._uow.write("revoke_api_key", revoke)

    async def verify(self, token: str) -> Principal | None:
        """The principal of a presented key, or None if it is unknown, malformed or revoked."""
        prefix, _, rest = token.partition("_")
        key_id, _, secret = rest.partition("_")
        if prefix != PREFIX or not key_id or not secret or len(token) > 256:
            return None
        # Every request of an authenticated deployment passes here: one read unit, one lookup by id.
        row = await self._uow.read(lambda db: ApiKeyRepository(db).get(key_id))
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
