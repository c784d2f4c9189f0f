"""Agents from YAML config files (ADK's Agent Config): `from_config("root_agent.yaml")`.

A config is an `LlmAgentConfig` (`app/agents/llm_agent_config.py`). Names in it resolve as ADK
resolves them: a bare tool name is an attribute of `app.tools` (a built-in: `exit_loop`,
`load_memory`, `AgentTool`, ...); a dotted name is `module.attr`, imported normally (the app
registry puts the agents directory on the import path, so `my_app.tools.lookup` names
`<agents dir>/my_app/tools.py`). A tool with `args` is a tool class built with them, or a
function that builds a tool from them (it receives the `ToolArgsConfig`, as in ADK). Sub-agents
are other config files (`config_path`, relative to the referencing file and inside its folder) or
agents defined in code (`code`). As ADK does, references into the standard library are refused:
a config names the app's own code, agentd's or an installed package's.

Every problem (YAML syntax, an unknown or missing key, a name that does not resolve, a cycle of
config files) is an `AppLoadError` naming the file and the problem, so a served app answers the
`app-load-failed` problem.
"""

import importlib
import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path
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
#: Modules a config may not reach into (ADK's rule: too much of the standard library runs code).
_BLOCKED_MODULES = frozenset(sys.stdlib_module_names) | frozenset(sys.builtin_module_names)
_CALLBACK_KEYS = {
    "before_agent_callbacks": "before_agent_callback",
    "after_agent_callbacks": "after_agent_callback",
    "before_model_callbacks": "before_model_callback",
    "after_model_callbacks": "after_model_callback",
    "before_tool_callbacks": "before_tool_callback",
    "after_tool_callbacks": "after_tool_callback",
}


class ConfigError(ValueError):
    """A problem inside one config file; `from_config` names the file and raises AppLoadError."""


def from_config(config_path: str | os.PathLike[str]) -> BaseAgent:
    """The agent a YAML config file describes (its sub-agents and tools resolved).

    Raises:
        AppLoadError: the file cannot be read or parsed, or a name in it does not resolve.
    """
    return _from_config(Path(config_path).resolve(), ())


def _from_config(path: Path, loading: tuple[Path, ...]) -> BaseAgent:
    if path in loading:
        chain = " -> ".join(p.name for p in (*loading, path))
        raise AppLoadError(f"Agent config {path}: config_path cycle ({chain}).")
    try:
        config = load_config(path)
        return _build_llm_agent(config, path, (*loading, path))
    except AppLoadError:
        raise
    except ConfigError as exc:
        raise AppLoadError(f"Agent config {path}: {exc}") from exc
    except Exception as exc:  # whatever a referenced module or constructor raised
        raise AppLoadError(f"Agent config {path}: {type(exc).__name__}: {exc}") from exc


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


def _build_llm_agent(config: LlmAgentConfig, path: Path, loading: tuple[Path, ...]) -> LlmAgent:
    kwargs: dict[str, Any] = {"name": config.name, "description": config.description}
    if config.model:
        try:
            LLMRegistry.resolve(config.model)
        except ValueError as exc:
            raise ConfigError(f"model {config.model!r}: {exc}") from exc
        kwargs["model"] = config.model
    elif config.model_code:
        model = resolve_code_reference(config.model_code)
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
            kwargs[key] = resolve_code_reference(reference)
    if config.tools:
        kwargs["tools"] = [_resolve_tool(tool, path, loading) for tool in config.tools]
    for key, field in _CALLBACK_KEYS.items():
        references: list[CodeConfig] | None = getattr(config, key)
        if references:
            kwargs[field] = resolve_callbacks(references)
    if config.sub_agents:
        kwargs["sub_agents"] = [
            _resolve_agent_reference(ref, path, loading) for ref in config.sub_agents
        ]
    try:
        return LlmAgent(**kwargs)
    except ValueError as exc:  # pydantic's ValidationError and the tree's own checks
        raise ConfigError(f"agent {config.name!r} cannot be built: {exc}") from exc


# -- names ------------------------------------------------------------------------------------


