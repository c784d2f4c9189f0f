"""The apps this repository ships in `agents/`, by name, and agents folders made of them.

The suite serves these (and its own test apps, `tests/apps/`), never whatever else the live
`agents/` folder holds: an app a user adds there while following the README's "Writing an app"
(or scaffolds with `agentd new app`) changes no test's outcome. A newly shipped app is added
here; `tests/engine/test_apps.py` checks that each one is tested offline.
"""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
AGENTS = PROJECT_ROOT / "agents"
SHIPPED_APPS = (
    "after_model_rewrite",
    "after_tool_note",
    "before_model_guardrail",
    "before_tool_guardrail",
    "capital_agent",
    "claude_agent",
    "concluding_note",
    "notes_agent",
    "openai_agent",
    "refund_agent",
    "skip_agent",
)


def link_apps(target: Path, sources: list[Path]) -> Path:
    """`target` (made if missing) with a link to each app folder of `sources` (kept if there):
    the agents folder."""
    target.mkdir(parents=True, exist_ok=True)
    for source in sources:
        link = target / source.name
        if not link.exists():
            link.symlink_to(source, target_is_directory=True)
    return target


def shipped_agents_dir(target: Path, *, agents: Path = AGENTS) -> Path:
    """An agents folder at `target` holding the shipped apps of `agents` (the live folder unless
    given), linked, and nothing else it holds."""
    return link_apps(target, [agents / name for name in SHIPPED_APPS])
