"""The package's layout: no import cycles, no module importing from a layer above its
own, and a small top level (README, Layout). Every import counts, also those inside
functions: a lazy import is still a dependency."""
import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "abtlab"

# lowest first; a module may import from its own layer and those below it
LAYERS = [
    {"about", "errors", "extras", "progress"},   # progress: what long work shows, at every layer; extras: optional imports
    {"data", "trace"},
    {"system"},
    # machines: where a point runs. Beside factors, policies and model, not above them: the
    # machine factor's parser is listed with the others (factors.typed), and a machine
    # runs policies and adds the model's measures
    {"factors", "policies", "model", "machines"},
    {"backends"},
    {"stats"},
    {"sweep"},
    {"sim", "bps", "sera", "bayes"},
    {"studies"},   # what notebooks, labs and the demo study: runs sweeps, the simulator, the guest
    {"present"},
    {"results"},   # stored results: re-run through the command line, rendered into pages
    {"labs"},      # classroom labs: a lab sets stored results (read, not run) beside its own run
    {"commands", "cli", "accessor", "__init__", "__main__"},
]


def _modules() -> dict:
    """module name -> (path, is_package)"""
    out = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (p, is_pkg)
    return out


def _imports(mods: dict) -> dict:
    """module -> the abtlab modules it imports (a name imported from a package counts
    as its submodule when there is one, else as the package)"""
    graph = {}
    for mod, (path, is_pkg) in mods.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.split(".")[0] == "abtlab")
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".")[:len(mod.split(".")) - (0 if is_pkg else 1) - (node.level - 1)]
                    src = ".".join(base + ([node.module] if node.module else []))
                else:
                    src = node.module or ""
                if src.split(".")[0] != "abtlab":
                    continue
                deps.update(f"{src}.{a.name}" if f"{src}.{a.name}" in mods else src for a in node.names)
        graph[mod] = {d for d in deps if d in mods and d != mod}
    return graph


def _cycles(graph: dict) -> list:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _layer(mod: str) -> int:
    head = mod.split(".")[1] if "." in mod else "__init__"
    for i, names in enumerate(LAYERS):
        if head in names:
            return i
    raise AssertionError(f"{mod} is in no layer of tests/test_layout.py: add its subpackage")


def _packages(graph: dict) -> dict:
    """The import graph one level up: subpackage -> the subpackages its modules import
    (a top-level module is a package of its own)."""
    def head(mod):
        return mod.split(".")[1] if "." in mod else mod
    out: dict = {}
    for mod, deps in graph.items():
        out.setdefault(head(mod), set()).update(head(d) for d in deps if head(d) != head(mod))
    return out


def test_no_import_cycles():
    assert _cycles(_imports(_modules())) == []


def test_no_package_cycles():
    """Two packages of one layer may import each other's modules without a module-level
    cycle (factors.typed -> machines.spec, machines.host -> factors.levels): the layer
    check allows it, so the packages' graph is checked on its own."""
    assert _cycles(_packages(_imports(_modules()))) == []


def test_no_module_imports_from_a_layer_above_its_own():
    graph = _imports(_modules())
    upward = sorted(f"{m} -> {d}" for m, deps in graph.items() for d in deps
                    if _layer(d) > _layer(m))
    assert upward == []


def test_the_top_level_is_small():
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert len(top) <= 8, top


@pytest.mark.parametrize("graph, expect", [
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": set()}, []),
])
def test_the_cycle_check_finds_a_cycle(graph, expect):
    assert _cycles(graph) == expect


def test_the_package_check_finds_a_cycle_between_modules_that_have_none():
    graph = {"abtlab.a.x": {"abtlab.b.y"}, "abtlab.b.y": set(), "abtlab.b.z": {"abtlab.a.w"},
             "abtlab.a.w": set()}
    assert _cycles(graph) == []
    assert _cycles(_packages(graph)) == [["a", "b"]]


def _parameters(fn) -> int:
    """A def's parameters, self/cls left out, *args and **kwargs one each."""
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    return len(names) - (names[:1] in (["self"], ["cls"])) + (a.vararg is not None) + (a.kwarg is not None)


def test_the_sweep_passes_a_plan_not_long_argument_lists():
    """Settings travel as one plan object (abtlab.sweep.plan.Sweep), not as positional
    lists handed down the call chain (loop.run once took 20)."""
    long = sorted(f"{p.relative_to(PKG.parent)}:{n.lineno} {n.name} ({_parameters(n)})"
                  for p in (PKG / "sweep").rglob("*.py") for n in ast.walk(ast.parse(p.read_text()))
                  if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and _parameters(n) > 8)
    assert long == []


def test_the_parameter_count_counts_every_kind():
    fn = ast.parse("def f(self, a, /, b, *c, d, **e): pass").body[0]
    assert _parameters(fn) == 5
