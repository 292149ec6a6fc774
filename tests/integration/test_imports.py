"""The package's imports form no circle: every module builds only on modules below it.

Read from the source with ``ast``, lazy imports inside functions included (they run, only
later), imports under ``if TYPE_CHECKING:`` left out (they never run). Importing
``ragstage.a.b`` from outside ``ragstage.a`` runs ``ragstage/a/__init__.py`` too, so that is an
arrow to the package as well.
"""

import ast
from pathlib import Path

import ragstage

ROOT = Path(ragstage.__file__).parent


def _module_name(path: Path) -> str:
    parts = ["ragstage", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(tree: ast.AST):
    """Import nodes that run: everything but the body of ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in _runtime_imports(child))
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from _runtime_imports(node)


def import_graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _runtime_imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = package.rsplit(".", node.level - 1)[0] if node.level else ""
                stem = ".".join(filter(None, [base, node.module]))
                targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in modules else stem for a in node.names]
            for target in targets:
                if not target.startswith("ragstage.") or target not in modules:
                    continue
                parts = target.split(".")
                for i in range(2, len(parts) + 1):  # the packages on the way run their __init__
                    step = ".".join(parts[:i])
                    if step != name and not name.startswith(step + "."):
                        graph[name].add(step)
    return graph


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of the graph as ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_package_has_no_import_circle():
    circle = find_circle(import_graph())
    assert circle is None, " -> ".join(circle)


def test_the_circle_finder_finds_a_circle_and_the_graph_sees_the_readers():
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b"}, "b": set()}) is None
    graph = import_graph()
    assert "ragstage.tally" in graph["ragstage.parquet"] and "ragstage.tally" in graph["ragstage.streaming"]
    assert "ragstage.parquet" in graph["ragstage.trace_files"]  # a lazy import is an arrow too
    assert "ragstage.typed_record" not in graph["ragstage.attribution"]  # a TYPE_CHECKING import is not
