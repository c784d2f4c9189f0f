"""AppRegistry.require: new app folders are found at once, removed ones within the TTL."""

import shutil
from pathlib import Path

import pytest

from app.errors import AppNotFound
from app.invocations import registry as registry_module
from app.invocations.registry import AppRegistry


def test_a_new_folder_is_found_at_once_and_a_removed_one_after_the_ttl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr("app.invocations.registry.time.monotonic", lambda: clock[0])
    registry = AppRegistry(tmp_path)
    with pytest.raises(AppNotFound):
        registry.require("late")
    (tmp_path / "late").mkdir()
    (tmp_path / "late" / "README.md").write_text("# Late app\n")
    assert registry.require("late").description == "Late app"  # not cached as missing
    shutil.rmtree(tmp_path / "late")
    clock[0] += registry_module.REQUIRE_TTL_SECONDS / 2
    assert registry.require("late").name == "late"  # still trusted within the TTL
    clock[0] += registry_module.REQUIRE_TTL_SECONDS
    with pytest.raises(AppNotFound):
        registry.require("late")
