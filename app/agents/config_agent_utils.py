"""Agents from YAML config files (ADK's Agent Config): `from_config("root_agent.yaml")`.

A config is an `LlmAgentConfig` (`app/agents/llm_agent_config.py`). Names in it resolve as ADK
resolves them, inside a fence: a dotted name (a tool, a callback, `model_code`, a schema, a
sub-agent's `code`, AgentTool's `agent`) is `module.attr`, and it may name only

- the app's own modules: `<app>.<module>.<attr>`, where `<app>` is the folder holding the root
  config (the app registry puts the agents directory on the import path, so `my_app.tools.lookup`
  names `<agents dir>/my_app/tools.py`); the module must come from that folder (an installed
  module of the same name is refused, not imported), and a function or class it names must be
  defined there, not merely imported into it (`from subprocess import run` in the app's
  `tools.py` does not make `my_app.tools.run` nameable);
- `SAFE_CONFIG_NAMES`, agentd's authoring API that YAML data can configure but not turn into
  code (built-in tools, AgentTool, ExampleTool, the model and agent classes); ADK's
  `google.adk.` spelling of them is read as `app.`. A bare tool name is one of its tools.

Anything else (the standard library, `yaml.unsafe_load`, any other installed package, agentd's
internals) is refused by name before anything is imported: importing a module runs its code, and
a code reference with `args` calls what it names with values from the YAML. ADK refuses the
standard library and a few packages; a list of what is allowed cannot be walked around by the next
package with a `load`-like function. A tool with `args` is a tool class built with them, or a
function that builds a tool from them (it receives the `ToolArgsConfig`, as in ADK). Sub-agents
are other config files (`config_path`, relative to the referencing file and inside its folder) or
agents defined in code (`code`).

Every problem (YAML syntax, an unknown or missing key, a refused or unresolved name, a cycle of
config files) is an `AppLoadError` naming the app, the file (relative to the app's folder) and the
problem, so a served app answers the `app-load-failed` problem. It never shows a server path:
error text from the app's code or a library passes through `describe_failure`, which keeps only
paths relative to the app's folder and the names of other files.
"""

import importlib
import importlib.util
import inspect
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml
from pydantic import ValidationError

from app.agents.base_agent import BaseAgent
from app.agents.common_configs import AgentRefConfig, CodeConfig
from app.agents.llm_agent import LlmAgent, ToolUnion
from app.agents.llm_agent_config import LlmAgentConfig
from app.errors import AppLoadError
from app.models.llm import BaseLlm
from app.models.registry import LLMRegistry
from app.tools.agent_tool import AgentTool
from app.tools.base_tool import BaseTool
from app.tools.tool_configs import ToolArgsConfig, ToolConfig

