"""The documents hold: docs/SPEC.md is the contract, links resolve, and the import rules of
docs/architecture.md are what the source does (read with ``ast``, nothing imported)."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

import numdiff_component

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PACKAGE = ROOT / "numdiff_component"
SPEC = ROOT / "docs" / "SPEC.md"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

CORE = {"errors", "options", "parse", "scoring", "aggregate"}
ENGINES = {"pandas_engine", "spark"}
FILES = {"os", "io", "pathlib", "tempfile", "shutil", "glob"}
OUTSIDE_THE_CORE = {"mlflow", "click", "pyspark", "py4j", "matplotlib", "pydantic"}


def test_the_spec_lists_the_public_api_the_package_exports() -> None:
    """docs/SPEC.md is the contract of this repository: each name its §4 lists is exported."""
    section = SPEC.read_text(encoding="utf-8").split("\n## 4.", 1)[1].split("\n## ", 1)[0]
    listed = [
        name
        for line in section.splitlines()
        if line.startswith("- ")
        for name in re.findall(r"`(\w+)", line.split("→")[0].split(" as in ")[0])
    ]
    assert len(listed) >= 8, listed
    missing = sorted(set(listed) - set(numdiff_component.__all__))
    assert not missing, f"docs/SPEC.md §4 lists {missing}, which numdiff_component does not export"


# --- links ---------------------------------------------------------------------------------------

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|^\[[^\]]+\]:\s*(\S+)", re.M)
_CODE = re.compile(r"^(`{3,}|~{3,}).*?^\1", re.M | re.S)


def links(document: Path) -> list[str]:
    """The link targets of a Markdown file, outside code blocks and code spans."""
    text = _CODE.sub("", document.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)
    return [inline or reference for inline, reference in _LINK.findall(text)]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve_inside_the_repository(document: Path) -> None:
    checked = 0
    for target in links(document):
        parsed = urlparse(target)
        if parsed.scheme or target.startswith("#"):
            continue  # a web address, or a heading of the same page
        path = (document.parent / unquote(parsed.path)).resolve()
        assert path.is_relative_to(ROOT), f"{document.name}: {target!r} leaves the repository"
        assert path.exists(), f"{document.name}: {target!r} does not exist"
        checked += 1
    if document.name == "README.md":
        assert checked >= 3  # SPEC, architecture, examples: the parser sees the links


def test_link_parser(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        'see [a](docs/SPEC.md), ![b](x.png "title"), [c](#top), `[d](no.md)`\n'
        "```\n[e](no.md)\n```\n[f]: ref.md\n"
    )
    assert links(page) == ["docs/SPEC.md", "x.png", "#top", "ref.md"]


# --- imports ------------------------------------------------------------------------------------


@cache
def tree(module: str) -> ast.Module:
    return ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))


MODULES = sorted(p.stem for p in PACKAGE.glob("*.py"))


def _type_checking_only(module: str) -> set[int]:
    """Line numbers of the imports under ``if TYPE_CHECKING:`` (types only, never run)."""
    lines: set[int] = set()
    for node in ast.walk(tree(module)):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            lines |= {n.lineno for stmt in node.body for n in ast.walk(stmt)}
    return lines


def imports(module: str, *, types: bool = False) -> set[str]:
    """Every module ``module`` imports, at the top or inside a function (dotted names).

    ``types``: include imports under ``if TYPE_CHECKING:``."""
    skip = set() if types else _type_checking_only(module)
    found: set[str] = set()
    for node in ast.walk(tree(module)):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            if node.module == "numdiff_component":  # from numdiff_component import scoring
                found |= {f"numdiff_component.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{module}.py: use absolute imports")
    return found


def own(module: str) -> set[str]:
    """The package's modules that ``module`` imports (at run time)."""
    names = {
        name.split(".")[1] for name in imports(module) if name.startswith("numdiff_component.")
    }
    return names & set(MODULES)


def outside(module: str) -> set[str]:
    """The top-level names of the other packages ``module`` imports."""
    return {name.split(".")[0] for name in imports(module)} - {"numdiff_component"}


def calls(module: str) -> set[str]:
    """The dotted names ``module`` calls, e.g. ``sys.exit``, ``print``."""
    return {ast.unparse(node.func) for node in ast.walk(tree(module)) if isinstance(node, ast.Call)}


