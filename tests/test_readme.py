"""The code blocks of the README and of the guide run as written and print what they show.

The pages are README.md and every docs/*.md except docs/SPEC.md (the contract, a copy of the
shared one). How each fenced block of a page is treated (keep to this when you edit a page):

- ``python`` blocks of ``>>>`` examples run with doctest, top to bottom in one namespace per
  page.
- Any other ``python`` block is a script, run as a user would save and run it. When the next
  block is a ``text`` block (only blank lines between), that block is what the script prints
  on stdout; without one, its stdout is not checked. It must exit with 0.
- A ``console`` block is a terminal session: each ``$ command`` (a trailing ``\\`` continues it
  on the next line) runs in one bash session, and the lines up to the next ``$`` are its output,
  stdout and stderr as the terminal shows them. The exit code is not checked: an error shows
  in the output (``numdiff: error: ...``), and ``echo "exit code $?"`` shows a code.
- A ``bash`` (or ``sh``, ``shell``) block with no ``$`` prompt is a script of commands: it
  runs with ``bash -e`` and must exit with 0; its output is not checked.
- Blocks in other languages (``text``, ``markdown``, none) are not run.

Output is compared as doctest does with ELLIPSIS and NORMALIZE_WHITESPACE: ``...`` stands for
any text, on one line or across lines (run ids, temporary paths, timings, MLflow's own log
lines), and runs of spaces and line breaks compare equal (a long line may be wrapped).

Every block runs in a new folder holding a copy of ``examples/``, ``MLproject`` and
``conda.yaml`` (what a user has in a clone), this checkout's package first on ``PYTHONPATH`` and
temporary files kept apart (``TMPDIR``). The blocks of one page share one sqlite tracking store
(``MLFLOW_TRACKING_URI``; already initialised, as after a first run, so MLflow's one-time
"Creating initial MLflow database tables" lines do not show).

For speed, importing MLflow once per page rather than once per block: the scripts of a page
that stand alone (no ``continued`` block with them) run one after another in one Python
process, each in a fresh ``__main__`` namespace in its own folder, with its stdout and stderr
caught at the file descriptors. The shell blocks' ``numdiff`` is the shim of a fork server
(`tests.fixtures.forkserver`, one per run): the console script runs in a child of a process
that has imported MLflow, with the shell's descriptors, argv, folder and environment, and its
exit status (tested below against the console script itself). A block that is the same,
character for character, as a block of an earlier page (the README repeats a few examples of
the guide) runs once, on the first page; the copies are skipped, naming it. So does a block
that stands alone and is the same as the first block of a group with ``continued`` blocks: it
runs in that group.

An HTML comment on the line before a block's opening fence (blank lines allowed between)
changes how it runs:

- ``<!-- not run: REASON -->``: the block is not run; the reason shows as the test's skip
  reason. Use it only for what cannot run here (a cluster, S3, an install, a server left
  running); say which test covers it, if one does.
- ``<!-- run: continued -->``: the block runs after the block before it, in the same folder
  (to use the files or runs that block made).
- ``<!-- run: slow -->``: the block is marked ``slow`` (``pytest -m "not slow"`` skips it).
  Words combine: ``<!-- run: continued, slow -->``.

A block that needs the ``spark`` extra (``--engine spark``, ``numdiff_component.engines.spark``,
``pyspark``) is skipped, saying so, when pyspark or Java is missing.
"""

from __future__ import annotations

import contextlib
import doctest
import errno
import fnmatch
import importlib.util
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from numdiff_component.options import SCHEMA
from tests.fixtures import forkserver
from tests.fixtures.commands import STARTING_ENV
from tests.fixtures.run import BOUND, RUN_DIR, once_per_run

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "SPEC.md")]
BIN = str(Path(sys.executable).parent)
SHIPPED = ("examples", "MLproject", "conda.yaml")  # copied into each block's folder
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
TIMEOUT = 600  # seconds per block

SHELLS = ("console", "bash", "sh", "shell")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)")
_DIRECTIVE = re.compile(r"<!--\s*(not run|run)\s*:\s*(.*?)\s*-->\Z", re.S)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # colours: a terminal shows them, it does not print them
_RUN_WORDS = {"continued", "slow"}
_MARK = "<<<readme-command-done>>>"
_SPARK = re.compile(r"--engine[ =]spark|numdiff_component\.spark|\bpyspark\b")


