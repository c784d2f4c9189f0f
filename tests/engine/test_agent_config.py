"""Agents from ADK agent config files (`root_agent.yaml`): the fields, built-in and dotted tools,
tools built from `args`, sub-agents by file and by code, callbacks by dotted name, an app folder
holding only a config, and every way a config can be wrong."""

import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from google.genai import types

from app.agents import LlmAgent
from app.agents.config_agent_utils import from_config
from app.errors import AppLoadError
from app.invocations.registry import AppRegistry
from app.invocations.runner import InMemoryRunner
from app.models.scripted import ScriptedLlm
from app.tools import exit_loop, get_user_choice, load_memory
from app.tools.agent_tool import AgentTool
from tests.engine.helpers import run_turn, texts

TOOLS_PY = '''
from typing import Any

from app.models.scripted import ScriptedLlm
from app.tools import BaseTool, ToolContext
from app.tools.tool_configs import ToolArgsConfig


def lookup(city: str) -> str:
    """Looks a city up."""
    return f"{city} is lovely"


class Greeter(BaseTool):
    """A tool class configured by args."""

    def __init__(self, greeting: str = "hi", name: str = "greet") -> None:
        super().__init__(name=name, description="Greets.")
        self.greeting = greeting

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        return self.greeting


greeter = Greeter(greeting="hello")


def make_greeter(args: ToolArgsConfig) -> Greeter:
    return Greeter(**args.as_kwargs())


def make_model(name: str, *, rules: tuple = ()) -> ScriptedLlm:
    return ScriptedLlm(model=name, rules=list(rules))


def exploding_tool(args: ToolArgsConfig) -> Greeter:
    raise RuntimeError("no tool today")
'''

CALLBACKS_PY = """
from google.genai import types

from app.models import LlmResponse

seen: list[str] = []


def note_agent(callback_context):
    seen.append("before_agent:" + callback_context.agent_name)
    return None


def block_model(callback_context, llm_request):
    return LlmResponse(
        content=types.Content(role="model", parts=[types.Part(text="blocked by config")])
    )
"""

SCHEMAS_PY = """
from pydantic import BaseModel


class Question(BaseModel):
    city: str


class Answer(BaseModel):
    city: str
    country: str
"""

AGENTS_PY = """
from app.agents import LlmAgent

coded = LlmAgent(name="coded", model="scripted", description="Defined in Python.")
not_an_agent = 42
"""


