"""The README's code blocks run as written and print what the README shows.

How each fenced block of README.md is treated (keep to this when you edit the README):

- ``python`` blocks of ``>>>`` examples run with doctest, top to bottom in one namespace.
- Any other ``python`` block is a script, run with ``python`` as a user would save and run it.
  When the next block is a ``text`` block (only blank lines between), that block is what the
  script prints on stdout; without one, its stdout is not checked. It must exit with 0.
- A ``console`` block is a terminal session: each ``$ command`` (a trailing ``\\`` continues it
  on the next line) runs in one bash session, and the lines up to the next ``$`` are its output,
  stdout and stderr as the terminal shows them. The exit code is not checked: an error shows
  in the output (``numdiff: error: ...``).
- A ``bash`` (or ``sh``, ``shell``) block with no ``$`` prompt is a script of commands: it
  runs with ``bash -e`` and must exit with 0; its output is not checked.
- Blocks in other languages (``text``, ``markdown``, none) are not run.

Output is compared as doctest does with ELLIPSIS and NORMALIZE_WHITESPACE: ``...`` stands for
any text, on one line or across lines (run ids, temporary paths, timings, MLflow's own log
lines), and runs of spaces and line breaks compare equal (a long line may be wrapped).

Every block runs in a new temporary folder holding a copy of ``examples/``, ``MLproject``
and ``conda.yaml`` (what a user has in a clone), with a private sqlite tracking store
(``MLFLOW_TRACKING_URI``, ``./mlflow.db``; already initialised, as after a first run, so
MLflow's one-time "Creating initial MLflow database tables" lines do not show), this
checkout's package first on ``PYTHONPATH`` and temporary files kept apart (``TMPDIR``).

An HTML comment on the line before a block's opening fence (blank lines allowed between)
changes how it runs:

- ``<!-- not run: REASON -->``: the block is not run; the reason shows as the test's skip
  reason. Use it only for what cannot run here (a cluster, S3, an install, a server left
  running); say which test covers it, if one does.
- ``<!-- run: continued -->``: the block runs after the block before it, in the same folder
  with the same tracking store (to use the files or runs that block made).
- ``<!-- run: slow -->``: the block is marked ``slow`` (``pytest -m "not slow"`` skips it).
  Words combine: ``<!-- run: continued, slow -->``.
"""

from __future__ import annotations

import contextlib
import doctest
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
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


@dataclass
class Block:
    """A fenced block: where it starts (1-based line of the fence), its language and text."""

    line: int
    lang: str
    text: str
    not_run: str | None = None  # the reason, when marked not run
    run: set[str] = field(default_factory=set)  # words of a ``run:`` directive
    expected: Block | None = None  # the ``text`` block showing what a script prints
    preceded_by_text: bool = True  # prose between this block and the one before

    @property
    def kind(self) -> str:
        """doctest, script, session (console with '$ ' prompts), shell, or none (not run)."""
        if self.lang == "python":
            return "doctest" if re.search(r"^>>> ", self.text, re.M) else "script"
        if self.lang in SHELLS:
            return "session" if re.search(r"^\$ ", self.text, re.M) else "shell"
        return "none"


def read_blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, with its directive and its output block."""
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
        block = Block(start + 1, lang.lower(), "\n".join(body) + "\n")
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


BLOCKS = read_blocks(README)
RUNNABLE = [b for b in BLOCKS if b.kind in ("script", "session", "shell")]


def _groups() -> Iterator[list[Block]]:
    """The runnable blocks, each with the ``continued`` blocks that follow it."""
    group: list[Block] = []
    for block in RUNNABLE:
        if block.not_run is not None:
            continue
        if "continued" in block.run and group:
            group.append(block)
            continue
        if group:
            yield group
        group = [block]
    if group:
        yield group


def _params() -> Iterator[object]:
    for block in RUNNABLE:
        if block.not_run is not None:
            yield pytest.param(
                [block],
                id=f"README.md:{block.line}",
                marks=pytest.mark.skip(reason=f"README.md:{block.line} not run: {block.not_run}"),
            )
    for group in _groups():
        slow = any("slow" in block.run for block in group)
        yield pytest.param(
            group,
            id=f"README.md:{group[0].line}",
            marks=[pytest.mark.slow] if slow else [],
        )


# --- the checks ---------------------------------------------------------------------------------


def _matches(want: str, got: str) -> bool:
    got = _ANSI.sub("", got)
    return doctest.OutputChecker().check_output(want.strip() + "\n", got.strip() + "\n", FLAGS)


def _mismatch(where: str, command: str, want: str, got: str) -> str:
    return (
        f"{where}: the output of\n{command}\nis not what the README shows.\n"
        f"--- README\n{want.strip()}\n--- actual\n{got.strip()}\n"
    )


@pytest.fixture
def folder(tmp_path: Path, _empty_store: Path) -> tuple[Path, dict[str, str]]:
    """A folder like a user's clone, and the environment of a shell with a private store."""
    work = tmp_path / "work"
    work.mkdir()
    for name in SHIPPED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, work / name)
        elif source.is_file():
            shutil.copy(source, work / name)
    store = work / "mlflow.db"  # where MLflow puts it by default: the current folder
    shutil.copy(_empty_store, store)
    # The template's Default experiment keeps its artifacts where the template was made: here,
    # as in a store made in this folder, they go to ./mlruns.
    with contextlib.closing(sqlite3.connect(store)) as db, db:
        db.execute(
            "UPDATE experiments SET artifact_location = ? WHERE experiment_id = 0",
            (str(work / "mlruns" / "0"),),
        )
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "NUMDIFF_"))}
    env.update(
        MLFLOW_TRACKING_URI=f"sqlite:///{store}",
        MLFLOW_DISABLE_TELEMETRY="true",
        PATH=BIN + os.pathsep + env.get("PATH", ""),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
        PYTHONUNBUFFERED="1",
        TMPDIR=str(scratch),
    )
    return work, env


