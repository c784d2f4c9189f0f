"""ADK dev UI's agent graph over HTTP: `/dev/apps/{app}/build_graph[_image]` in ADK 2.13's shapes.

The expected DOT below was produced by google-adk 2.13.0 itself
(`google.adk.cli.utils.graph_visualization.plot_workflow_graph` on `serialize_app_info` of the
same agent tree, as its dev server's `build_graph_image` does), so agentd's drawing must match
ADK's byte for byte, under ADK's wire key `dotSrc` (its `GetEventGraphResult` is camelCased;
the bundle reads `dotSrc` and drew nothing from `dot_src`). The servers run with a PATH without graphviz's `dot`, so the image request
shows the problem every install without graphviz gets.
"""

# ruff: noqa: E501  (the recorded DOT lines are ADK's, kept verbatim)

import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.live_server import LiveServer

APP = "graph_demo"

AGENT_PY = '''
from app.agents.llm_agent import LlmAgent
from app.agents.workflow import LoopAgent, SequentialAgent


def lookup(city: str) -> dict:
    """Looks a city up."""
    return {}


def weather(city: str) -> dict:
    """The weather of a city."""
    return {}


writer = LlmAgent(name="writer", model="gemini-2.5-flash", instruction="w", tools=[lookup])
critic = LlmAgent(
    name="critic", model="gemini-2.5-flash", instruction="c", tools=[weather, lookup]
)
refine = LoopAgent(name="refine", sub_agents=[critic], max_iterations=3)
pipeline = SequentialAgent(name="pipeline", sub_agents=[writer, refine])
root_agent = LlmAgent(
    name="root",
    model="gemini-2.5-flash",
    description="d",
    instruction="r",
    tools=[weather],
    sub_agents=[pipeline],
)
'''

# google-adk 2.13.0: plot_workflow_graph(..., format="dot", dark_mode=False) of the whole tree.
ADK_LIGHT_DOT = """\
// Workflow Visualization
digraph {
\tgraph [bgcolor="#F8FAFC" fontname=Helvetica nodesep=0.5 pad=0.5 ranksep=0.8 splines=spline]
\tnode [color="#94A3B8" fillcolor="#FFFFFF" fontcolor="#0F172A" fontname=Helvetica fontsize=12 margin="0.25,0.15" penwidth=1.5 shape=rect style="rounded,filled"]
\tedge [arrowhead=vee arrowsize=0.7 color="#64748B" fontcolor="#475569" fontname=Helvetica fontsize=10 penwidth=1.2]
\troot [label=<<FONT COLOR="#42A5F5" POINT-SIZE="14">✦</FONT> root> fillcolor="#FFFFFF" style="rounded,filled" tooltip=Agent]
\tpipeline [label=<<FONT COLOR="#42A5F5" POINT-SIZE="14">✦</FONT> pipeline> fillcolor="#FFFFFF" style="rounded,filled" tooltip=Agent]
\twriter [label=<<FONT COLOR="#42A5F5" POINT-SIZE="14">✦</FONT> writer> fillcolor="#FFFFFF" style="rounded,filled" tooltip=Agent]
\trefine [label=<<FONT COLOR="#42A5F5" POINT-SIZE="14">✦</FONT> refine> fillcolor="#FFFFFF" style="rounded,filled" tooltip=Agent]
\tcritic [label=<<FONT COLOR="#42A5F5" POINT-SIZE="14">✦</FONT> critic> fillcolor="#FFFFFF" style="rounded,filled" tooltip=Agent]
\tweather [label=<<FONT COLOR="#6B7280" POINT-SIZE="14">🔧</FONT> weather> fillcolor="#FFFFFF" style="rounded,filled,dashed" tooltip=Tool]
\tlookup [label=<<FONT COLOR="#6B7280" POINT-SIZE="14">🔧</FONT> lookup> fillcolor="#FFFFFF" style="rounded,filled,dashed" tooltip=Tool]
\troot -> pipeline [label=""]
\tpipeline -> writer [label=""]
\tpipeline -> refine [label=""]
\trefine -> critic [label=""]
\troot -> weather [color="#64748B" style=dashed]
\twriter -> lookup [color="#64748B" style=dashed]
\tcritic -> weather [color="#64748B" style=dashed]
\tcritic -> lookup [color="#64748B" style=dashed]
}
"""

