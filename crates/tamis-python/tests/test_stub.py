"""The native module against its type stub and its Python wrappers.

``_tamis.pyi`` is written by hand beside ``src/lib.rs``; here it is compared with the module
itself (names, and per function and method its parameters and defaults), so the two cannot
drift apart unnoticed again. The wrappers hand the native side their keywords as one dict
(``ScanOptions``'s fields; the keywords of ``optimize``, ``index``, ``verify_index``, ``sql``
and ``Dataset``); a key either side lacks must fail loudly.
"""

import ast
import dataclasses
import inspect
import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tamis
from tamis import _tamis

STUB = Path(__file__).resolve().parents[1] / "python" / "tamis" / "_tamis.pyi"

#: A parameter without a default.
REQUIRED = "<required>"


def _stub_parameters(fn: ast.FunctionDef) -> list:
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    kinds = ["POSITIONAL_ONLY"] * len(a.posonlyargs) + ["POSITIONAL_OR_KEYWORD"] * len(a.args)
    out = [(p.arg, kind, d) for p, kind, d in zip(positional, kinds, defaults)]
    if a.vararg:
        out.append((a.vararg.arg, "VAR_POSITIONAL", None))
    out += [(p.arg, "KEYWORD_ONLY", d) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        out.append((a.kwarg.arg, "VAR_KEYWORD", None))
    return [(name, kind, REQUIRED if d is None else ast.literal_eval(d))
            for name, kind, d in out]


def _runtime_parameters(obj) -> list:
    out = []
    for p in inspect.signature(obj).parameters.values():
        # pyo3 writes a method's receiver as `$self` (positional-only); stubs write `self`.
        kind = "POSITIONAL_OR_KEYWORD" if p.name == "self" else p.kind.name
        out.append((p.name, kind, REQUIRED if p.default is p.empty else p.default))
    return out


def _runtime_methods(cls) -> set:
    """The methods a class defines itself (what a stub lists), without the constructor."""
    return {name for name, value in vars(cls).items() if callable(value) and name != "__new__"}


def stub_differences(stub_text: str) -> list:
    """Where ``stub_text`` (a ``_tamis.pyi``) and the native module disagree, one line each."""
    tree = ast.parse(stub_text)
    problems = []
    stubbed = set()
    for node in tree.body:
        if isinstance(node, ast.AnnAssign):
            name = node.target.id
            stubbed.add(name)
            if not hasattr(_tamis, name):
                problems.append(f"{name}: in the stub, not in the module")
        elif isinstance(node, ast.FunctionDef):
            stubbed.add(node.name)
            if not callable(getattr(_tamis, node.name, None)):
                problems.append(f"{node.name}(): in the stub, not in the module")
            elif _stub_parameters(node) != _runtime_parameters(getattr(_tamis, node.name)):
                problems.append(f"{node.name}(): stub {_stub_parameters(node)} != module "
                                f"{_runtime_parameters(getattr(_tamis, node.name))}")
        elif isinstance(node, ast.ClassDef):
            stubbed.add(node.name)
            cls = getattr(_tamis, node.name, None)
            if not isinstance(cls, type):
                problems.append(f"class {node.name}: in the stub, not in the module")
                continue
            problems += _class_differences(node, cls)
    public = {n for n in dir(_tamis) if not n.startswith("_")} | {"__version__"}
    problems += [f"{name}: in the module, not in the stub" for name in sorted(public - stubbed)]
    return problems


def _class_differences(node: ast.ClassDef, cls: type) -> list:
    problems = []
    methods = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
    init = methods.pop("__init__", None)
    if init is None:
        if cls.__text_signature__ is not None:
            problems.append(f"{node.name}: the module's constructor is not in the stub")
    elif _stub_parameters(init)[1:] != _runtime_parameters(cls):
        problems.append(f"{node.name}(): stub {_stub_parameters(init)[1:]} != module "
                        f"{_runtime_parameters(cls)}")
    for name in sorted(_runtime_methods(cls) - set(methods)):
        problems.append(f"{node.name}.{name}(): in the module, not in the stub")
    for name, method in methods.items():
        if name not in vars(cls):
            problems.append(f"{node.name}.{name}(): in the stub, not in the module")
        elif _stub_parameters(method) != _runtime_parameters(getattr(cls, name)):
            problems.append(f"{node.name}.{name}(): stub {_stub_parameters(method)} != module "
                            f"{_runtime_parameters(getattr(cls, name))}")
    return problems


def test_stub_matches_the_native_module():
    assert stub_differences(STUB.read_text()) == []


@pytest.mark.parametrize("old, new, needle", [
    # A parameter the module lacks; a default that differs; a default the module lacks; a
    # parameter the stub lacks.
    ("output: str, options", "output: str, memory_limit: int, options", "optimize_json()"),
    ("filter: Optional[str] = None", 'filter: Optional[str] = "x"', "Dataset.row_groups_left()"),
    ("def verify_index_json(path: str, options: Dict[str, Any])",
     "def verify_index_json(path: str, options: Dict[str, Any] = {})", "verify_index_json()"),
    ("def files(self)", "def files(self, sorted: bool = False)", "Dataset.files()"),
    ("def __init__(self, path: str, options: Dict[str, Any])",
     "def __init__(self, path: str, options: Dict[str, Any], lazy=1)", "Dataset()"),
    ("def sql(query: str, tables: List[Tuple[str, str]], options",
     "def sql(query: str, tables: List[Tuple[str, str]], threads: int, options", "sql()"),
    # A function, a method and a constant the stub lacks.
    ("def scan_files(", "def renamed_scan_files(", "scan_files: in the module"),
    ("def raise_interrupt(self)", "def _raise_interrupt(self)", "ArrowStream.raise_interrupt()"),
    ("DATAFUSION_FFI_MAJOR: int", "", "DATAFUSION_FFI_MAJOR"),
])
def test_stub_check_sees_drift(old, new, needle):
    text = STUB.read_text()
    assert text.count(old) == 1, old
    problems = stub_differences(text.replace(old, new))
    assert any(needle in p for p in problems), problems


@pytest.fixture
def small_file(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": pa.array(range(10), pa.int64())}), path)
    return path


def test_scan_option_conversions_name_fields():
    fields = {f.name for f in dataclasses.fields(tamis.ScanOptions)}
    assert set(tamis._TO_NATIVE) <= fields
    assert set(tamis.ScanOptions()._native()) == fields


def test_native_scan_refuses_missing_and_unknown_options(small_file):
    options = tamis.ScanOptions(where="id < 5")._native()
    assert _tamis.scan_all(str(small_file), options) is not None
    with pytest.raises(TypeError, match="'fast'"):
        _tamis.scan_all(str(small_file), {**options, "fast": True})
    del options["evaluation"]
    with pytest.raises(TypeError, match="'evaluation'"):
        _tamis.scan_all(str(small_file), options)


#: Per wrapper that hands its keywords to the native side as one dict: the wrapper, and the
#: native call it makes on a file (``t.parquet``, 10 rows of ``id``) with such a dict.
KEYWORD_WRAPPERS = {
    "optimize": (tamis.optimize, lambda f, kw: _tamis.optimize_json(
        [str(f)], str(f.parent / "o.parquet"), kw)),
    "index": (tamis.index, lambda f, kw: _tamis.index_json(str(f), ["id"], kw)),
    "verify_index": (tamis.verify_index, lambda f, kw: _tamis.verify_index_json(str(f), kw)),
    "sql": (tamis.sql, lambda f, kw: pa.RecordBatchReader.from_stream(_tamis.sql(
        "SELECT count(*) AS n FROM t", [("t", str(f))], kw)).read_all().column(0)[0].as_py()),
    "Dataset": (tamis.Dataset, lambda f, kw: _tamis.Dataset(str(f), kw).files()),
}


@pytest.mark.parametrize("name", sorted(KEYWORD_WRAPPERS))
def test_natives_take_exactly_their_wrappers_keywords(name, small_file):
    wrapper, call = KEYWORD_WRAPPERS[name]
    # The wrapper's keywords: its parameters with a default (the others go positionally).
    keywords = {n: p.default for n, p in inspect.signature(wrapper).parameters.items()
                if p.default is not p.empty}
    assert keywords
    before = sorted(os.listdir(small_file.parent))
    with pytest.raises(TypeError, match="does not know the keyword 'fast'"):
        call(small_file, {**keywords, "fast": True})
    for missing in keywords:
        with pytest.raises(TypeError, match=f"expects the keyword '{missing}'"):
            call(small_file, {k: v for k, v in keywords.items() if k != missing})
    # Refused before doing anything (no output file, no sidecar).
    assert sorted(os.listdir(small_file.parent)) == before
    assert call(small_file, keywords)


def test_keywords_refuse_a_conversion_for_an_unknown_name():
    assert tamis._keywords({"path": "p", "fpp": 1}, ("path",), fpp=1.0) == {"fpp": 1.0}
    with pytest.raises(AssertionError, match="fp"):
        tamis._keywords({"path": "p", "fpp": 1}, ("path",), fp=1.0)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes are Python 3.11+")
def test_a_bad_keyword_type_names_the_keyword(small_file, tmp_path):
    with pytest.raises(TypeError) as e:
        tamis.scan(small_file, threads="two")
    assert "while processing 'threads'" in getattr(e.value, "__notes__", [])
    with pytest.raises(TypeError) as e:
        tamis.optimize([small_file], tmp_path / "o.parquet", page_rows="many")
    assert "while processing 'page_rows'" in getattr(e.value, "__notes__", [])
    with pytest.raises(TypeError) as e:
        tamis.sql("SELECT 1", {"t": small_file}, threads="two")
    assert "while processing 'threads'" in getattr(e.value, "__notes__", [])
    with pytest.raises(TypeError) as e:
        tamis.Dataset(small_file, metadata_budget="lots")
    assert "while processing 'metadata_budget'" in getattr(e.value, "__notes__", [])
