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


# --- imports: the rules are read from docs/architecture.md, the imports from the source ----------


def _table(heading: str) -> list[list[str]]:
    """The rows of the first Markdown table after the line starting with ``heading``."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    after = text[text.index(heading) :].splitlines()
    start = next(i for i, line in enumerate(after) if line.startswith("|"))
    rows = []
    for line in after[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows[2:]  # past the header and the --- line


_NAMED = re.compile(r"^`(\w+)(?:\.py|/)`$")
_GROUP = re.compile(r"^\*\*(.+)\*\*$")


@cache
def rules() -> dict[str, set[str]]:
    """Each module of the map, and the modules it may import (``core`` expanded)."""
    raw: dict[str, list[str]] = {}
    for cells in _table("All modules are in"):
        named = _NAMED.match(cells[0])
        if named:
            raw[named.group(1)] = [w.strip() for w in cells[2].split(",") if w.strip()]
    core = groups()["core"]
    found: dict[str, set[str]] = {}
    for module, words in raw.items():
        allowed = set()
        for word in words:
            if word == "core":
                allowed |= core
            elif word == "anything":
                allowed |= set(raw)
            elif word != "nothing":
                assert word in raw, f"docs/architecture.md: {module} may import {word!r}?"
                allowed.add(word)
        found[module] = allowed
    return found


@cache
def groups() -> dict[str, set[str]]:
    """The modules under each bold heading row of the map (``core``, ``the job``...)."""
    found: dict[str, set[str]] = {}
    group = ""
    for cells in _table("All modules are in"):
        heading, named = _GROUP.match(cells[0]), _NAMED.match(cells[0])
        if heading:
            group = heading.group(1)
        elif named:
            found.setdefault(group, set()).add(named.group(1))
    return found


@cache
def only_in() -> dict[str, set[str]]:
    """Each outside package of the map, and the only modules that may import it."""
    return {
        cells[0]: {w.strip() for w in cells[1].split(",")}
        for cells in _table("Packages from outside that only some modules may import")
    }


def _files(module: str) -> list[Path]:
    single = PACKAGE / f"{module}.py"
    return [single] if single.exists() else sorted((PACKAGE / module).rglob("*.py"))


@cache
def tree(module: str) -> ast.Module:
    body: list[ast.stmt] = []
    for path in _files(module):
        body += ast.parse(path.read_text(encoding="utf-8")).body
    return ast.Module(body=body, type_ignores=[])


MODULES = sorted(
    [p.stem for p in PACKAGE.glob("*.py")] + [p.parent.name for p in PACKAGE.glob("*/__init__.py")]
)


def _type_checking_only(module: str) -> set[int]:
    """The import nodes under ``if TYPE_CHECKING:`` (types only, never run)."""
    found: set[int] = set()
    for node in ast.walk(tree(module)):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            found |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return found


def imports(module: str, *, types: bool = False) -> set[str]:
    """Every module ``module`` imports, at the top or inside a function (dotted names).

    ``types``: include imports under ``if TYPE_CHECKING:``."""
    skip = set() if types else _type_checking_only(module)
    found: set[str] = set()
    for node in ast.walk(tree(module)):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            if node.module == "numdiff_component":  # from numdiff_component import scoring
                found |= {f"numdiff_component.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{module}: use absolute imports")
    return found


def own(module: str) -> set[str]:
    """The package's other modules that ``module`` imports (at run time)."""
    names = {
        name.split(".")[1] for name in imports(module) if name.startswith("numdiff_component.")
    }
    return (names & set(MODULES)) - {module}


def outside(module: str) -> set[str]:
    """The top-level names of the other packages ``module`` imports."""
    return {name.split(".")[0] for name in imports(module)} - {"numdiff_component"}


def calls(module: str) -> set[str]:
    """The dotted names ``module`` calls, e.g. ``sys.exit``, ``print``."""
    return {ast.unparse(node.func) for node in ast.walk(tree(module)) if isinstance(node, ast.Call)}


def test_the_map_names_every_module_and_nothing_else() -> None:
    assert set(rules()) == set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_modules_import_what_the_architecture_says(module: str) -> None:
    allowed = rules()[module]
    assert own(module) <= allowed, f"{module} imports {own(module) - allowed}"