def resolve_fully_qualified_name(name: str) -> Any:
    """The object `module.attr` names (ConfigError if it does not import or is blocked)."""
    module_path, _, attr = name.rpartition(".")
    if not module_path or not attr:
        raise ConfigError(f"{name!r} is not a dotted name (module.attribute)")
    top = module_path.split(".", 1)[0]
    if top in _BLOCKED_MODULES:
        raise ConfigError(
            f"{name!r} is refused: agent configs may not reference the standard library "
            f"({top!r}); name the app's own code or an installed package"
        )
    try:
        module = importlib.import_module(module_path)
    except Exception as exc:
        raise ConfigError(
            f"cannot import module {module_path!r} for {name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    if not hasattr(module, attr):
        raise ConfigError(f"module {module_path!r} has no attribute {attr!r}")
    return getattr(module, attr)


def resolve_code_reference(code_config: CodeConfig) -> Any:
    """The object a code reference names, called with its `args` when it has any."""
    target = resolve_fully_qualified_name(code_config.name)
    if code_config.args is None:
        return target
    if not callable(target):
        raise ConfigError(f"{code_config.name!r} takes args but is not callable")
    positional = [a.value for a in code_config.args if a.name is None]
    keywords = {a.name: a.value for a in code_config.args if a.name is not None}
    try:
        return target(*positional, **keywords)
    except Exception as exc:
        raise ConfigError(
            f"calling {code_config.name!r} with its args failed: {type(exc).__name__}: {exc}"
        ) from exc


def resolve_callbacks(callbacks_config: list[CodeConfig]) -> list[Callable[..., Any]]:
    """The callables a list of code references names, in order."""
    callbacks = []
    for reference in callbacks_config:
        callback = resolve_code_reference(reference)
        if not callable(callback):
            raise ConfigError(f"callback {reference.name!r} is not callable")
        callbacks.append(callback)
    return callbacks


def resolve_agent_reference(
    ref_config: AgentRefConfig, referencing_agent_config_abs_path: str | os.PathLike[str]
) -> BaseAgent:
    """The agent a sub-agent reference names: another config file, or an agent in code."""
    return _resolve_agent_reference(ref_config, Path(referencing_agent_config_abs_path), ())


def _resolve_agent_reference(
    ref: AgentRefConfig, path: Path, loading: tuple[Path, ...]
) -> BaseAgent:
    if ref.config_path is not None:
        return _from_config(_sibling_config(ref.config_path, path), loading)
    assert ref.code is not None  # AgentRefConfig holds exactly one of the two
    agent = resolve_fully_qualified_name(ref.code)
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


def _resolve_tool(tool: ToolConfig, path: Path, loading: tuple[Path, ...]) -> ToolUnion:
    if "." in tool.name:
        target = resolve_fully_qualified_name(tool.name)
    else:
        builtins = importlib.import_module("app.tools")
        if tool.name.startswith("_") or not hasattr(builtins, tool.name):
            raise ConfigError(
                f"unknown tool {tool.name!r}: a bare name is a built-in of app.tools "
                "(e.g. exit_loop, load_memory); name your own tools as module.attribute"
            )
        target = getattr(builtins, tool.name)
    try:
        return _tool_from(target, tool, path, loading)
    except (AppLoadError, ConfigError):
        raise
    except Exception as exc:
        raise ConfigError(
            f"tool {tool.name!r} cannot be built: {type(exc).__name__}: {exc}"
        ) from exc


def _tool_from(target: Any, tool: ToolConfig, path: Path, loading: tuple[Path, ...]) -> ToolUnion:
    if isinstance(target, BaseTool):
        if tool.args is not None:
            raise ConfigError(f"tool {tool.name!r} is a tool instance: it takes no args")
        return target
    if inspect.isclass(target):
        if not issubclass(target, BaseTool):
            raise ConfigError(f"tool {tool.name!r} is a class but not a BaseTool")
        kwargs = tool.args.as_kwargs() if tool.args is not None else {}
        if issubclass(target, AgentTool) and "agent" in kwargs:
            kwargs["agent"] = _agent_argument(kwargs["agent"], path, loading)
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


def _agent_argument(value: Any, path: Path, loading: tuple[Path, ...]) -> BaseAgent:
    """AgentTool's `agent` arg: a config path (string) or an agent reference mapping."""
    try:
        ref = (
            AgentRefConfig(config_path=value) if isinstance(value, str) else AgentRefConfig(**value)
        )
    except (TypeError, ValidationError) as exc:
        raise ConfigError(f"AgentTool's agent must be a config path or a reference: {exc}") from exc
    return _resolve_agent_reference(ref, path, loading)


__all__ = [
    "ConfigError",
    "ToolArgsConfig",
    "from_config",
    "load_config",
    "resolve_agent_reference",
    "resolve_callbacks",
    "resolve_code_reference",
    "resolve_fully_qualified_name",
]
