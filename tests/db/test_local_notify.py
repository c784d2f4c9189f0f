"""SQLite's notifications between processes (`app.db.local_notify`), on real sockets: what a
listener hears, what a sender skips, a dead process's socket cleaned up, and a write unit's
notification sent only once it committed."""

import asyncio
import socket
from pathlib import Path

import pytest
from sqlalchemy import text

from app.db.engine import create_db_engine
from app.db.local_notify import LocalListener, after_commit, notify_directory, send
from app.db.uow import Db, UnitOfWork, local_notify_directory


async def _heard(received: list[str], count: int) -> None:
    async with asyncio.timeout(5):
        while len(received) < count:
            await asyncio.sleep(0.01)


async def test_each_listener_hears_what_is_sent_but_a_sender_skips_itself(tmp_path: Path) -> None:
    directory = tmp_path / "notify"
    heard: dict[str, list[str]] = {"a": [], "b": []}
    connects: list[str] = []

    def listening(name: str) -> LocalListener:
        return LocalListener(
            directory, {"free": heard[name].append}, on_connect=lambda: connects.append(name)
        )

    listeners = {name: listening(name) for name in heard}
    for listener in listeners.values():
        await listener.start()
    try:
        assert connects == ["a", "b"]
        send(directory, [("free", "1 owner"), ("other", "ignored")])
        await _heard(heard["a"], 1)
        await _heard(heard["b"], 1)
        listeners["a"].notify([("free", "from a")])
        # Sent after a's notification from the same process socket, so arriving in order: had a
        # sent to itself, "from a" would be in a's list before "marker".
        send(directory, [("free", "marker")])
        await _heard(heard["a"], 2)
        await _heard(heard["b"], 3)
        assert heard == {"a": ["1 owner", "marker"], "b": ["1 owner", "from a", "marker"]}
    finally:
        for listener in listeners.values():
            await listener.stop()
    assert list(directory.iterdir()) == []


async def test_a_dead_processs_socket_is_removed_by_the_next_send(tmp_path: Path) -> None:
    directory = tmp_path / "notify"
    directory.mkdir()
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dead.bind(str(directory / "123-dead.sock"))
    dead.close()  # bound, then its process went away without unlinking
    heard: list[str] = []
    live = LocalListener(directory, {"free": heard.append}, on_connect=lambda: None)
    await live.start()
    try:
        send(directory, [("free", "x")])
        await _heard(heard, 1)
        assert sorted(p.name for p in directory.iterdir()) == [live.name]
    finally:
        await live.stop()


def test_nothing_is_sent_where_nobody_listens(tmp_path: Path) -> None:
    send(tmp_path / "never-made", [("free", "x")])  # no directory, no error


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast-path", "sqlalchemy"])
async def test_a_write_units_notification_leaves_after_its_commit_and_never_on_rollback(
    tmp_path: Path, fast_path: bool
) -> None:
    database = tmp_path / "agentd.db"
    engine = create_db_engine(f"sqlite+aiosqlite:///{database}", sqlite_fast_path=fast_path)
    uow = UnitOfWork(engine)
    directory = local_notify_directory(engine)
    assert directory is not None
    assert directory == notify_directory(database)
    heard: list[str] = []
    listener = LocalListener(directory, {"free": heard.append}, on_connect=lambda: None)
    await listener.start()
    try:
        await uow.write("setup", lambda db: db.execute(text("CREATE TABLE t (x INTEGER)")))

        def committed(db: Db) -> None:
            db.execute(text("INSERT INTO t VALUES (1)"))
            after_commit("free", "committed")

        await uow.write("insert", committed)
        await _heard(heard, 1)

        def refused(_db: Db) -> None:
            after_commit("free", "rolled back")
            raise RuntimeError("the unit fails")

        with pytest.raises(RuntimeError):
            await uow.write("fail", refused)
        await uow.write("again", committed)
        await _heard(heard, 2)
        # Datagrams arrive in order: a notification of the failed unit would sit between.
        assert heard == ["committed", "committed"]
    finally:
        await listener.stop()
        await engine.dispose()


async def test_a_folder_it_may_not_use_leaves_the_process_not_listening(tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the folder would be")
    connects: list[bool] = []
    listener = LocalListener(blocked, {}, on_connect=lambda: connects.append(True))
    await listener.start()  # no exception: the process serves on, polling
    assert listener.connects == 0
    assert connects == []
    await listener.stop()
