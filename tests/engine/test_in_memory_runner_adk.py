"""ADK's InMemoryRunner signature (an agent or an App, plugins) and Runner.close()."""

from typing import Any

from app.agents.llm_agent import Agent
from app.apps import App
from app.memory.in_memory import InMemoryMemoryService
from app.plugins import BasePlugin
from app.runners import InMemoryRunner
from tests.engine.helpers import run_turn, texts


class Recorder(BasePlugin):
    """Notes the hooks it sees."""

    def __init__(self) -> None:
        super().__init__(name="recorder")
        self.seen: list[str] = []

    async def before_run_callback(self, **_: Any) -> None:
        self.seen.append("before_run")

    async def close(self) -> None:
        self.seen.append("close")


def _agent() -> Agent:
    return Agent(name="solo", model="scripted", instruction="Just say 'hello'")


async def test_in_memory_runner_takes_an_app_and_its_plugins_as_adks_does() -> None:
    recorder = Recorder()
    runner = InMemoryRunner(app=App(name="my_app", root_agent=_agent(), plugins=[recorder]))
    assert runner.app_name == "my_app"
    assert isinstance(runner.memory_service, InMemoryMemoryService)
    await runner.session_service.create_session(app_name="my_app", user_id="u", session_id="s")

    events = await run_turn(runner, "hi")

    assert texts(events) == ["hi", "hello"]
    assert recorder.seen == ["before_run"]
    await runner.close()
    assert recorder.seen == ["before_run", "close"]


async def test_in_memory_runner_takes_an_agent_with_plugins_and_a_default_app_name() -> None:
    recorder = Recorder()
    runner = InMemoryRunner(_agent(), plugins=[recorder])
    assert runner.app_name == "InMemoryRunner"
    await runner.session_service.create_session(
        app_name="InMemoryRunner", user_id="u", session_id="s"
    )

    assert texts(await run_turn(runner, "hi")) == ["hi", "hello"]
    assert recorder.seen == ["before_run"]