# google-adk 2.13.0: the dev server's `node=pipeline` answer, dark_mode=True.
ADK_DARK_PIPELINE_DOT = """\
// Workflow Visualization
digraph {
\tgraph [bgcolor="#0F172A" fontname=Helvetica nodesep=0.5 pad=0.5 ranksep=0.8 splines=spline]
\tnode [color="#475569" fillcolor="#1E293B" fontcolor="#F8FAFC" fontname=Helvetica fontsize=12 margin="0.25,0.15" penwidth=1.5 shape=rect style="rounded,filled"]
\tedge [arrowhead=vee arrowsize=0.7 color="#94A3B8" fontcolor="#CBD5E1" fontname=Helvetica fontsize=10 penwidth=1.2]
\tpipeline [label=<<FONT COLOR="#42A5F5" POINT-SIZE="14">✦</FONT> pipeline> fillcolor="#1E293B" style="rounded,filled" tooltip=Agent]
\twriter [label=<<FONT COLOR="#42A5F5" POINT-SIZE="14">✦</FONT> writer> fillcolor="#1E293B" style="rounded,filled" tooltip=Agent]
\trefine [label=<<FONT COLOR="#42A5F5" POINT-SIZE="14">✦</FONT> refine> fillcolor="#1E293B" style="rounded,filled" tooltip=Agent]
\tcritic [label=<<FONT COLOR="#42A5F5" POINT-SIZE="14">✦</FONT> critic> fillcolor="#1E293B" style="rounded,filled" tooltip=Agent]
\tlookup [label=<<FONT COLOR="#6B7280" POINT-SIZE="14">🔧</FONT> lookup> fillcolor="#1E293B" style="rounded,filled,dashed" tooltip=Tool]
\tweather [label=<<FONT COLOR="#6B7280" POINT-SIZE="14">🔧</FONT> weather> fillcolor="#1E293B" style="rounded,filled,dashed" tooltip=Tool]
\tpipeline -> writer [label=""]
\tpipeline -> refine [label=""]
\trefine -> critic [label=""]
\twriter -> lookup [color="#94A3B8" style=dashed]
\tcritic -> weather [color="#94A3B8" style=dashed]
\tcritic -> lookup [color="#94A3B8" style=dashed]
}
"""


def _server(root: Path, auth: str) -> LiveServer:
    agents = root / "agents"
    (agents / APP).mkdir(parents=True)
    (agents / APP / "agent.py").write_text(textwrap.dedent(AGENT_PY))
    no_dot = root / "bin"  # the server's PATH: an empty folder, so no graphviz `dot` on it
    no_dot.mkdir()
    env = {
        "AGENTD_DATA_DIR": str(root / "data"),
        "AGENTD_AGENTS_DIR": str(agents),
        "AGENTD_AUTH": auth,
        "PATH": str(no_dot),
    }
    return LiveServer(root / "server", env).start()


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """A client of a server (auth off) whose agents folder holds the graph demo app."""
    server = _server(tmp_path_factory.mktemp("dev-graph"), "none")
    try:
        with httpx.Client(base_url=server.url, timeout=10) as client:
            yield client
    finally:
        server.stop()


def test_build_graph_answers_the_agent_tree_as_adk_serializes_it(http: httpx.Client) -> None:
    response = http.get(f"/dev/apps/{APP}/build_graph")
    assert response.status_code == 200, response.text
    info = response.json()
    assert info["name"] == APP
    root = info["root_agent"]
    assert (root["name"], root["description"], root["model"], root["instruction"]) == (
        "root",
        "d",
        "gemini-2.5-flash",
        "r",
    )
    assert root["tools"] == [{"name": "weather", "type": "tool"}]
    (pipeline,) = root["sub_agents"]
    assert "tools" not in pipeline  # a workflow agent has no tools field in ADK either
    assert [sub["name"] for sub in pipeline["sub_agents"]] == ["writer", "refine"]
    refine = pipeline["sub_agents"][1]
    assert refine["max_iterations"] == 3
    assert refine["sub_agents"][0]["tools"] == [
        {"name": "weather", "type": "tool"},
        {"name": "lookup", "type": "tool"},
    ]


def test_build_graph_image_is_adks_dot_for_the_whole_tree(http: httpx.Client) -> None:
    response = http.get(f"/dev/apps/{APP}/build_graph_image", params={"dark_mode": "false"})
    assert response.status_code == 200, response.text
    assert response.json() == {"": {"dotSrc": ADK_LIGHT_DOT}}


def test_build_graph_image_of_a_node_in_dark_mode_is_adks_dot(http: httpx.Client) -> None:
    for node in ("pipeline", "root/pipeline"):
        response = http.get(
            f"/dev/apps/{APP}/build_graph_image", params={"dark_mode": "true", "node": node}
        )
        assert response.status_code == 200, response.text
        assert response.json() == {node: {"dotSrc": ADK_DARK_PIPELINE_DOT}}


def test_unknown_app_and_node_are_404_problems(http: httpx.Client) -> None:
    for path in ("/dev/apps/nope/build_graph", "/dev/apps/nope/build_graph_image"):
        response = http.get(path)
        assert response.status_code == 404
        assert response.headers["content-type"].startswith("application/problem+json")
        assert response.json()["type"].endswith("app-not-found")
    response = http.get(f"/dev/apps/{APP}/build_graph_image", params={"node": "pipeline/ghost"})
    assert response.status_code == 404
    assert response.json()["type"].endswith("graph-node-not-found")


def test_svg_without_graphviz_is_a_problem_naming_the_package(http: httpx.Client) -> None:
    response = http.get(f"/dev/apps/{APP}/build_graph_image", params={"format": "svg"})
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["type"].endswith("graphviz-not-installed")
    assert "apt-get install graphviz" in problem["detail"]


def test_graph_routes_need_the_same_credentials_as_the_api(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    server = _server(tmp_path_factory.mktemp("dev-graph-auth"), "api_key")
    try:
        for path in ("build_graph", "build_graph_image"):
            response = httpx.get(f"{server.url}/dev/apps/{APP}/{path}", timeout=10)
            assert response.status_code == 401
            assert response.headers["content-type"].startswith("application/problem+json")
    finally:
        server.stop()
