"""Every statement on API keys: the one module that reads or writes the `api_keys` table."""

from typing import Any, cast

from sqlalchemy import Table, bindparam, insert, select, update

from app.db.sqlite import register
from app.db.tables import StorageApiKey
from app.db.uow import Db

_keys = cast(Table, StorageApiKey.__table__)

_INSERT_KEY = register(insert(_keys))
_KEY_BY_ID = register(select(_keys).where(_keys.c.id == bindparam("k_id")))
# Never the digest: a listing is printed and has no use for it.
_ALL_KEYS = register(
    select(
        _keys.c.id,
        _keys.c.name,
        _keys.c.apps,
        _keys.c.user_id,
        _keys.c.admin,
        _keys.c.create_time,
        _keys.c.revoke_time,
    ).order_by(_keys.c.create_time, _keys.c.id)
)
_REVOKE_KEY = register(
    update(_keys)
    .where(_keys.c.id == bindparam("k_id"), _keys.c.revoke_time.is_(None))
    .values(revoke_time=bindparam("v_now"))
)


class ApiKeyRepository:
    """Statements on the API key table, run on the `Db` of the caller's unit of work."""

    def __init__(self, db: Db) -> None:
        self._db = db

    def insert(self, row: dict[str, Any]) -> None:
        """Insert a key row (DuplicateKey if its id is taken)."""
        self._db.execute(_INSERT_KEY, [row])

    def get(self, key_id: str) -> Any | None:
        """The key row with this id (revoked or not), or None."""
        return self._db.execute(_KEY_BY_ID, {"k_id": key_id}).first()

    def all(self) -> list[Any]:
        """Every key row without its digest (revoked ones too), oldest first."""
        return list(self._db.execute(_ALL_KEYS).all())

    def revoke(self, key_id: str, *, now: float) -> bool:
        """Set the key's revoke time; False if there is no such unrevoked key."""
        result = self._db.execute(_REVOKE_KEY, {"k_id": key_id, "v_now": now})
        return bool(result.rowcount)


__all__ = ["ApiKeyRepository"]