@dataclass
class Block:
    """A fenced block: its page, where it starts (1-based line of the fence), language, text."""

    page: str
    line: int
    lang: str
    text: str
    not_run: str | None = None  # the reason, when marked not run
    run: set[str] = field(default_factory=set)  # words of a ``run:`` directive
    expected: Block | None = None  # the ``text`` block showing what a script prints
    preceded_by_text: bool = True  # prose between this block and the one before

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def kind(self) -> str:
        """doctest, script, session (console with '$ ' prompts), shell, or none (not run)."""
        if self.lang == "python":
            return "doctest" if re.search(r"^>>> ", self.text, re.M) else "script"
        if self.lang in SHELLS:
            return "session" if re.search(r"^\$ ", self.text, re.M) else "shell"
        return "none"

    @property
    def content(self) -> tuple[str, str, str, str | None]:
        """What the block runs and shows: equal contents run alike on any page."""
        shown = self.expected.text if self.expected is not None else None
        return (self.kind, ",".join(sorted(self.run)), self.text, shown)


def read_blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, with its directive and its output block."""
    page = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    last_end = -1
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, lang = match.groups()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        block = Block(page, start + 1, lang.lower(), "\n".join(body) + "\n")
        before = "\n".join(lines[last_end + 1 : start]).strip()
        block.preceded_by_text = bool(before)
        if before.endswith("-->") and (directive := _DIRECTIVE.search(before)):
            words = " ".join(directive.group(2).split())
            if directive.group(1) == "not run":
                block.not_run = words
            else:
                block.run = {w.strip() for w in words.split(",") if w.strip()}
        if blocks and blocks[-1].kind == "script" and lang == "text" and not block.preceded_by_text:
            blocks[-1].expected = block
        blocks.append(block)
        last_end = i
        i += 1
    return blocks


BLOCKS = {page: read_blocks(page) for page in PAGES}
RUNNABLE = [b for page in PAGES for b in BLOCKS[page] if b.kind in ("script", "session", "shell")]


def groups(blocks: list[Block]) -> Iterator[list[Block]]:
    """The runnable blocks, each with the ``continued`` blocks that follow it on its page."""
    group: list[Block] = []
    for block in blocks:
        if block.not_run is not None:
            continue
        if "continued" in block.run and group and group[-1].page == block.page:
            group.append(block)
            continue
        if group:
            yield group
        group = [block]
    if group:
        yield group


def batched(group: list[Block]) -> bool:
    """A script that stands alone runs in its page's one Python process."""
    return len(group) == 1 and group[0].kind == "script"


def repeats(all_groups: list[list[Block]]) -> dict[str, str]:
    """The groups another group runs, by where they start, each with the reason: a group the
    same as an earlier one, and a block standing alone that is the same as the first block of
    a group with ``continued`` blocks (that group runs it, then the blocks that go on from it)."""
    leading: dict[tuple[str, str, str, str | None], str] = {}
    for group in all_groups:
        if len(group) > 1:
            leading.setdefault(group[0].content, group[0].where)
    first: dict[tuple[tuple[str, str, str, str | None], ...], str] = {}
    found = {}
    for group in all_groups:
        where, key = group[0].where, tuple(block.content for block in group)
        if key in first:
            found[where] = f"{where} is the same as {first[key]}, which runs it"
        elif len(group) == 1 and group[0].content in leading:
            found[where] = f"{where} is the same as {leading[group[0].content]}, which runs it"
        else:
            first[key] = where
    return found


def _spark_missing() -> str | None:
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install '.[spark]')"
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        return "no Java for Spark (java on PATH or JAVA_HOME)"
    return None


def _params() -> Iterator[object]:
    for block in RUNNABLE:
        if block.not_run is not None:
            yield pytest.param(
                [block],
                id=block.where,
                marks=pytest.mark.skip(reason=f"{block.where} not run: {block.not_run}"),
            )
    spark_missing = _spark_missing()
    repeated = repeats(list(groups(RUNNABLE)))
    for group in groups(RUNNABLE):
        where = group[0].where
        marks: list[pytest.MarkDecorator] = []
        if any("slow" in block.run for block in group):
            marks.append(pytest.mark.slow)
        if where in repeated:
            marks.append(pytest.mark.skip(reason=repeated[where]))
        if spark_missing and any(_SPARK.search(block.text) for block in group):
            marks.append(pytest.mark.skip(reason=f"{where} needs the spark extra: {spark_missing}"))
        yield pytest.param(group, id=where, marks=marks)


