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
from app.models import Gemini
from app.models.scripted import ScriptedLlm
from app.tools import exit_loop, get_user_choice, google_search, load_artifacts, load_memory
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
    "unknown_module": ("name: a\ntools:\n  - name: no_such_pkg.tools.f\n", "is refused"),
    "unknown_app_module": (
        "name: a\ntools:\n  - name: APP.nowhere.f\n",
        "no module 'APP.nowhere'",
    ),
    "unknown_attribute": ("name: a\ntools:\n  - name: APP.tools.nothing\n", "no attribute"),
    "stdlib_refused": ("name: a\ntools:\n  - name: os.system\n", "'os.system' is refused"),
    "tool_instance_with_args": (
        "name: a\ntools:\n  - name: load_memory\n    args:\n      x: 1\n",
        "takes no args",
    ),
    "tool_class_bad_args": (
        "name: a\ntools:\n  - name: APP.tools.Greeter\n    args:\n      colour: red\n",
        "cannot be built",
    ),
    "not_a_built_in_tool": ("name: a\ntools:\n  - name: ToolContext\n", "unknown tool"),
    "not_a_tool_class": ("name: a\ntools:\n  - name: APP.schemas.Answer\n", "not a BaseTool"),
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
def test_a_bad_config_is_an_app_load_error_naming_the_app_the_file_and_the_problem(
    app_dir: Path, case: str
) -> None:
    text, problem = BAD_CONFIGS[case]
    path = _write(app_dir, "root_agent.yaml", text)
    with pytest.raises(AppLoadError) as raised:
        from_config(path)
    assert raised.value.type == "app-load-failed"
    detail = str(raised.value.detail)
    assert f"App {app_dir.name!r}, agent config root_agent.yaml: " in detail
    assert problem.replace("APP", app_dir.name) in detail
    assert str(app_dir.parent) not in detail


def test_a_bad_sub_agent_file_is_named_rather_than_its_parent(app_dir: Path) -> None:
    (app_dir / "team").mkdir()
    _write(app_dir, "team/helper.yaml", "name: helper\nbogus: 1\n")
    path = _write(
        app_dir, "root_agent.yaml", "name: a\nsub_agents:\n  - config_path: team/helper.yaml\n"
    )
    with pytest.raises(AppLoadError) as raised:
        from_config(path)
    detail = str(raised.value.detail)
    assert "agent config team/helper.yaml: unknown key 'bogus'" in detail
    assert str(app_dir.parent) not in detail


def test_registry_reports_a_broken_root_agent_yaml_as_app_load_failed(app_dir: Path) -> None:
    _write(app_dir, "root_agent.yaml", "name: a\ntools:\n  - name: no_such_tool\n")
    registry = AppRegistry(app_dir.parent)
    assert [a.name for a in registry.list_apps()] == [app_dir.name]
    with pytest.raises(AppLoadError) as raised:
        registry.load(app_dir.name)
    assert raised.value.type == "app-load-failed"
    assert "root_agent.yaml" in str(raised.value.detail)


# -- the fence around code references (issue 26) ------------------------------------------------

#: Where a config names code, with REF for the reference: each resolves it differently.
REFERENCE_PLACES: dict[str, str] = {
    "tool": "name: a\ntools:\n  - name: REF\n",
    "tool_with_args": "name: a\ntools:\n  - name: REF\n    args: {command: id}\n",
    "callback_with_args": (
        "name: a\nbefore_agent_callbacks:\n  - name: REF\n    args:\n      - value: id\n"
    ),
    "model_code_with_args": "name: a\nmodel_code:\n  name: REF\n  args:\n    - value: id\n",
    "output_schema": "name: a\nmodel: scripted\noutput_schema:\n  name: REF\n",
    "sub_agent_code": "name: a\nmodel: scripted\nsub_agents:\n  - code: REF\n",
    "agent_tool_agent": (
        "name: a\nmodel: scripted\ntools:\n  - name: AgentTool\n    args:\n"
        "      agent: {code: REF}\n"
    ),
}
REFUSED_REFERENCES = [
    "os.system",
    "subprocess.run",
    "builtins.eval",
    "importlib.import_module",
    "yaml.unsafe_load",
    "pydantic.BaseModel",
    "app.invocations.registry.AppRegistry",
    "google.adk.invocations.registry.AppRegistry",
    "app.tools.FunctionTool",
]


