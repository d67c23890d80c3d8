"""The type stubs (spindle/__init__.pyi, in the package wherever it is
installed) against the package itself: every name of spindle.__all__ is
declared in the stubs, with the same public attributes for each class, and
the stubs declare nothing the package lacks."""
import ast
import types
from pathlib import Path

import pytest

import spindle

STUB_ONLY = {"Value"}  # type aliases: names for annotations, not module attributes


def stub_tree():
    path = Path(spindle.__file__).with_name("__init__.pyi")
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


def test_stubs_declare_exactly_the_package_names():
    stubs = public(declared(stub_tree().body)) - STUB_ONLY
    exported = set(spindle.__all__)
    assert sorted(exported - stubs) == [], "in spindle.__all__, missing from __init__.pyi"
    assert sorted(stubs - exported) == [], "in __init__.pyi, not in spindle.__all__"
    # Everything public the package has (submodules and the modules it
    # imports aside) is exported.
    names = {n for n in public(dir(spindle)) if not isinstance(getattr(spindle, n), types.ModuleType)}
    assert sorted(names - exported) == [], "public in spindle, missing from __all__"
    assert all(hasattr(spindle, n) for n in exported)


@pytest.mark.parametrize("cls", ["SessionOptions", "RunOptions", "ModelMetadata", "NodeArg", "InferenceSession",
                                 "ExecutionMode", "ExecutionOrder", "GraphOptimizationLevel", "OrtValue",
                                 "IOBinding"])
def test_stub_classes_declare_exactly_the_public_attributes(cls):
    node = declared(stub_tree().body)[cls]
    stubs = public(declared(node.body))
    runtime = public(n for n in dir(getattr(spindle, cls)) if n not in dir(object))
    if cls in ("ExecutionMode", "ExecutionOrder", "GraphOptimizationLevel"):
        runtime = set(getattr(spindle, cls).__members__)
    assert sorted(runtime - stubs) == [], f"{cls}: in the package, missing from __init__.pyi"
    assert sorted(stubs - runtime) == [], f"{cls}: in __init__.pyi, not in the package"


def test_version_is_the_library_version():
    parts = spindle.__version__.split(".")
    assert len(parts) == 3 and all(p.isdigit() for p in parts), spindle.__version__


def documented(obj, name):
    lines = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    # pybind11 puts the signature ("name(arg0: int) -> None") first.
    if lines and lines[0].startswith(name + "(") and " -> " in lines[0]:
        lines = lines[1:]
    return any(line.strip() for line in lines)


def test_the_public_api_has_docstrings():
    missing = [n for n in spindle.__all__ if n != "__version__" and not documented(getattr(spindle, n), n)]
    for cls in ("InferenceSession", "OrtValue", "IOBinding", "SessionOptions", "RunOptions"):
        c = getattr(spindle, cls)
        missing += [f"{cls}.{n}" for n, v in vars(c).items() if callable(v) and not n.startswith("_")
                    and not documented(v, n)]
    assert missing == []