def test_outside_packages_are_imported_only_where_the_architecture_says() -> None:
    for package, allowed in only_in().items():
        found = {m for m in MODULES if package in outside(m)}
        assert found <= allowed, f"{package} imported by {found - allowed}"


def test_no_import_goes_round_in_a_circle() -> None:
    """The imports, type-only ones included, form no cycle: no arrow goes back up."""
    graph = {
        m: {n for n in MODULES if f"numdiff_component.{n}" in imports(m, types=True)} - {m}
        for m in MODULES
    }
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, " -> ".join((*path, module))
        if module in done:
            return
        for following in sorted(graph[module]):
            visit(following, (*path, module))
        done.add(module)

    for module in MODULES:
        if module not in {"__init__", "cli", "__main__", "model_code"}:  # the entry points
            visit(module, ())


def test_the_rule_reader() -> None:
    """The map is read as written: core is the five core modules, the job may name engines."""
    core = {"errors", "options", "reading", "unit_scoring", "scoring", "aggregate", "hints"}
    assert groups()["core"] == core
    assert {"pandas_engine", "spark"} <= rules()["job"]
    assert "job" not in rules()["spark"] and "job" not in rules()["pandas_engine"]
    assert only_in()["mlflow"] >= {"tracking", "evaluate"}
    assert {"pandas_engine", "spark"} <= own("job")  # inside engine_for
    assert "numdiff_component.request" in imports("spark")


@pytest.mark.parametrize("module", sorted(groups()["core"]))
def test_core_does_no_file_or_outside_work(module: str) -> None:
    assert not outside(module) & (OUTSIDE_THE_CORE | FILES), outside(module)
    assert "open" not in calls(module)


def test_compare_is_pure() -> None:
    for module in ("compare", "compare_render"):
        assert not outside(module) & (OUTSIDE_THE_CORE | FILES), module
        assert "open" not in calls(module)


def test_job_is_engine_neutral() -> None:
    """The job imports an engine only inside `engine_for`, and never Spark, MLflow or click."""
    assert not outside("job") & {"pyspark", "py4j", "mlflow", "click"}
    engines = groups()["the job"] - {"job"}
    for node in tree("job").body:
        if isinstance(node, ast.FunctionDef) and node.name == "engine_for":
            continue
        named = {
            name.split(".")[-1]
            for inner in ast.walk(node)
            if isinstance(inner, ast.ImportFrom) and inner.module
            for name in (inner.module, *(alias.name for alias in inner.names))
        }
        assert not named & engines, f"job.py line {node.lineno} imports an engine"


def test_runs_start_and_end_only_in_tracking() -> None:
    for module in MODULES:
        if module == "tracking":
            continue
        started = {c for c in calls(module) if c.endswith((".start_run", ".end_run"))}
        assert not started, f"{module}: {started}"


def test_only_the_cli_prints_or_exits() -> None:
    forbidden = {"print", "exit", "quit", "sys.exit", "os._exit", "click.echo", "click.secho"}
    command_line = {m for m in MODULES if m == "cli" or m.startswith("cli_")}
    assert {"sys.exit", "click.echo"} <= set().union(*(calls(m) for m in command_line))
    # The one exception: the forked child that makes the report ends itself (`InChild`).
    ends_a_child = {"report_plots": {"os._exit"}}
    for module in set(MODULES) - command_line:
        found = calls(module) & forbidden - ends_a_child.get(module, set())
        assert not found, f"{module}: {found}"


def test_no_module_is_over_450_lines() -> None:
    """Each module stays small enough to read in one sitting (issue 18)."""
    for module in MODULES:
        for path in _files(module):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            assert lines <= 450, f"{path.relative_to(ROOT)}: {lines} lines"


def test_html_report_comes_from_an_autoescaping_template() -> None:
    from numdiff_component.report_render import _environment

    assert _environment(True).autoescape is True
    assert (PACKAGE / "templates" / "report.html.j2").is_file()
    assert "<html" not in (PACKAGE / "report.py").read_text()  # no page built by hand


# --- the architecture document and the public API -----------------------------------------------


def test_architecture_names_every_module() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    missing = [m for m in MODULES if f"`{m}.py`" not in text and f"`{m}/`" not in text]
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