# --- the checks ---------------------------------------------------------------------------------


def _matches(want: str, got: str) -> bool:
    got = _ANSI.sub("", got)
    return doctest.OutputChecker().check_output(want.strip() + "\n", got.strip() + "\n", FLAGS)


def _mismatch(where: str, command: str, want: str, got: str) -> str:
    return (
        f"{where}: the output of\n{command}\nis not what the page shows.\n"
        f"--- page\n{want.strip()}\n--- actual\n{got.strip()}\n"
    )


def shell_env() -> dict[str, str]:
    """The environment of every page's blocks but their store and TMPDIR: a user's (none of
    this run's MLflow, numdiff or pytest settings), this checkout's package first on
    PYTHONPATH, and ``numdiff`` the shim of this run's fork server (`tests.fixtures.forkserver`:
    the real console script in a child of a process that has imported MLflow already)."""
    env = {
        k: v
        for k, v in STARTING_ENV.items()
        if not k.startswith(("MLFLOW_", "NUMDIFF_", "PYTEST_")) and k not in forkserver.PER_CALL
    }
    shims = Path(os.environ[RUN_DIR]) / "forkserver" / "bin"
    env.update(
        MLFLOW_DISABLE_TELEMETRY="true",
        PATH=os.pathsep.join([str(shims), BIN, env.get("PATH", "")]),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
        PYTHONUNBUFFERED="1",
    )
    return env


def _start_forkserver(folder: Path) -> None:
    forkserver.start(folder, shell_env(), os.path.join(BIN, "numdiff"))
    (folder / "runner.py").write_text(_RUNNER)


def _warm() -> Path:
    """The fork server's folder: its ``python-warm`` runs ``runner.py`` (`_RUNNER`)."""
    return once_per_run("forkserver", _start_forkserver)


class Pages:
    """Per page: a folder with the page's tracking store, a new folder for each block in it, and
    the results of the page's standalone scripts, run together on first need."""

    def __init__(self, base: Path, template: Path, selected: list[list[Block]]) -> None:
        self.base = base
        self.template = template
        self.selected = selected  # the groups this process runs: their scripts run together
        self.envs: dict[str, dict[str, str]] = {}
        self.scripts: dict[str, dict[str, subprocess.CompletedProcess[str]]] = {}

    def _page_dir(self, page: str) -> Path:
        return self.base / re.sub(r"\W", "_", page)

    def env(self, page: str) -> dict[str, str]:
        """The environment of a shell with the page's private store."""
        if page in self.envs:
            return self.envs[page]
        folder = self._page_dir(page)
        folder.mkdir()
        store = folder / "mlflow.db"
        shutil.copy(self.template, store)
        # The template's Default experiment keeps its artifacts where the template was made:
        # here, as in a store made in this folder, they go to ./mlruns.
        with contextlib.closing(sqlite3.connect(store)) as db, db:
            db.execute(
                "UPDATE experiments SET artifact_location = ? WHERE experiment_id = 0",
                (str(folder / "mlruns" / "0"),),
            )
        scratch = folder / "tmp"
        scratch.mkdir()
        env = {**shell_env(), "MLFLOW_TRACKING_URI": f"sqlite:///{store}", "TMPDIR": str(scratch)}
        self.envs[page] = env
        return env

    def folder(self, block: Block) -> Path:
        """A new folder like a user's clone, for the group that ``block`` starts."""
        self.env(block.page)
        work = self._page_dir(block.page) / f"block-{block.line}"
        if work.exists():
            return work  # made for the page's scripts, run together
        work.mkdir()
        for name in SHIPPED:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, work / name)
            elif source.is_file():
                shutil.copy(source, work / name)
        return work

    def script(self, block: Block) -> subprocess.CompletedProcess[str]:
        """What the standalone script ``block`` did: every selected one of its page runs in one
        Python process the first time one is asked for."""
        if block.page not in self.scripts:
            todo = [g[0] for g in self.selected if batched(g) and g[0].page == block.page]
            self.scripts[block.page] = self._run_scripts(block.page, todo or [block])
        scripts = self.scripts[block.page]
        if block.where not in scripts:  # not batched with its page's others: it runs alone
            scripts.update(self._run_scripts(block.page, [block]))
        return scripts[block.where]

    def _run_scripts(
        self, page: str, blocks: list[Block]
    ) -> dict[str, subprocess.CompletedProcess[str]]:
        env = self.env(page)
        jobs = []
        for block in blocks:
            work = self.folder(block)
            script = work.parent / f"block_{block.line}.py"  # outside the folder it sees
            script.write_text(block.text, encoding="utf-8")
            jobs.append({"where": block.where, "script": str(script), "cwd": str(work)})
        plan = self._page_dir(page) / "scripts.json"
        plan.write_text(json.dumps(jobs), encoding="utf-8")
        warm = _warm()
        done = subprocess.run(
            [warm / "python-warm", warm / "runner.py", str(plan)],
            cwd=self._page_dir(page),
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT * len(jobs),
        )
        codes = json.loads(plan.with_suffix(".codes.json").read_text()) if done.stdout else {}
        results = {}
        for job in jobs:
            out, err = (Path(job["script"]).with_suffix(s) for s in (".out", ".err"))
            code = codes.get(job["where"])
            results[job["where"]] = subprocess.CompletedProcess(
                job["script"],
                1 if code is None else code,
                out.read_text(errors="replace") if out.exists() else "",
                (err.read_text(errors="replace") if err.exists() else "")
                + ("" if code is not None else f"\nthe scripts' process failed:\n{done.stderr}"),
            )
        return results


