"""The type stubs (spindle.pyi, next to the module wherever it is installed)
against the module itself: every public name the module has is declared in
the stubs, with the same public attributes for each class, and the stubs
declare nothing the module lacks."""
import ast
from pathlib import Path

import pytest

import spindle

STUB_ONLY = {"Value"}  # type aliases: names for annotations, not module attributes


def stub_tree():
    path = Path(spindle.__file__).with_name("spindle.pyi")
    if not path.exists():
        pytest.fail(f"{path} is missing: the stubs must be installed next to the module")
    return ast.parse(path.read_text())


def declared(body):
    names = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    names[t.id] = node
    return names


def public(names):
    return {n for n in names if not n.startswith("_") or n == "__version__"}


def test_stubs_declare_exactly_the_module_names():
    stubs = public(declared(stub_tree().body)) - STUB_ONLY
    module = public(dir(spindle)) - {"__version__"} | {"__version__"}
    assert sorted(module - stubs) == [], "in the module, missing from spindle.pyi"
    assert sorted(stubs - module) == [], "in spindle.pyi, not in the module"


@pytest.mark.parametrize("cls", ["SessionOptions", "RunOptions", "ModelMetadata", "NodeArg", "InferenceSession",
                                 "ExecutionMode", "GraphOptimizationLevel"])
def test_stub_classes_declare_exactly_the_public_attributes(cls):
    node = declared(stub_tree().body)[cls]
    stubs = public(declared(node.body))
    runtime = public(n for n in dir(getattr(spindle, cls)) if n not in dir(object))
    if cls in ("ExecutionMode", "GraphOptimizationLevel"):
        runtime = set(getattr(spindle, cls).__members__)
    assert sorted(runtime - stubs) == [], f"{cls}: in the module, missing from spindle.pyi"
    assert sorted(stubs - runtime) == [], f"{cls}: in spindle.pyi, not in the module"


def test_version_is_the_library_version():
    parts = spindle.__version__.split(".")
    assert len(parts) == 3 and all(p.isdigit() for p in parts), spindle.__version__
