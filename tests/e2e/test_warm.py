"""The end-to-end tests' commands run as children of a fork server that has imported MLflow
(`tests.fixtures.commands.warm_module`): the same process as ``python -m numdiff_component``
but for the imports, and the real one whenever the server's imports could have read the
command's environment differently."""

from __future__ import annotations

import re
import subprocess
import uuid
from pathlib import Path

from tests.fixtures import forkserver
from tests.fixtures.commands import MODULE, numdiff_process, warm_module
from tests.fixtures.run import ROOT


def _log() -> Path:
    return Path(warm_module()[0]).parents[1] / "server.log"


def test_a_warm_command_prints_and_exits_as_the_module(tmp_path: Path) -> None:
    """A failed gate (a summary on stdout, one line on stderr, exit 1), forked and afresh."""
    done = {}
    for name, command in [("warm", None), ("module", MODULE)]:
        args = ["score", str(ROOT / "examples" / "candidate.csv"), "--id-col", "id", "-q"]
        args += ["--fail-under", "0.9", "--no-plots", "--results-dir", str(tmp_path / name)]
        done[name] = numdiff_process(*args, command=command, cwd=tmp_path)
    assert str(tmp_path / "warm") in _log().read_text()  # forked,
    assert str(tmp_path / "warm") not in forkserver.declined(_log())  # not declined
    assert done["warm"].returncode == done["module"].returncode == 1
    assert done["warm"].stdout == done["module"].stdout == ""
    shown = {k: re.sub(str(tmp_path / k), "", d.stderr) for k, d in done.items()}
    assert shown["warm"] == shown["module"]
    assert "numdiff: error: pass rate 0.8611 is below --fail-under 0.9" in shown["warm"]


def test_a_variable_the_imports_read_is_declined_one_they_do_not_is_not() -> None:
    """MLflow reads MLFLOW_LOGGING_LEVEL while it is imported: a command that sets it runs
    afresh. No import reads NUMDIFF_TRACEBACK or MLFLOW_TRACKING_URI: one that sets them is
    forked, and reads them itself."""
    missing = f"missing-{uuid.uuid4().hex}.csv"
    done = numdiff_process("score", missing, env={"MLFLOW_LOGGING_LEVEL": "ERROR"})
    assert done.returncode == 2, done.stderr
    assert re.search(f"declined .*{missing}.*MLFLOW_LOGGING_LEVEL", forkserver.declined(_log()))
    other = f"other-{uuid.uuid4().hex}.csv"
    env = {"NUMDIFF_TRACEBACK": "1", "MLFLOW_TRACKING_URI": "sqlite:///nowhere.db"}
    done = numdiff_process("score", other, env=env)
    assert done.returncode == 2 and "Traceback" in done.stderr, done.stderr
    assert other not in forkserver.declined(_log())
    assert f"{other}" in _log().read_text()


def test_the_shim_is_python_for_anything_else() -> None:
    """The server's ``python`` (first on PATH in these tests) hands only ``-m
    numdiff_component`` to the server: any other command is Python itself."""
    shim = warm_module()[0]
    code = "import sys; print(sys.argv[1:], sys.flags.isolated)"
    done = subprocess.run([shim, "-c", code, "x"], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "['x'] 0\n", "")
    assert code not in _log().read_text()