# The scripts of one page in one process (forked by the fork server): each runs as ``python
# script.py`` would run it (a fresh ``__main__``, its folder as the working folder, its own
# argv), its stdout and stderr caught at file descriptors 1 and 2, so what MLflow or a child
# process writes is caught too.
_RUNNER = r"""
import json, os, runpy, sys, traceback
from pathlib import Path

sys.path[0] = ""  # the working folder, as for python -c

plan = Path(sys.argv[1])
codes = {}
for job in json.loads(plan.read_text()):
    script = Path(job["script"])
    os.chdir(job["cwd"])
    sys.argv = [str(script)]
    sys.stdout.flush(); sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    out, err = open(script.with_suffix(".out"), "wb"), open(script.with_suffix(".err"), "wb")
    with out, err:
        os.dup2(out.fileno(), 1); os.dup2(err.fileno(), 2)
        code = 0
        try:
            runpy.run_path(str(script), run_name="__main__")
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush(); sys.stderr.flush()
            os.dup2(saved[0], 1); os.dup2(saved[1], 2)
            os.close(saved[0]); os.close(saved[1])
    if "mlflow" in sys.modules:  # a run a failed script left open would take the next one's
        import mlflow
        while mlflow.active_run() is not None:
            mlflow.end_run()
    codes[job["where"]] = code
plan.with_suffix(".codes.json").write_text(json.dumps(codes))
print("done")
"""


@pytest.fixture(scope="session")
def pages(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, _empty_store: Path
) -> Pages:
    selected = [
        item.callspec.params["group"]
        for item in request.session.items
        if item.get_closest_marker("skip") is None
        and getattr(item, "callspec", None) is not None
        and item.originalname == "test_block"
    ]
    # An xdist worker collects every test but runs only those it is sent: unless a page's
    # blocks all come to one worker (--dist loadscope: its class), each script runs on its own.
    if os.environ.get("PYTEST_XDIST_WORKER") and request.config.getoption("dist", "") not in (
        "loadscope",
        "loadfile",
    ):
        selected = []
    _warm()
    return Pages(tmp_path_factory.mktemp("pages"), _empty_store, selected)


