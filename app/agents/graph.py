"""The agent graph ADK's dev UI draws in its Info pane (`/dev/apps/{app}/build_graph[_image]`).

ADK 2.13 answers `build_graph` with the app's agent tree serialized as JSON
(`google/adk/cli/utils/graph_serialization.py`, `serialize_app_info`) and `build_graph_image`
with graphviz DOT source per (sub-)workflow path, `{path: {"dotSrc": ...}}`, which the bundle
renders in the browser (`google/adk/cli/utils/graph_visualization.py`, `plot_workflow_graph`,
called by `google/adk/cli/dev_server.py`). This module builds both from agentd's own agents so
the dev UI's graph looks as it does under `adk web`. Rendering DOT to an image needs the
graphviz `dot` binary, which is optional: `render_svg` raises a problem naming the package to
install when it is missing (404, never a 5xx).
"""

import html
import shutil
from typing import Any

import graphviz

from app.agents.base_agent import BaseAgent
from app.agents.llm_agent import LlmAgent
from app.agents.workflow import LoopAgent
from app.errors import NotFoundError
from app.models.llm import BaseLlm
from app.tools.base_toolset import BaseToolset

# plot_workflow_graph's palettes (dark, light): background, node fill, border, text, edge, label.
_DARK = ("#0F172A", "#1E293B", "#475569", "#F8FAFC", "#94A3B8", "#CBD5E1")
_LIGHT = ("#F8FAFC", "#FFFFFF", "#94A3B8", "#0F172A", "#64748B", "#475569")
# Node-type icons and their colours, as ADK draws them.
_ICONS = {"agent": ("✦", "#42A5F5"), "tool": ("🔧", "#6B7280")}


class GraphNodeNotFound(NotFoundError):
    """`build_graph_image?node=` names no agent of the app's tree."""

    problem_type = "graph-node-not-found"
    default_title = "Graph node not found."


class GraphvizNotInstalled(NotFoundError):
    """The graphviz `dot` binary, needed to render an image, is not on this server's PATH.

    A 404 like `dev-ui-not-installed` (an optional part that is absent, with how to add it), not
    a 5xx: the server works as configured, and the DOT source stays available.
    """

    problem_type = "graphviz-not-installed"
    default_title = "Graphviz is not installed."


def serialize_agent(agent: BaseAgent) -> dict[str, Any]:
    """One agent as ADK's `serialize_agent` writes it: its plain fields, `model` as the model
    name, `sub_agents` recursively and `tools` as `{name, type: "tool"}` (an agent that is also a
    sub-agent is not listed as a tool); callables and callbacks are left out."""
    data: dict[str, Any] = {"name": agent.name, "description": agent.description or ""}
    if isinstance(agent, LlmAgent):
        model = agent.model.model if isinstance(agent.model, BaseLlm) else agent.model
        if model:
            data["model"] = model
        if isinstance(agent.instruction, str):
            data["instruction"] = agent.instruction
        if isinstance(agent.global_instruction, str):
            data["global_instruction"] = agent.global_instruction
        data["tools"] = _tools(agent)
    if isinstance(agent, LoopAgent) and agent.max_iterations is not None:
        data["max_iterations"] = agent.max_iterations
    data["sub_agents"] = [serialize_agent(sub) for sub in agent.sub_agents]
    return data


def _tools(agent: LlmAgent) -> list[dict[str, str]]:
    """The declared tools by name (a toolset by its class name, as ADK does)."""
    sub_agent_names = {sub.name for sub in agent.sub_agents}
    tools = []
    for tool in agent.tools:
        if isinstance(tool, BaseToolset):
            name = type(tool).__name__
        elif hasattr(tool, "name"):
            name = str(tool.name)
        else:
            name = getattr(tool, "__name__", str(tool))
        if name not in sub_agent_names:
            tools.append({"name": name, "type": "tool"})
    return tools


def app_info(app_name: str, root_agent: BaseAgent) -> dict[str, Any]:
    """`build_graph`'s answer: `{name, root_agent}` (ADK's `serialize_app_info`)."""
    return {"name": app_name, "root_agent": serialize_agent(root_agent)}