def _run(
    args: list[str], work: Path, env: dict[str, str], *, merged: bool = True
) -> subprocess.CompletedProcess[str]:
    """``args`` in the block's folder, with no input (a command that asks for input fails,
    never hangs); stderr merged into stdout unless ``merged`` is false."""
    return subprocess.run(
        args,
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
        text=True,
        timeout=TIMEOUT,
    )


def _run_script(block: Block, work: Path, env: dict[str, str]) -> None:
    script = work.parent / f"readme_{block.line}.py"  # outside the folder the script sees
    script.write_text(block.text, encoding="utf-8")
    done = _run([sys.executable, str(script)], work, env, merged=False)
    where = f"README.md:{block.line}"
    assert done.returncode == 0, f"{where}: the script failed:\n{done.stderr}"
    if block.expected is not None and not _matches(block.expected.text, done.stdout):
        pytest.fail(_mismatch(where, "the script", block.expected.text, done.stdout))


def _run_shell(block: Block, work: Path, env: dict[str, str]) -> None:
    done = _run(["bash", "-e", "-c", block.text], work, env)
    assert done.returncode == 0, f"README.md:{block.line}: the commands failed:\n{done.stdout}"


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
    # One bash for the whole session (so cd and export carry over), a mark after each command.
    script = "".join(f"{command}\nprintf '\\n%s\\n' '{_MARK}'\n" for command, _ in pairs)
    done = _run(["bash", "-c", script], work, env)
    outputs = done.stdout.split(f"\n{_MARK}\n")
    for n, (command, want) in enumerate(pairs):
        got = outputs[n] if n < len(outputs) else ""
        if not _matches(want, got):
            pytest.fail(_mismatch(f"README.md:{block.line}", f"$ {command}", want, got))


@pytest.mark.parametrize("group", list(_params()))
def test_readme_block(group: list[Block], folder: tuple[Path, dict[str, str]]) -> None:
    work, env = folder
    run = {"script": _run_script, "shell": _run_shell, "session": _run_session}
    for block in group:
        run[block.kind](block, work, env)


def test_readme_doctests(tracking_uri: str) -> None:
    failures, tried = doctest.testfile(
        str(README), module_relative=False, optionflags=FLAGS | doctest.REPORT_UDIFF
    )
    assert tried > 5 and failures == 0


def test_readme_directives_are_understood() -> None:
    """A misspelt directive would silently run, or skip, a block."""
    for block in BLOCKS:
        assert block.run <= _RUN_WORDS, f"README.md:{block.line}: unknown run: {block.run}"
        assert block.not_run != "", f"README.md:{block.line}: 'not run' needs a reason"
        if block.not_run is not None or block.run:
            assert block.kind in ("script", "session", "shell"), (
                f"README.md:{block.line}: a directive on a {block.lang or 'plain'} block is idle"
            )
    text = README.read_text(encoding="utf-8")
    for comment in re.findall(r"<!--.*?-->", text, re.S):
        if re.search(r"\brun\b", comment):
            assert _DIRECTIVE.match(comment), f"not a directive of this harness: {comment}"


def test_transcript_reads_commands_and_their_output() -> None:
    text = "$ a x \\\n    --y\nout 1\nout 2\n$ b\n$ c\nlast\n"
    assert transcript(text) == [("a x \\\n    --y", "out 1\nout 2"), ("b", ""), ("c", "last")]


def test_output_comparison() -> None:
    assert _matches("run  ...\nresults  /.../r.parquet", "run 65b2\nresults /tmp/x/r.parquet\n")
    assert _matches('{"a": 1,\n "b": 2}', '{"a": 1, "b": 2}')  # a wrapped line
    assert _matches("Run ID: ...", "Run ID: \x1b[94m65b2\x1b[0m")  # colours are not text
    assert not _matches("pass_rate 0.0621", "pass_rate 0.0630")
    assert not _matches("", "numdiff: error: no rows")
