"""The README's configuration table is the one rendered from `app.settings.Settings`."""

from app.settings import Settings
from scripts.settings_reference import COMMAND, README, render_table, replace_table


def test_every_setting_has_a_description() -> None:
    undescribed = [name for name, field in Settings.model_fields.items() if not field.description]
    assert undescribed == [], (
        f"give these settings a description= in app/settings.py: {undescribed}"
    )


def test_the_readme_table_is_the_one_rendered_from_the_settings_class() -> None:
    readme = README.read_text()
    assert replace_table(readme, render_table()) == readme, (
        f"README.md's settings table is out of date: run `{COMMAND}`"
    )


def test_the_table_names_every_setting_with_its_default() -> None:
    table = render_table()
    for name in Settings.model_fields:
        assert f"| `AGENTD_{name.upper()}` |" in table
    assert "| `AGENTD_AUTH` | `none` |" in table
    assert "| `AGENTD_MAX_REQUEST_BYTES` | `8388608` |" in table
    assert "| `AGENTD_ACTION_TIMEOUT_SECONDS` | unset |" in table