#: The `agent_class` values that name LlmAgent (ADK's spellings and agentd's).
_LLM_AGENT_CLASSES = frozenset(
    {
        "LlmAgent",
        "Agent",
        "app.agents.LlmAgent",
        "app.agents.llm_agent.LlmAgent",
        "google.adk.agents.LlmAgent",
        "google.adk.agents.llm_agent.LlmAgent",
    }
)
#: What a config may name outside its app's folder (the README lists them): tools, tool classes,
#: models and agents that the YAML's data configures but cannot turn into code. Left out on
#: purpose: FunctionTool and LongRunningFunctionTool (they need a callable, which YAML cannot
#: give), MCPToolset (its stdio connection starts a command) and every other module; an app that
#: needs one builds it in its own Python module and names that.
SAFE_CONFIG_NAMES: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "app.tools": frozenset(
            {
                "AgentTool",
                "ExampleTool",
                "exit_loop",
                "get_user_choice",
                "google_search",
                "load_artifacts",
                "load_memory",
                "preload_memory",
                "transfer_to_agent",
            }
        ),
        "app.models": frozenset({"Claude", "Gemini", "LiteLlm", "OpenAILlm"}),
        "app.agents": frozenset(
            {"Agent", "LlmAgent", "LoopAgent", "ParallelAgent", "SequentialAgent"}
        ),
    }
)
_ADK_PREFIX = "google.adk."
_CALLBACK_KEYS = {
    "before_agent_callbacks": "before_agent_callback",
    "after_agent_callbacks": "after_agent_callback",
    "before_model_callbacks": "before_model_callback",
    "after_model_callbacks": "after_model_callback",
    "before_tool_callbacks": "before_tool_callback",
    "after_tool_callbacks": "after_tool_callback",
}
#: An absolute POSIX path inside error text (not the `//` of a URL, not a relative path's `/`).
_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/~-])/[^\s'\"`()<>\[\]{},;]+")


class ConfigError(ValueError):
    """A problem inside one config file; `from_config` names the file and raises AppLoadError."""


@dataclass(frozen=True)
class _AppScope:
    """The app a config belongs to: its package name (the folder's name) and its folder."""

    name: str
    folder: Path

    @classmethod
    def of(cls, folder: str | os.PathLike[str]) -> "_AppScope":
        # Named as the agents dir names it (a symlinked app folder keeps its link's name, the
        # name its modules import under), located where it really is.
        return cls(name=Path(os.path.abspath(folder)).name, folder=Path(folder).resolve())

    def relative(self, path: Path) -> str:
        """`path` as the app's folder sees it (its name only when it lies outside)."""
        try:
            return path.relative_to(self.folder).as_posix()
        except ValueError:
            return path.name


def describe_failure(exc: BaseException, folder: Path | None) -> str:
    """`Type: message` of an exception raised by an app's code or a library, its paths hidden:
    a path inside the app's `folder` becomes relative to it, any other absolute path its name."""
    return f"{type(exc).__name__}: {_without_paths(str(exc), folder)}"


def _without_paths(text: str, folder: Path | None) -> str:
    def shorten(match: re.Match[str]) -> str:
        found = match.group(0)
        path = found.rstrip(".")
        tail = found[len(path) :]
        inside = Path(os.path.normpath(path))
        if folder is not None and inside.is_relative_to(folder):
            shown = inside.relative_to(folder).as_posix()
            return (shown if shown != "." else folder.name) + tail
        return (inside.name or "<path>") + tail

    return _ABSOLUTE_PATH.sub(shorten, text)


def from_config(config_path: str | os.PathLike[str]) -> BaseAgent:
    """The agent a YAML config file describes (its sub-agents and tools resolved); the folder
    holding it is the app whose own modules its names may reach.

    Raises:
        AppLoadError: the file cannot be read or parsed, or a name in it is refused or does not
            resolve.
    """
    given = Path(os.path.abspath(config_path))
    return _from_config(given.resolve(), _AppScope.of(given.parent), ())


def _from_config(path: Path, scope: _AppScope, loading: tuple[Path, ...]) -> BaseAgent:
    where = f"App {scope.name!r}, agent config {scope.relative(path)}"
    if path in loading:
        chain = " -> ".join(scope.relative(p) for p in (*loading, path))
        raise AppLoadError(f"{where}: config_path cycle ({chain}).")
    try:
        config = load_config(path)
        return _build_llm_agent(config, path, scope, (*loading, path))
    except AppLoadError:
        raise
    except ConfigError as exc:
        raise AppLoadError(f"{where}: {exc}") from exc
    except Exception as exc:  # whatever a referenced module or constructor raised
        raise AppLoadError(f"{where}: {describe_failure(exc, scope.folder)}") from exc


def load_config(path: Path) -> LlmAgentConfig:
    """The validated config in `path` (ConfigError for unreadable YAML or a bad key)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot be read: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or exc
        raise ConfigError(f"is not valid YAML{where}: {problem}") from exc
    if not isinstance(data, dict):
        raise ConfigError("must be a YAML mapping of agent fields (name, model, instruction...)")
    agent_class = data.get("agent_class", "LlmAgent")
    if agent_class not in _LLM_AGENT_CLASSES:
        raise ConfigError(
            f"agent_class {agent_class!r} is not supported: agentd builds LlmAgent configs; "
            "define other agents in Python and reference them with `code:`"
        )
    try:
        config = LlmAgentConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_validation_problem(exc)) from exc
    if config.model and config.model_code:
        raise ConfigError("set only one of `model` and `model_code`")
    return config


def _validation_problem(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "(top level)"
        if error["type"] == "extra_forbidden":
            problems.append(f"unknown key {where!r}")
        elif error["type"] == "missing":
            problems.append(f"missing required key {where!r}")
        else:
            problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems)


def _build_llm_agent(
    config: LlmAgentConfig, path: Path, scope: _AppScope, loading: tuple[Path, ...]
) -> LlmAgent:
    kwargs: dict[str, Any] = {"name": config.name, "description": config.description}
    if config.model:
        try:
            LLMRegistry.resolve(config.model)
        except ValueError as exc:
            raise ConfigError(f"model {config.model!r}: {exc}") from exc
        kwargs["model"] = config.model
    elif config.model_code:
        model = _resolve_code_reference(config.model_code, scope)
        if not isinstance(model, BaseLlm | str):
            raise ConfigError(f"model_code {config.model_code.name!r} is not a model (BaseLlm)")
        kwargs["model"] = model
    for key in (
        "instruction",
        "global_instruction",
        "disallow_transfer_to_parent",
        "disallow_transfer_to_peers",
        "output_key",
        "include_contents",
        "generate_content_config",
        "static_instruction",
    ):
        if key in config.model_fields_set:
            kwargs[key] = getattr(config, key)
    for key in ("input_schema", "output_schema"):
        reference: CodeConfig | None = getattr(config, key)
        if reference is not None:
            kwargs[key] = _resolve_code_reference(reference, scope)
    if config.tools:
        kwargs["tools"] = [_resolve_tool(tool, path, scope, loading) for tool in config.tools]
    for key, field in _CALLBACK_KEYS.items():
        references: list[CodeConfig] | None = getattr(config, key)
        if references:
            kwargs[field] = _resolve_callbacks(references, scope)
    if config.sub_agents:
        kwargs["sub_agents"] = [
            _resolve_agent_reference(ref, path, scope, loading) for ref in config.sub_agents
        ]
    try:
        return LlmAgent(**kwargs)
    except ValueError as exc:  # pydantic's ValidationError and the tree's own checks
        raise ConfigError(
            f"agent {config.name!r} cannot be built: {_without_paths(str(exc), scope.folder)}"
        ) from exc


# -- names ------------------------------------------------------------------------------------


def resolve_fully_qualified_name(
    name: str, app_folder: str | os.PathLike[str] | None = None
) -> Any:
    """The object `module.attr` names: one of `SAFE_CONFIG_NAMES`, or one defined in the app
    whose folder is `app_folder` (ConfigError if it is refused or does not resolve)."""
    return _resolve_name(name, None if app_folder is None else _AppScope.of(app_folder))


def _resolve_name(name: str, scope: _AppScope | None) -> Any:
    parts = name.split(".")
    if len(parts) < 2 or not all(part.isidentifier() for part in parts):
        raise ConfigError(f"{name!r} is not a dotted name (module.attribute)")
    canonical = "app." + name.removeprefix(_ADK_PREFIX) if name.startswith(_ADK_PREFIX) else name
    module_path, _, attr = canonical.rpartition(".")
    if attr in SAFE_CONFIG_NAMES.get(module_path, ()):
        return getattr(importlib.import_module(module_path), attr)
    if scope is None or parts[0] != scope.name:
        own = f"{scope.name}.<module>.<attribute>, " if scope is not None else ""
        raise ConfigError(
            f"{name!r} is refused: a config may name only its app's own code ({own}defined in "
            "the app's folder) and the names agentd lists as safe for configs (README, "
            "'Apps from a config file')"
        )
    module = _import_app_module(module_path, name, scope)
    if not hasattr(module, attr):
        raise ConfigError(f"module {module_path!r} has no attribute {attr!r}")
    target = getattr(module, attr)
    _check_defined_in_app(target, name, scope)
    return target


def _import_app_module(module_path: str, name: str, scope: _AppScope) -> Any:
    """The app's module `module_path`, each package on the way checked to come from the app's
    folder before anything below it runs (`find_spec` of `a.b` imports `a`, already checked)."""
    parts = module_path.split(".")
    try:
        for depth in range(1, len(parts) + 1):
            package = ".".join(parts[:depth])
            spec = importlib.util.find_spec(package)
            if spec is None:
                raise ConfigError(f"no module {package!r} in the app's folder (for {name!r})")
            if not _spec_inside(spec, scope.folder):
                raise ConfigError(
                    f"{name!r} is refused: module {package!r} is not the app's own (another "
                    f"module named {package!r} comes first on the import path)"
                )
        return importlib.import_module(module_path)
    except ConfigError:
        raise
    except Exception as exc:  # the app's own module failed to import
        raise ConfigError(
            f"cannot import module {module_path!r} for {name!r}: "
            f"{describe_failure(exc, scope.folder)}"
        ) from exc


def _spec_inside(spec: ModuleSpec, folder: Path) -> bool:
    """Whether a module (or package, all of whose portions) lies in the app's folder."""
    places = [Path(spec.origin)] if spec.has_location and spec.origin else []
    places += [Path(p) for p in spec.submodule_search_locations or ()]
    return bool(places) and all(p.resolve().is_relative_to(folder) for p in places)


def _check_defined_in_app(target: Any, name: str, scope: _AppScope) -> None:
    """A module, function or class the app merely imported is not the app's own code; its
    instances (tools, agents, models it built) are."""
    if inspect.ismodule(target):
        raise ConfigError(f"{name!r} is refused: it names a module, not code of the app")
    code = target.__func__ if inspect.ismethod(target) else target
    if inspect.isroutine(code) or inspect.isclass(code):
        module = getattr(code, "__module__", None) or ""
        if module != scope.name and not module.startswith(f"{scope.name}."):
            raise ConfigError(
                f"{name!r} is refused: it is defined in {module!r}, not in the app's folder"
            )


def resolve_code_reference(
    code_config: CodeConfig, app_folder: str | os.PathLike[str] | None = None
) -> Any:
    """The object a code reference names (as `resolve_fully_qualified_name`), called with its
    `args` when it has any."""
    return _resolve_code_reference(
        code_config, None if app_folder is None else _AppScope.of(app_folder)
    )


def _resolve_code_reference(code_config: CodeConfig, scope: _AppScope | None) -> Any:
    target = _resolve_name(code_config.name, scope)
    if code_config.args is None:
        return target
    if not callable(target):
        raise ConfigError(f"{code_config.name!r} takes args but is not callable")
    positional = [a.value for a in code_config.args if a.name is None]
    keywords = {a.name: a.value for a in code_config.args if a.name is not None}
    try:
        return target(*positional, **keywords)
    except Exception as exc:
        failure = describe_failure(exc, scope.folder if scope is not None else None)
        raise ConfigError(f"calling {code_config.name!r} with its args failed: {failure}") from exc


def resolve_callbacks(
    callbacks_config: list[CodeConfig], app_folder: str | os.PathLike[str] | None = None
) -> list[Callable[..., Any]]:
    """The callables a list of code references names, in order."""
    return _resolve_callbacks(
        callbacks_config, None if app_folder is None else _AppScope.of(app_folder)
    )


def _resolve_callbacks(
    callbacks_config: list[CodeConfig], scope: _AppScope | None
) -> list[Callable[..., Any]]:
    callbacks = []
    for reference in callbacks_config:
        callback = _resolve_code_reference(reference, scope)
        if not callable(callback):
            raise ConfigError(f"callback {reference.name!r} is not callable")
        callbacks.append(callback)
    return callbacks


def resolve_agent_reference(
    ref_config: AgentRefConfig, referencing_agent_config_abs_path: str | os.PathLike[str]
) -> BaseAgent:
    """The agent a sub-agent reference names: another config file, or an agent in code (of the
    app whose folder holds the referencing file)."""
    given = Path(os.path.abspath(referencing_agent_config_abs_path))
    return _resolve_agent_reference(ref_config, given.resolve(), _AppScope.of(given.parent), ())


def _resolve_agent_reference(
    ref: AgentRefConfig, path: Path, scope: _AppScope, loading: tuple[Path, ...]
) -> BaseAgent:
    if ref.config_path is not None:
        return _from_config(_sibling_config(ref.config_path, path), scope, loading)
    assert ref.code is not None  # AgentRefConfig holds exactly one of the two
    agent = _resolve_name(ref.code, scope)
    if not isinstance(agent, BaseAgent):
        raise ConfigError(f"code {ref.code!r} is not an agent instance (BaseAgent)")
    return agent


def _sibling_config(config_path: str, referencing: Path) -> Path:
    if os.path.isabs(config_path):
        raise ConfigError(f"config_path {config_path!r} must be relative to this file")
    folder = referencing.parent.resolve()
    target = (folder / config_path).resolve()
    if not target.is_relative_to(folder):
        raise ConfigError(f"config_path {config_path!r} leaves the folder of this file")
    if not target.is_file():
        raise ConfigError(f"config_path {config_path!r}: no such file next to this one")
    return target


# -- tools ------------------------------------------------------------------------------------


def _resolve_tool(
    tool: ToolConfig, path: Path, scope: _AppScope, loading: tuple[Path, ...]
) -> ToolUnion:
    if "." in tool.name:
        target = _resolve_name(tool.name, scope)
    elif tool.name in SAFE_CONFIG_NAMES["app.tools"]:
        target = getattr(importlib.import_module("app.tools"), tool.name)
    else:
        raise ConfigError(
            f"unknown tool {tool.name!r}: a bare name is a built-in of app.tools "
            f"({', '.join(sorted(SAFE_CONFIG_NAMES['app.tools']))}); name your own tools as "
            f"{scope.name}.<module>.<attribute>"
        )
    try:
        return _tool_from(target, tool, path, scope, loading)
    except (AppLoadError, ConfigError):
        raise
    except Exception as exc:
        raise ConfigError(
            f"tool {tool.name!r} cannot be built: {describe_failure(exc, scope.folder)}"
        ) from exc


def _tool_from(
    target: Any, tool: ToolConfig, path: Path, scope: _AppScope, loading: tuple[Path, ...]
) -> ToolUnion:
    if isinstance(target, BaseTool):
        if tool.args is not None:
            raise ConfigError(f"tool {tool.name!r} is a tool instance: it takes no args")
        return target
    if inspect.isclass(target):
        if not issubclass(target, BaseTool):
            raise ConfigError(f"tool {tool.name!r} is a class but not a BaseTool")
        kwargs = tool.args.as_kwargs() if tool.args is not None else {}
        if issubclass(target, AgentTool) and "agent" in kwargs:
            kwargs["agent"] = _agent_argument(kwargs["agent"], path, scope, loading)
        built: BaseTool = target(**kwargs)
        return built
    if callable(target):
        function: Callable[..., Any] = target
        if tool.args is None:
            return function  # a function tool
        made: object = function(tool.args)  # a tool-building function gets the args, as in ADK
        if isinstance(made, BaseTool):
            return made
        if callable(made):
            return made
        raise ConfigError(f"tool function {tool.name!r} returned {type(made).__name__}")
    raise ConfigError(f"tool {tool.name!r} is neither a tool, a tool class nor a function")


def _agent_argument(
    value: Any, path: Path, scope: _AppScope, loading: tuple[Path, ...]
) -> BaseAgent:
    """AgentTool's `agent` arg: a config path (string) or an agent reference mapping."""
    try:
        ref = (
            AgentRefConfig(config_path=value) if isinstance(value, str) else AgentRefConfig(**value)
        )
    except (TypeError, ValidationError) as exc:
        raise ConfigError(f"AgentTool's agent must be a config path or a reference: {exc}") from exc
    return _resolve_agent_reference(ref, path, scope, loading)


__all__ = [
    "SAFE_CONFIG_NAMES",
    "ConfigError",
    "ToolArgsConfig",
    "describe_failure",
    "from_config",
    "load_config",
    "resolve_agent_reference",
    "resolve_callbacks",
    "resolve_code_reference",
    "resolve_fully_qualified_name",
]