def _run(args: list[str], work: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``args`` in the block's folder, with no input (a command that asks for input fails,
    never hangs), stderr merged into stdout."""
    return subprocess.run(
        args,
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT,
    )


def _check_script(block: Block, done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, f"{block.where}: the script failed:\n{done.stderr}"
    if block.expected is not None and not _matches(block.expected.text, done.stdout):
        pytest.fail(_mismatch(block.where, "the script", block.expected.text, done.stdout))


def _run_script(block: Block, work: Path, env: dict[str, str]) -> None:
    script = work.parent / f"block_{block.line}.py"  # outside the folder the script sees
    script.write_text(block.text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    _check_script(block, done)


def _run_shell(block: Block, work: Path, env: dict[str, str]) -> None:
    done = _run(["bash", "-e", "-c", block.text], work, env)
    assert done.returncode == 0, f"{block.where}: the commands failed:\n{done.stdout}"


def transcript(text: str) -> list[tuple[str, str]]:
    """The ``(command, output)`` pairs of a console session."""
    pairs: list[tuple[list[str], list[str]]] = []
    continued = False
    for line in text.splitlines():
        if continued:
            pairs[-1][0].append(line)
        elif line.startswith("$ "):
            pairs.append(([line[2:]], []))
        elif pairs:
            pairs[-1][1].append(line)
        continued = bool(pairs) and line.endswith("\\") and not pairs[-1][1]
    return [("\n".join(command), "\n".join(output)) for command, output in pairs]


def _run_session(block: Block, work: Path, env: dict[str, str]) -> None:
    pairs = transcript(block.text)
    # One bash for the whole session (so cd and export carry over), a mark after each command,
    # and the command's exit status kept for the next one (``echo $?``).
    script = "".join(
        f"{command}\n__status=$?; printf '\\n%s\\n' '{_MARK}'; (exit $__status)\n"
        for command, _ in pairs
    )
    done = _run(["bash", "-c", script], work, env)
    outputs = done.stdout.split(f"\n{_MARK}\n")
    for n, (command, want) in enumerate(pairs):
        got = outputs[n] if n < len(outputs) else ""
        if not _matches(want, got):
            pytest.fail(_mismatch(block.where, f"$ {command}", want, got))


def _check_group(group: list[Block], pages: Pages) -> None:
    if batched(group):
        _check_script(group[0], pages.script(group[0]))
    else:
        work, env = pages.folder(group[0]), pages.env(group[0].page)
        run = {"script": _run_script, "shell": _run_shell, "session": _run_session}
        for block in group:
            run[block.kind](block, work, env)
    left = sorted(p.name for p in pages.folder(group[0]).iterdir() if not ignored(p))
    assert set(left) <= set(SHIPPED), (
        f"{group[0].where} leaves {left} in the user's clone, not all named by .gitignore: "
        "write under numdiff_results/ or a temporary folder (git status stays clean)"
    )


IGNORED = [
    line.strip()
    for line in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.startswith(("#", "!"))
]


def ignored(path: Path) -> bool:
    """Whether a name at the top of a clone is one .gitignore names (its simple patterns: a
    name or a glob, a folder's with a trailing ``/``)."""
    return any(
        fnmatch.fnmatch(path.name, pattern.strip("/"))
        and (path.is_dir() or not pattern.endswith("/"))
        for pattern in IGNORED
    )


def _page_tests(page: str, params: list[object]) -> type:
    """The blocks of ``page`` as one class: pytest-xdist's ``--dist loadscope`` sends a class's
    tests to one worker, so that a page's scripts run together in its one process, and the pages
    spread over the workers."""

    @pytest.mark.parametrize("group", params)
    def test_block(self: object, group: list[Block], pages: Pages) -> None:
        _check_group(group, pages)

    name = "TestPage_" + re.sub(r"\W", "_", page)
    return type(name, (), {"test_block": test_block})


_BY_PAGE: dict[str, list[object]] = {}
for _param in _params():
    _BY_PAGE.setdefault(_param.values[0][0].page, []).append(_param)
for _page, _page_params in _BY_PAGE.items():
    _class = _page_tests(_page, _page_params)
    globals()[_class.__name__] = _class


DOCTEST_PAGES = [p for p in PAGES if any(b.kind == "doctest" for b in BLOCKS[p])]


@pytest.mark.parametrize("page", DOCTEST_PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_doctests(page: Path, tracking_uri: str) -> None:
    failures, tried = doctest.testfile(
        str(page), module_relative=False, optionflags=FLAGS | doctest.REPORT_UDIFF
    )
    assert tried > 2 and failures == 0


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_directives_are_understood(page: Path) -> None:
    """A misspelt directive would silently run, or skip, a block."""
    for block in BLOCKS[page]:
        assert block.run <= _RUN_WORDS, f"{block.where}: unknown run: {block.run}"
        assert block.not_run != "", f"{block.where}: 'not run' needs a reason"
        if block.not_run is not None or block.run:
            assert block.kind in ("script", "session", "shell"), (
                f"{block.where}: a directive on a {block.lang or 'plain'} block is idle"
            )
    text = page.read_text(encoding="utf-8")
    for comment in re.findall(r"<!--.*?-->", text, re.S):
        if re.search(r"\brun\b", comment):
            assert _DIRECTIVE.match(comment), f"not a directive of this harness: {comment}"


def test_readme_is_short() -> None:
    """The README is for a newcomer (issue 19): the rest is in the guide."""
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 300


def test_every_test_the_pages_cite_exists() -> None:
    """The guarantees cite the tests that hold them: each must be a test function there."""
    cited = {
        (file, name, page.relative_to(ROOT).as_posix())
        for page in PAGES
        for file, name in re.findall(r"tests/((?:\w+/)?test_\w+\.py)::(\w+)", page.read_text())
    }
    assert len(cited) > 20
    for file, name, page in sorted(cited):
        path = ROOT / "tests" / file
        assert path.is_file() and f"def {name}(" in path.read_text(), f"{page}: {file}::{name}"


def _signatures(name: str) -> list[tuple[str, str]]:
    """Every ``name(...)`` signature written in a ``text`` block of the pages, with its page."""
    found = []
    for page in PAGES:
        for block in BLOCKS[page]:
            for match in re.finditer(rf"^{name}\(", block.text, re.M):
                end = block.text.index(")\n", match.end())
                found.append((block.where, block.text[match.end() : end]))
    return found


@pytest.mark.parametrize(
    "name", ["make_numeric_diff_metric", "make_numeric_diff_scorer", "log_numeric_diff_model"]
)
def test_signatures_list_every_option(name: str) -> None:
    """A signature the pages show names every option of the schema with its default, or says
    ``<the same options>`` after one that does (issue 19, item 10)."""
    signatures = _signatures(name)
    assert signatures, f"no signature of {name} in the pages"
    for where, text in signatures:
        if "<the same options>" in text:
            assert _signatures("make_numeric_diff_metric"), where
            continue
        for spec in SCHEMA:
            default = f'"{spec.default}"' if isinstance(spec.default, str) else repr(spec.default)
            assert re.search(rf"\b{spec.name}={re.escape(default)}", text), (
                f"{where}: {name}(...) lacks {spec.name}={default}"
            )


def test_options_table_lists_every_option() -> None:
    """The guide's table of options has a row for each option of the schema, with its default."""
    text = (ROOT / "docs" / "readings.md").read_text(encoding="utf-8")
    for spec in SCHEMA:
        if isinstance(spec.default, tuple) and not spec.default:  # a list option: none given
            default = "none"
        elif isinstance(spec.default, str):
            default = f'`"{spec.default}"`'
        else:
            default = f"`{spec.default!r}`"
        row = rf"^\| `{spec.name}` \| {re.escape(default)} \|"
        assert re.search(row, text, re.M), f"docs/readings.md: no row `{spec.name}` | `{default}`"


def test_transcript_reads_commands_and_their_output() -> None:
    text = "$ a x \\\n    --y\nout 1\nout 2\n$ b\n$ c\nlast\n"
    assert transcript(text) == [("a x \\\n    --y", "out 1\nout 2"), ("b", ""), ("c", "last")]


def test_the_names_gitignore_names(tmp_path: Path) -> None:
    (tmp_path / "numdiff_results").mkdir()
    (tmp_path / "mlflow.db").touch()
    (tmp_path / "out").mkdir()
    (tmp_path / "numdiff_component.egg-info").mkdir()
    found = {p.name for p in tmp_path.iterdir() if ignored(p)}
    assert found == {"numdiff_results", "mlflow.db", "numdiff_component.egg-info"}


def test_output_comparison() -> None:
    assert _matches("run  ...\nresults  /.../r.parquet", "run 65b2\nresults /tmp/x/r.parquet\n")
    assert _matches('{"a": 1,\n "b": 2}', '{"a": 1, "b": 2}')  # a wrapped line
    assert _matches("Run ID: ...", "Run ID: \x1b[94m65b2\x1b[0m")  # colours are not text
    assert not _matches("pass_rate 0.0621", "pass_rate 0.0630")
    assert not _matches("", "numdiff: error: no rows")


def test_blocks_group_and_repeat_as_documented(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```python\nprint(1)\n```\n\n```text\n1\n```\n\n"
        "<!-- run: slow -->\n```console\n$ numdiff score\n```\n\n"
        "<!-- run: continued -->\n```bash\nls\n```\n\n"
        "<!-- not run: a cluster -->\n```bash\nspark-submit x\n```\n"
    )
    blocks = read_blocks(page)
    assert [b.kind for b in blocks] == ["script", "none", "session", "shell", "shell"]
    assert blocks[0].expected is blocks[1] and blocks[4].not_run == "a cluster"
    found = [[b.line for b in g] for g in groups([b for b in blocks if b.kind != "none"])]
    assert found == [[1], [10, 15]]
    assert batched([blocks[0]]) and not batched([blocks[2], blocks[3]])
    assert read_blocks(page)[0].content == blocks[0].content  # a copy is recognised


def test_a_block_run_in_another_group_is_skipped_naming_it(tmp_path: Path) -> None:
    """A copy of a block, and a lone block that starts another page's group, run once."""
    session, shell, other = (
        f"```{lang}\n{text}\n```\n"
        for lang, text in [("console", "$ numdiff score"), ("bash", "ls"), ("bash", "ls -a")]
    )
    first, second = tmp_path / "first.md", tmp_path / "second.md"
    first.write_text(f"{session}\n{shell}")
    second.write_text(f"{shell}\n{session}\n<!-- run: continued -->\n{other}")
    all_groups = list(groups(read_blocks(first) + read_blocks(second)))
    assert [[b.where for b in g] for g in all_groups] == [
        ["first.md:1"],
        ["first.md:5"],
        ["second.md:1"],
        ["second.md:5", "second.md:10"],
    ]
    assert repeats(all_groups) == {
        "first.md:1": "first.md:1 is the same as second.md:5, which runs it",
        "second.md:1": "second.md:1 is the same as first.md:5, which runs it",
    }


@pytest.fixture
def shell(tmp_path: Path, _empty_store: Path) -> dict[str, str]:
    """A page's environment (its own store), with this run's fork server started."""
    _warm()
    shutil.copy(_empty_store, tmp_path / "mlflow.db")
    (tmp_path / "tmp").mkdir()
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    return {**shell_env(), "MLFLOW_TRACKING_URI": uri, "TMPDIR": str(tmp_path / "tmp")}


def test_the_shim_prints_and_exits_as_the_console_script(
    shell: dict[str, str], tmp_path: Path
) -> None:
    """The same command (a failed gate: a summary on stdout, one line on stderr, exit 1) through
    the shim, forked by the server (it declines nothing), and through the console script."""
    log = Path(os.environ[RUN_DIR]) / "forkserver" / "server.log"
    done = {}
    for name, numdiff in [("shim", "numdiff"), ("script", os.path.join(BIN, "numdiff"))]:
        args = [numdiff, "score", str(ROOT / "examples" / "candidate.csv"), "--id-col", "id"]
        args += ["--fail-under", "0.9", "--no-plots", "--results-dir", f"out-{name}"]
        done[name] = _run(args, tmp_path, shell)
    assert "out-shim" not in forkserver.declined(log)
    shown = {k: re.sub(r"[0-9a-f]{32}|out-" + k, "", d.stdout) for k, d in done.items()}
    assert done["shim"].returncode == done["script"].returncode == 1
    assert shown["shim"] == shown["script"]
    assert "numdiff: error: pass rate 0.8611 is below --fail-under 0.9" in shown["shim"]


def test_the_shim_passes_sigterm_on(shell: dict[str, str], tmp_path: Path) -> None:
    """SIGTERM to the shim stops the command as it stops a real one: 143 and one line."""
    fifo = tmp_path / "rows.csv"
    os.mkfifo(fifo)
    shim = subprocess.Popen(
        ["numdiff", "score", str(fifo), "--no-plots", "--results-dir", "out"],
        cwd=tmp_path,
        env=shell,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        writer = _open_when_read(fifo)  # the command is reading the table: it has started
        shim.send_signal(signal.SIGTERM)
        _, err = shim.communicate(timeout=BOUND)
        os.close(writer)
    finally:
        shim.kill()
        shim.wait()
    assert shim.returncode == 128 + signal.SIGTERM, err
    assert err.strip() == "numdiff: error: stopped by SIGTERM; no partial file is left"


def _open_when_read(fifo: Path) -> int:
    """A writing end of ``fifo``, once a process has it open for reading (until then opening
    it without blocking fails with ENXIO)."""
    deadline = time.monotonic() + BOUND
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