@pytest.fixture
def app_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An app folder under a fresh agents dir that is on the import path (restored afterwards).

    Each test gets its own app name, so the modules it imports never collide with another test's.
    """
    monkeypatch.setattr(sys, "path", list(sys.path))
    agents = tmp_path / "agents"
    folder = agents / f"cfg_{uuid.uuid4().hex[:12]}"
    folder.mkdir(parents=True)
    sys.path.insert(0, str(agents))
    for name, text in {
        "tools.py": TOOLS_PY,
        "callbacks.py": CALLBACKS_PY,
        "agents.py": AGENTS_PY,
        "schemas.py": SCHEMAS_PY,
    }.items():
        (folder / name).write_text(text)
    return folder


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text).replace("APP", folder.name))
    return path


def test_config_reads_static_instruction_and_schemas_by_code_reference(app_dir: Path) -> None:
    path = _write(
        app_dir,
        "root_agent.yaml",
        """
        name: typed
        model: scripted
        static_instruction: You are a {role} guide.
        instruction: Answer about {city?}.
        input_schema:
          name: APP.schemas.Question
        output_schema:
          name: APP.schemas.Answer
        output_key: answer
        """,
    )
    agent = from_config(path)
    assert isinstance(agent, LlmAgent)
    assert agent.static_instruction == "You are a {role} guide."
    assert agent.input_schema is not None
    assert agent.output_schema is not None
    assert agent.input_schema.__name__ == "Question"
    assert agent.output_schema.__name__ == "Answer"
    assert agent.output_schema.__module__ == f"{app_dir.name}.schemas"


def test_config_sets_the_llm_agent_fields_it_names(app_dir: Path) -> None:
    path = _write(
        app_dir,
        "root_agent.yaml",
        """
        agent_class: LlmAgent
        name: helper
        model: scripted
        description: Helps.
        instruction: Just say 'hi'
        global_instruction: Be brief.
        output_key: answer
        include_contents: none
        disallow_transfer_to_parent: true
        disallow_transfer_to_peers: true
        generate_content_config:
          temperature: 0.2
          max_output_tokens: 64
        """,
    )
    agent = from_config(path)
    assert isinstance(agent, LlmAgent)
    assert (agent.name, agent.model, agent.description) == ("helper", "scripted", "Helps.")
    assert (agent.instruction, agent.global_instruction) == ("Just say 'hi'", "Be brief.")
    assert (agent.output_key, agent.include_contents) == ("answer", "none")
    assert agent.disallow_transfer_to_parent
    assert agent.disallow_transfer_to_peers
    assert agent.generate_content_config == types.GenerateContentConfig(
        temperature=0.2, max_output_tokens=64
    )


def test_model_code_builds_the_model_with_its_args(app_dir: Path) -> None:
    path = _write(
        app_dir,
        "root_agent.yaml",
        """
        name: coded_model
        model_code:
          name: APP.tools.make_model
          args:
            - value: scripted-custom
            - name: rules
              value: []
        """,
    )
    agent = from_config(path)
    assert isinstance(agent, LlmAgent)
    assert isinstance(agent.model, ScriptedLlm)
    assert agent.model.model == "scripted-custom"


def test_bare_tool_names_are_built_ins_and_dotted_names_are_the_apps_own(app_dir: Path) -> None:
    path = _write(
        app_dir,
        "root_agent.yaml",
        """
        name: tooled
        model: scripted
        tools:
          - name: exit_loop
          - name: load_memory
          - name: get_user_choice
          - name: APP.tools.lookup
          - name: APP.tools.greeter
        """,
    )
    agent = from_config(path)
    assert isinstance(agent, LlmAgent)
    tools_module = sys.modules[f"{app_dir.name}.tools"]
    assert agent.tools == [
        exit_loop,
        load_memory,
        get_user_choice,
        tools_module.lookup,
        tools_module.greeter,
    ]


def test_tools_with_args_are_built_by_their_class_or_their_function(app_dir: Path) -> None:
    _write(app_dir, "helper.yaml", "name: helper\nmodel: scripted\ndescription: Helps out.\n")
    path = _write(
        app_dir,
        "root_agent.yaml",
        """
        name: builder
        model: scripted
        tools:
          - name: APP.tools.Greeter
            args:
              greeting: salut
              name: salute
          - name: APP.tools.make_greeter
            args:
              greeting: ciao
          - name: AgentTool
            args:
              agent: helper.yaml
              skip_summarization: true
        """,
    )
    agent = from_config(path)
    assert isinstance(agent, LlmAgent)
    by_class, by_function, agent_tool = agent.tools
    assert (getattr(by_class, "name", None), getattr(by_class, "greeting", None)) == (
        "salute",
        "salut",
    )
    assert getattr(by_function, "greeting", None) == "ciao"
    assert isinstance(agent_tool, AgentTool)
    assert (agent_tool.agent.name, agent_tool.skip_summarization) == ("helper", True)


def test_sub_agents_come_from_config_files_and_from_code(app_dir: Path) -> None:
    (app_dir / "team").mkdir()
    _write(app_dir, "team/researcher.yaml", "name: researcher\ndescription: Looks things up.\n")
    path = _write(
        app_dir,
        "root_agent.yaml",
        """
        name: lead
        model: scripted
        sub_agents:
          - config_path: team/researcher.yaml
          - code: APP.agents.coded
        """,
    )
    lead = from_config(path)
    researcher, coded = lead.sub_agents
    assert (researcher.name, researcher.description) == ("researcher", "Looks things up.")
    assert coded is sys.modules[f"{app_dir.name}.agents"].coded
    assert researcher.parent_agent is lead
    assert coded.parent_agent is lead
    assert isinstance(researcher, LlmAgent)
    assert researcher.canonical_model.model == "scripted"  # inherited from the lead


async def test_callbacks_named_by_dotted_path_run(app_dir: Path) -> None:
    path = _write(
        app_dir,
        "root_agent.yaml",
        """
        name: guarded
        model: scripted
        before_agent_callbacks:
          - name: APP.callbacks.note_agent
        before_model_callbacks:
          - name: APP.callbacks.block_model
        """,
    )
    runner = InMemoryRunner(from_config(path), app_name="cfg")
    await runner.session_service.create_session(app_name="cfg", user_id="u", session_id="s")
    events = await run_turn(runner, "hello")
    assert texts(events)[-1] == "blocked by config"
    assert sys.modules[f"{app_dir.name}.callbacks"].seen == ["before_agent:guarded"]


async def test_registry_serves_an_app_folder_holding_only_root_agent_yaml(
    app_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(app_dir.parent)])
    _write(
        app_dir,
        "root_agent.yaml",
        """
        name: city_guide
        model: scripted
        instruction: Answer about cities.
        tools:
          - name: APP.tools.lookup
        """,
    )
    (app_dir / "README.md").write_text("# A city guide from a config file\n")
    registry = AppRegistry(app_dir.parent)
    assert [(a.name, a.description) for a in registry.list_apps()] == [
        (app_dir.name, "A city guide from a config file")
    ]
    app = registry.load(app_dir.name)
    assert app.name == app_dir.name
    assert app.root_agent.name == "city_guide"
    assert str(app_dir.parent.resolve()) in sys.path  # the registry put the agents dir there

    runner = InMemoryRunner(app=app)
    await runner.session_service.create_session(app_name=app.name, user_id="u", session_id="s")
    events = await run_turn(runner, "Tell me about Lyon")
    assert texts(events)[-1] == "Lyon is lovely"


def test_agent_py_wins_over_root_agent_yaml(app_dir: Path) -> None:
    _write(app_dir, "root_agent.yaml", "name: from_yaml\nmodel: scripted\n")
    _write(
        app_dir,
        "agent.py",
        "from app.agents import LlmAgent\n"
        "root_agent = LlmAgent(name='from_python', model='scripted')\n",
    )
    assert AppRegistry(app_dir.parent).load(app_dir.name).root_agent.name == "from_python"


BAD_CONFIGS: dict[str, tuple[str, str]] = {
    "yaml_syntax": ("name: [unclosed\n", "not valid YAML"),
    "not_a_mapping": ("- name: a\n", "YAML mapping"),
    "unknown_key": ("name: a\nmodel: scripted\ntemprature: 1\n", "unknown key 'temprature'"),
    "missing_name": ("model: scripted\ninstruction: hi\n", "missing required key 'name'"),
    "wrong_type": ("name: a\ninclude_contents: some\n", "include_contents"),
    "unknown_tool": ("name: a\ntools:\n  - name: no_such_tool\n", "unknown tool 'no_such_tool'"),
    "unknown_module": (
        "name: a\ntools:\n  - name: no_such_pkg.tools.f\n",
        "cannot import module 'no_such_pkg.tools'",
    ),
    "unknown_attribute": ("name: a\ntools:\n  - name: APP.tools.nothing\n", "no attribute"),
    "stdlib_refused": ("name: a\ntools:\n  - name: os.system\n", "standard library"),
    "tool_instance_with_args": (
        "name: a\ntools:\n  - name: load_memory\n    args:\n      x: 1\n",
        "takes no args",
    ),
    "tool_class_bad_args": (
        "name: a\ntools:\n  - name: APP.tools.Greeter\n    args:\n      colour: red\n",
        "cannot be built",
    ),
    "not_a_tool_class": ("name: a\ntools:\n  - name: ToolContext\n", "not a BaseTool"),
    "unknown_callback": (
        "name: a\nbefore_model_callbacks:\n  - name: APP.callbacks.missing\n",
        "no attribute 'missing'",
    ),
    "callback_not_callable": (
        "name: a\nbefore_model_callbacks:\n  - name: APP.agents.not_an_agent\n",
        "not callable",
    ),
    "sub_agent_code_not_an_agent": (
        "name: a\nsub_agents:\n  - code: APP.agents.not_an_agent\n",
        "not an agent",
    ),
    "sub_agent_ref_needs_one_key": ("name: a\nsub_agents:\n  - {}\n", "exactly one"),
    "config_path_escapes": (
        "name: a\nsub_agents:\n  - config_path: ../elsewhere.yaml\n",
        "leaves the folder",
    ),
    "config_path_absolute": (
        "name: a\nsub_agents:\n  - config_path: /etc/agent.yaml\n",
        "must be relative",
    ),
    "config_path_missing": (
        "name: a\nsub_agents:\n  - config_path: nowhere.yaml\n",
        "no such file",
    ),
    "config_path_cycle": ("name: a\nsub_agents:\n  - config_path: root_agent.yaml\n", "cycle"),
    "other_agent_class": ("agent_class: SequentialAgent\nname: a\n", "not supported"),
    "unknown_model": ("name: a\nmodel: no-such-model\n", "model 'no-such-model'"),
    "model_and_model_code": (
        "name: a\nmodel: scripted\nmodel_code:\n  name: APP.tools.lookup\n",
        "only one of",
    ),
    "tool_function_raises": (
        "name: a\ntools:\n  - name: APP.tools.exploding_tool\n    args: {x: 1}\n",
        "no tool today",
    ),
    "model_code_not_a_model": (
        "name: a\nmodel_code:\n  name: APP.agents.not_an_agent\n",
        "not a model",
    ),
    "duplicate_agent_names": (
        "name: a\nsub_agents:\n  - code: APP.agents.coded\n  - code: APP.agents.coded\n",
        "cannot be built",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_a_bad_config_is_an_app_load_error_naming_the_file_and_the_problem(
    app_dir: Path, case: str
) -> None:
    text, problem = BAD_CONFIGS[case]
    path = _write(app_dir, "root_agent.yaml", text)
    with pytest.raises(AppLoadError) as raised:
        from_config(path)
    assert raised.value.type == "app-load-failed"
    assert str(path) in str(raised.value.detail)
    assert problem.replace("APP", app_dir.name) in str(raised.value.detail)


def test_a_bad_sub_agent_file_is_named_rather_than_its_parent(app_dir: Path) -> None:
    bad = _write(app_dir, "helper.yaml", "name: helper\nbogus: 1\n")
    path = _write(
        app_dir, "root_agent.yaml", "name: a\nsub_agents:\n  - config_path: helper.yaml\n"
    )
    with pytest.raises(AppLoadError) as raised:
        from_config(path)
    assert str(bad) in str(raised.value.detail)
    assert "unknown key 'bogus'" in str(raised.value.detail)


def test_registry_reports_a_broken_root_agent_yaml_as_app_load_failed(app_dir: Path) -> None:
    _write(app_dir, "root_agent.yaml", "name: a\ntools:\n  - name: no_such_tool\n")
    registry = AppRegistry(app_dir.parent)
    assert [a.name for a in registry.list_apps()] == [app_dir.name]
    with pytest.raises(AppLoadError) as raised:
        registry.load(app_dir.name)
    assert raised.value.type == "app-load-failed"
    assert "root_agent.yaml" in str(raised.value.detail)