@pytest.mark.parametrize("place", sorted(REFERENCE_PLACES))
@pytest.mark.parametrize("reference", REFUSED_REFERENCES)
def test_a_reference_outside_the_app_and_the_safe_names_is_refused_by_name(
    app_dir: Path, place: str, reference: str
) -> None:
    path = _write(app_dir, "root_agent.yaml", REFERENCE_PLACES[place].replace("REF", reference))
    with pytest.raises(AppLoadError) as raised:
        from_config(path)
    assert raised.value.type == "app-load-failed"
    assert f"{reference!r} is refused" in str(raised.value.detail)


def test_yaml_unsafe_load_of_a_python_tag_runs_nothing(app_dir: Path, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    command = f'!!python/object/apply:os.system ["touch {marker}"]'
    path = _write(
        app_dir,
        "root_agent.yaml",
        f"""
        name: a
        model: scripted
        before_agent_callbacks:
          - name: yaml.unsafe_load
            args:
              - value: '{command}'
        """,
    )
    with pytest.raises(AppLoadError) as raised:
        from_config(path)
    assert "'yaml.unsafe_load' is refused" in str(raised.value.detail)
    assert not marker.exists()


TRAP_PY = """
from pathlib import Path

Path(__file__).with_suffix(".imported").touch()


def f(*args, **kwargs):
    return None
"""


@pytest.fixture
def trap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """An importable module (first on the import path) that leaves a marker file when imported."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    folder = tmp_path / "site"
    folder.mkdir()
    name = f"trap_{uuid.uuid4().hex[:12]}"
    (folder / f"{name}.py").write_text(TRAP_PY)
    sys.path.insert(0, str(folder))
    return name, folder / f"{name}.imported"


@pytest.mark.parametrize("place", sorted(REFERENCE_PLACES))
def test_a_refused_reference_is_refused_before_its_module_is_imported(
    app_dir: Path, trap: tuple[str, Path], place: str
) -> None:
    name, imported = trap
    path = _write(app_dir, "root_agent.yaml", REFERENCE_PLACES[place].replace("REF", f"{name}.f"))
    with pytest.raises(AppLoadError) as raised:
        from_config(path)
    assert f"'{name}.f' is refused" in str(raised.value.detail)
    assert name not in sys.modules
    assert not imported.exists()


def test_an_app_folder_that_an_installed_module_shadows_reaches_nothing(
    tmp_path: Path, trap: tuple[str, Path]
) -> None:
    name, imported = trap
    folder = tmp_path / "agents" / name  # the registry appends the agents dir: the trap wins
    folder.mkdir(parents=True)
    (folder / "root_agent.yaml").write_text(f"name: a\ntools:\n  - name: {name}.f\n")
    with pytest.raises(AppLoadError) as raised:
        AppRegistry(folder.parent).load(name)
    assert f"module {name!r} is not the app's own" in str(raised.value.detail)
    assert not imported.exists()


IMPORTS_PY = """
import os
from subprocess import run

from app.tools import load_memory

from APP.tools import lookup as looked_up
"""


@pytest.mark.parametrize(
    ("reference", "problem"),
    [
        ("APP.imports.run", "defined in 'subprocess'"),
        ("APP.imports.os", "names a module"),
        ("APP.imports.os.system", "cannot import module 'APP.imports.os'"),
    ],
)
def test_a_name_the_app_only_imported_from_elsewhere_is_refused(
    app_dir: Path, reference: str, problem: str
) -> None:
    (app_dir / "imports.py").write_text(IMPORTS_PY.replace("APP", app_dir.name))
    path = _write(
        app_dir,
        "root_agent.yaml",
        f"name: a\nbefore_agent_callbacks:\n  - name: {reference}\n    args:\n      - value: id\n",
    )
    with pytest.raises(AppLoadError) as raised:
        from_config(path)
    assert problem.replace("APP", app_dir.name) in str(raised.value.detail)


def test_what_the_app_built_or_defined_may_be_named_through_another_of_its_modules(
    app_dir: Path,
) -> None:
    (app_dir / "imports.py").write_text(IMPORTS_PY.replace("APP", app_dir.name))
    path = _write(
        app_dir,
        "root_agent.yaml",
        "name: a\nmodel: scripted\ntools:\n  - name: APP.imports.load_memory\n"
        "  - name: APP.imports.looked_up\n",
    )
    agent = from_config(path)
    assert isinstance(agent, LlmAgent)
    assert agent.tools == [load_memory, sys.modules[f"{app_dir.name}.tools"].lookup]


def test_the_safe_names_resolve_in_agentd_and_adk_spellings(app_dir: Path) -> None:
    _write(app_dir, "helper.yaml", "name: helper\nmodel: scripted\ndescription: Helps.\n")
    path = _write(
        app_dir,
        "root_agent.yaml",
        """
        name: built_in
        model_code:
          name: google.adk.models.Gemini
          args:
            - name: model
              value: gemini-2.0-flash
        tools:
          - name: google_search
          - name: app.tools.load_artifacts
          - name: google.adk.tools.exit_loop
          - name: app.tools.AgentTool
            args: {agent: helper.yaml}
        """,
    )
    agent = from_config(path)
    assert isinstance(agent, LlmAgent)
    assert isinstance(agent.model, Gemini)
    assert agent.model.model == "gemini-2.0-flash"
    search, artifacts, exit_tool, agent_tool = agent.tools
    assert (search, artifacts, exit_tool) == (google_search, load_artifacts, exit_loop)
    assert isinstance(agent_tool, AgentTool)


FAILING_PY = """
from pathlib import Path


def reads_its_data(args):
    raise FileNotFoundError(2, "No such file", str(Path(__file__).parent / "data" / "x.json"))


def reads_elsewhere(args):
    raise FileNotFoundError(2, "No such file", "/etc/agentd/secret.json")
"""


@pytest.mark.parametrize(
    ("function", "shown"),
    [("reads_its_data", "'data/x.json'"), ("reads_elsewhere", "'secret.json'")],
)
def test_an_error_from_the_apps_code_shows_no_server_path(
    app_dir: Path, function: str, shown: str
) -> None:
    (app_dir / "failing.py").write_text(FAILING_PY)
    path = _write(
        app_dir,
        "root_agent.yaml",
        f"name: a\ntools:\n  - name: APP.failing.{function}\n    args: {{}}\n",
    )
    with pytest.raises(AppLoadError) as raised:
        from_config(path)
    detail = str(raised.value.detail)
    assert f"FileNotFoundError: [Errno 2] No such file: {shown}" in detail
    assert str(app_dir.parent) not in detail
    assert "/etc" not in detail


@pytest.mark.parametrize(
    ("agent_py", "shown"),
    [
        (
            "from pathlib import Path\n(Path(__file__).parent / 'prompts' / 'x.txt').read_text()\n",
            "'prompts/x.txt'",
        ),
        ("def broken(:\n", "SyntaxError"),
        ("x = 1\n", "defines neither"),
    ],
)
def test_an_agent_py_that_fails_to_load_shows_no_server_path(
    app_dir: Path, agent_py: str, shown: str
) -> None:
    (app_dir / "agent.py").write_text(agent_py)
    with pytest.raises(AppLoadError) as raised:
        AppRegistry(app_dir.parent).load(app_dir.name)
    detail = str(raised.value.detail)
    assert shown in detail
    assert str(app_dir.parent) not in detail


def test_a_symlinked_app_folder_reaches_its_modules_under_its_link_name(
    app_dir: Path, tmp_path: Path
) -> None:
    linked = tmp_path / "agents" / f"linked_{uuid.uuid4().hex[:12]}"
    linked.symlink_to(app_dir, target_is_directory=True)
    _write(
        app_dir,
        "root_agent.yaml",
        f"name: a\nmodel: scripted\ntools:\n  - name: {linked.name}.tools.lookup\n",
    )
    agent = from_config(linked / "root_agent.yaml")
    assert isinstance(agent, LlmAgent)
    assert agent.tools == [sys.modules[f"{linked.name}.tools"].lookup]
