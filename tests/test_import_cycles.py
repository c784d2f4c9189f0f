"""No runtime import cycle in app/: every import that runs (at module level or inside a function)
follows the layers, and modules of one layer import each other one way only.

Imports under `if TYPE_CHECKING:` are annotations, not dependencies, and are left out (their
`else:` branch runs, so it counts). An edge is a module importing another module of app/ by
name (`import a.b`, `from a import b` where `a.b` is a module, `from . import b`); the packages
a dotted import passes through are not counted, as import-linter does not count them either.
"""

import ast
from collections.abc import Iterator
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app"

#: Cycles known and owned elsewhere, each to be broken by its owner (then removed here: the test
#: fails while a listed cycle no longer exists, so the list only shrinks).
KNOWN_CYCLES: set[frozenset[str]] = set()


def _modules(root: Path) -> dict[str, Path]:
    """Every module under `root` (a package folder) by dotted name."""
    top = root.parent
    return {
        ".".join(path.relative_to(top).with_suffix("").parts).removesuffix(".__init__"): path
        for path in sorted(root.rglob("*.py"))
    }


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of `tree` that may run: all but the bodies of `if TYPE_CHECKING:`."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        yield node
        if _is_type_checking(node):
            assert isinstance(node, ast.If)
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))


def _imported(module: str, path: Path, node: ast.AST) -> set[str]:
    """The dotted names `node` (in `module`, at `path`) may import."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if not isinstance(node, ast.ImportFrom):
        return set()
    base = node.module or ""
    if node.level:
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        parts = package.split(".")
        parts = parts[: len(parts) - node.level + 1]
        base = ".".join([*parts, base] if base else parts)
    return {base} | {f"{base}.{alias.name}" for alias in node.names}


def import_graph(root: Path) -> dict[str, set[str]]:
    """For each module under `root`: the modules under `root` it imports at run time."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        names: set[str] = set()
        for node in _runtime_nodes(ast.parse(path.read_text(), str(path))):
            names |= _imported(module, path, node)
        graph[module] = {name for name in names if name in modules and name != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative
    so deep import chains need no recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def _path(graph: dict[str, set[str]], component: frozenset[str]) -> str:
    """One cycle through `component`, as `a -> b -> a`, for the failure message."""
    first = min(component)
    trail = [first]
    seen = {first}
    while True:
        following = sorted(graph[trail[-1]] & component)
        back = first if first in following else None
        step = back or next((m for m in following if m not in seen), following[0])
        trail.append(step)
        if step == first or step in seen:
            return " -> ".join(trail)
        seen.add(step)


def test_app_has_no_runtime_import_cycle() -> None:
    graph = import_graph(APP)
    found = set(cycles(graph))
    new = [_path(graph, c) for c in found - KNOWN_CYCLES]
    assert new == [], "runtime import cycles in app/: " + "; ".join(new)
    assert KNOWN_CYCLES <= found, f"broken, remove from KNOWN_CYCLES: {KNOWN_CYCLES - found}"


def test_function_local_imports_count_and_type_checking_ones_do_not(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg import c\nelse:\n    import pkg.d\n"
        "def f():\n    from . import b\n"
    )
    (package / "b.py").write_text("from pkg.a import f\n")
    (package / "c.py").write_text("import pkg.a\n")
    (package / "d.py").write_text("")
    graph = import_graph(package)
    assert graph["pkg.a"] == {"pkg", "pkg.b", "pkg.d"}  # `from . import b` runs pkg too
    assert cycles(graph) == [frozenset({"pkg.a", "pkg.b"})]