@pytest.mark.parametrize("module", sorted(CORE))
def test_core_imports_only_the_core_and_no_mlflow_click_or_files(module: str) -> None:
    assert own(module) <= CORE, f"{module}.py imports {own(module) - CORE}"
    assert not outside(module) & (OUTSIDE_THE_CORE | FILES), outside(module)
    assert "open" not in calls(module)


@pytest.mark.parametrize(
    ("module", "allowed"),
    [
        ("report", CORE),
        ("compare", CORE),
        ("compare_render", CORE | {"compare"}),
        ("tracking", CORE),
        ("evaluate", CORE),
        ("pyfunc", CORE | {"tracking"}),
        ("model_code", {"pyfunc"}),
        ("tables", {"errors"}),
        ("pandas_engine", CORE | {"tables"}),
        ("spark", CORE | {"tables"}),
        ("job", CORE | {"tables", "report", "tracking"} | ENGINES),
    ],
)
def test_modules_import_what_the_architecture_says(module: str, allowed: set[str]) -> None:
    assert own(module) <= allowed, f"{module}.py imports {own(module) - allowed}"


def test_compare_is_pure() -> None:
    for module in ("compare", "compare_render"):
        assert not outside(module) & (OUTSIDE_THE_CORE | FILES), module
        assert "open" not in calls(module)


def test_no_engine_imports_another_engine() -> None:
    for engine in ENGINES:
        assert not own(engine) & (ENGINES - {engine}), engine


def test_job_is_engine_neutral() -> None:
    """The job imports an engine only inside `engine_for`, and never Spark, MLflow or click."""
    assert not outside("job") & {"pyspark", "py4j", "mlflow", "click"}
    for node in tree("job").body:
        if isinstance(node, ast.FunctionDef) and node.name == "engine_for":
            continue
        named = {
            name.split(".")[-1]
            for inner in ast.walk(node)
            if isinstance(inner, ast.ImportFrom) and inner.module
            for name in (inner.module, *(alias.name for alias in inner.names))
        }
        assert not named & ENGINES, f"job.py line {node.lineno} imports an engine"


def test_only_the_boundaries_import_mlflow_click_and_spark() -> None:
    users = {
        "mlflow": {"tracking", "evaluate", "pyfunc", "model_code", "tables"},
        "click": {"cli"},
        "pyspark": {"spark"},
        "py4j": {"spark"},
    }
    for package, allowed in users.items():
        found = {m for m in MODULES if package in outside(m)}
        assert found <= allowed, f"{package} imported by {found - allowed}"


def test_runs_start_and_end_only_in_tracking() -> None:
    for module in MODULES:
        if module == "tracking":
            continue
        started = {c for c in calls(module) if c.endswith((".start_run", ".end_run"))}
        assert not started, f"{module}.py: {started}"


def test_only_the_cli_prints_or_exits() -> None:
    forbidden = {"print", "exit", "quit", "sys.exit", "os._exit", "click.echo", "click.secho"}
    for module in MODULES:
        if module == "cli":
            assert {"sys.exit", "click.echo"} <= calls(module)
            continue
        assert not calls(module) & forbidden, f"{module}.py: {calls(module) & forbidden}"


def test_import_reader() -> None:
    assert "numdiff_component.job" in imports("spark", types=True)
    assert "job" not in own("spark")  # only under TYPE_CHECKING
    assert {"pandas_engine", "spark"} <= own("job")  # inside engine_for


# --- the architecture document and the public API -----------------------------------------------


def test_architecture_names_every_module() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    missing = [m for m in MODULES if f"`{m}.py`" not in text]
    assert not missing, f"docs/architecture.md does not describe {missing}"


def test_architecture_lists_the_public_api() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    missing = [name for name in numdiff_component.__all__ if f"`{name}`" not in text]
    assert not missing, f"docs/architecture.md does not list {missing}"
    for name in numdiff_component.__all__:
        assert getattr(numdiff_component, name) is not None


def test_spark_api_is_there() -> None:
    spark = ast.unparse(tree("spark"))
    for name in ("score_spark", "aggregate_spark", "load_spark_table", "SparkEngine"):
        assert re.search(rf"^(def|class) {name}\b", spark, re.M), name
        assert f"`{name}`" in ARCHITECTURE.read_text(encoding="utf-8")


def test_every_test_the_readme_names_exists() -> None:
    """The Guarantees cite the tests that hold them: each must be a test function there."""
    cited = set(re.findall(r"tests/(test_\w+\.py)::(\w+)", README.read_text()))
    assert cited
    for file, name in sorted(cited):
        assert f"def {name}(" in (ROOT / "tests" / file).read_text(), f"{file}::{name}"