def navigate(root: dict[str, Any], node_path: str) -> dict[str, Any]:
    """The serialized agent at `a/b/c` (the root's own name may lead the path), as ADK's
    `_navigate_to_node` walks `sub_agents`; an empty path is the root."""
    parts = [part for part in node_path.strip("/").split("/") if part]
    if parts and parts[0] == root.get("name"):
        parts = parts[1:]
    current = root
    for part in parts:
        found = next((sub for sub in current.get("sub_agents", []) if sub["name"] == part), None)
        if found is None:
            raise GraphNodeNotFound(f"No agent {node_path!r} in this app's agent tree.")
        current = found
    return current


def agent_dot(agent: dict[str, Any], *, dark_mode: bool) -> str:
    """DOT source of a serialized agent tree, as ADK's `plot_workflow_graph` draws a tree that
    is not a graph workflow: one rounded node per agent, an edge to each sub-agent, and each
    tool as a dashed node with a dashed edge from the agents that use it."""
    nodes: list[dict[str, Any]] = [{"name": agent["name"], "type": "agent"}]
    edges: list[tuple[str, str, bool]] = []
    tools_of = {agent["name"]: agent.get("tools", [])}

    def walk(parent: dict[str, Any]) -> None:
        for sub in parent.get("sub_agents", []):
            nodes.append({"name": sub["name"], "type": "agent"})
            tools_of[sub["name"]] = sub.get("tools", [])
            edges.append((parent["name"], sub["name"], False))
            walk(sub)

    walk(agent)
    tool_names: list[str] = []
    for owner, tools in list(tools_of.items()):
        for tool in tools:
            if tool["name"] not in tool_names:
                tool_names.append(tool["name"])
            edges.append((owner, tool["name"], True))
    known = {node["name"] for node in nodes}
    nodes.extend({"name": name, "type": "tool"} for name in tool_names if name not in known)

    background, fill, border, text, edge_color, edge_text = _DARK if dark_mode else _LIGHT
    dot = graphviz.Digraph(comment="Workflow Visualization")
    dot.attr(
        "graph",
        bgcolor=background,
        pad="0.5",
        nodesep="0.5",
        ranksep="0.8",
        fontname="Helvetica",
        splines="spline",
    )
    dot.attr(
        "node",
        shape="rect",
        style="rounded,filled",
        fillcolor=fill,
        color=border,
        penwidth="1.5",
        fontname="Helvetica",
        fontcolor=text,
        fontsize="12",
        margin="0.25,0.15",
    )
    dot.attr(
        "edge",
        color=edge_color,
        penwidth="1.2",
        fontname="Helvetica",
        fontcolor=edge_text,
        fontsize="10",
        arrowhead="vee",
        arrowsize="0.7",
    )
    for node in nodes:
        icon, color = _ICONS[node["type"]]
        label = f'<<FONT COLOR="{color}" POINT-SIZE="14">{icon}</FONT> {html.escape(node["name"])}>'
        style = "rounded,filled,dashed" if node["type"] == "tool" else "rounded,filled"
        dot.node(node["name"], label, tooltip=node["type"].title(), style=style, fillcolor=fill)
    for source, target, is_tool in edges:
        if is_tool:
            dot.edge(source, target, style="dashed", color=edge_color)
        else:
            dot.edge(source, target, label="")
    return str(dot.source)


def graph_dots(root: dict[str, Any], node_path: str, *, dark_mode: bool) -> dict[str, str]:
    """`build_graph_image`'s DOT sources by path: agentd has no graph workflows, so, as ADK
    does for a plain agent tree, one entry keyed by the requested node path ("" for the root)."""
    return {node_path: agent_dot(navigate(root, node_path), dark_mode=dark_mode)}


def render_svg(dot_source: str) -> bytes:
    """The DOT drawn as SVG by the graphviz `dot` binary; a problem when it is not installed."""
    if shutil.which("dot") is None:
        raise GraphvizNotInstalled(
            "Drawing the agent graph as an image needs the graphviz `dot` program on the "
            "server's PATH (Debian/Ubuntu: `apt-get install graphviz`); the DOT source is "
            "available without it (omit `format`)."
        )
    return bytes(graphviz.Source(dot_source).pipe(format="svg"))
