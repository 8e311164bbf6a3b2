"""The results folder and the results file: their names, what they record, who may use them.

A job writes ``results.parquet`` (a file, or a Parquet folder of part files with the Spark
engine) and the report files into one results folder, held by a claim (`CLAIM`). The results
file records how its rows were scored (`Scoring.params`) in its metadata, under ``numeric_diff/``
(or, for a folder, in `RESULTS_METADATA` beside its part files); `read_local` reads both back,
as ``numdiff compare`` does with a local file. No MLflow here:
`numdiff_component.tracking.boundary` logs these files and reads them back from a run.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from numdiff_component.errors import InputError, first_line
from numdiff_component.options import OPTION_NAMES
from numdiff_component.task.arrow_frames import arrow_frame
from numdiff_component.task.config import Scoring

PREFIX = "numeric_diff"
"""The namespace of what the project records: artifact folder, metrics, tags, file metadata."""
RESULTS_PARQUET = "results.parquet"
RESULTS_JSON = "results.json"
RESULTS_METADATA = "_numdiff.json"
"""In a Spark results folder: what its file's metadata says in a pandas results file."""
HISTOGRAM_PNG = "score_histogram.png"
SCATTER_PNG = "output_vs_expected.png"
SUMMARY_MD = "summary.md"
REPORT_HTML = "report.html"
VS_BASELINE_PNG = "vs_baseline_histograms.png"
"""With ``--baseline``: its score histogram and the new run's, side by side on one y scale."""
GROUPS_PARQUET = "groups.parquet"
"""With ``--by``: every group's aggregates (SPEC §3.1)."""
GROUPS_JSON = "groups.json"
"""With ``--by``: the groups as the table MLflow's UI shows."""
GROUPS_PNG = "group_pass_rates.png"
"""With ``--by``: pass rate per group with its interval."""
ITEMS_PARQUET = "items.parquet"
"""With ``--item-col``: one row per item (SPEC §3.3)."""
PLOTS = (HISTOGRAM_PNG, SCATTER_PNG)
OUTPUTS = (
    RESULTS_PARQUET,
    HISTOGRAM_PNG,
    SCATTER_PNG,
    SUMMARY_MD,
    REPORT_HTML,
    VS_BASELINE_PNG,
    GROUPS_PARQUET,
    GROUPS_PNG,
    ITEMS_PARQUET,
)
"""The files a job writes in its results folder."""
CLAIM = ".numdiff"
"""In a results folder: the outputs a job wrote there (JSON), and the lock of the job using it."""
TEMPORARY_PREFIX = "numdiff-results-"
"""The name of a results folder made in the temporary folder starts with this."""


def file_metadata(scoring: Scoring) -> dict[str, str]:
    """What a results file records of how it was made: ``numeric_diff/<param>`` for each of
    `Scoring.params` (compare reads the id column and the options back)."""
    return {f"{PREFIX}/{name}": value for name, value in scoring.params().items()}


def write_folder_metadata(path: Path, scoring: Scoring) -> None:
    """Record `file_metadata` beside the part files of a results folder (`RESULTS_METADATA`)."""
    (path / RESULTS_METADATA).write_text(json.dumps(file_metadata(scoring)))


def fingerprint(path: Path) -> str | None:
    """What proves a file is the one a job wrote: its size, modification time and SHA-256 (for
    a folder of part files, the same of every file in it); ``None`` when nothing is there."""
    if path.is_symlink() or not path.exists():
        return None
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    digest = hashlib.sha256()
    for file in files:
        info = file.stat()
        digest.update(
            f"{file.relative_to(path.parent)}\0{info.st_size}\0{info.st_mtime_ns}\0".encode()
        )
        if path.is_file():
            with open(file, "rb") as handle:
                digest.update(hashlib.file_digest(handle, "sha256").digest())
    return digest.hexdigest()


def _open_claim(folder: Path) -> int:
    """The claim's file descriptor, opened without following a link; refused when it is not a
    regular file (a link, a folder, a FIFO...)."""
    where = str(folder / CLAIM)
    fd: int | None
    try:
        fd = os.open(where, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(
                f"{where!r} is a symbolic link, which numdiff never follows; remove it or give "
                "another --results-dir"
            ) from exc
        if exc.errno != errno.EISDIR:
            raise InputError(f"cannot use results folder {str(folder)!r}: {exc.strerror}") from exc
        fd = None
    mode = os.stat(where, follow_symlinks=False).st_mode if fd is None else os.fstat(fd).st_mode
    if fd is None or not stat.S_ISREG(mode):
        if fd is not None:
            os.close(fd)
        raise InputError(
            f"{where!r} is {_kind(mode)}, not a file numdiff wrote; remove it or give another "
            "--results-dir"
        )
    return fd


def _kind(mode: int) -> str:
    """What kind of file ``mode`` says, for a message: "a FIFO (named pipe)", "a folder"..."""
    kinds = [
        (stat.S_ISREG, "a file"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISLNK, "a symbolic link"),
    ]
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _read_claim(fd: int, folder: Path) -> dict[str, str]:
    """The outputs an earlier job wrote, by name, with their `fingerprint`; a claim numdiff
    did not write is refused."""
    text = os.pread(fd, 1 << 20, 0).decode("utf-8", "replace")
    if not text:
        return {}
    try:
        claim = json.loads(text)
    except ValueError:
        claim = None
    if isinstance(claim, list):  # an earlier version's claim: names, no proof
        return {}
    if not isinstance(claim, dict) or claim.get("numdiff") != 1:
        raise InputError(
            f"{str(folder / CLAIM)!r} is not a file numdiff wrote; nothing in "
            f"{str(folder)!r} is overwritten: remove it or give another --results-dir"
        )
    return {str(k): str(v) for k, v in dict(claim.get("outputs", {})).items()}


def _write_claim(fd: int, folder: Path) -> None:
    """Record the outputs now in ``folder`` in the claim: all of it or nothing. The space is
    reserved first (a full disk fails before a byte changes) and the JSON is padded with spaces
    to the old length, so no truncation is needed and the claim is never half old, half new."""
    outputs = {name: fingerprint(folder / name) for name in OUTPUTS}
    data = json.dumps({"numdiff": 1, "outputs": {k: v for k, v in outputs.items() if v}})
    padded = data.encode().ljust(os.fstat(fd).st_size, b" ")
    try:
        with suppress_unsupported():
            os.posix_fallocate(fd, 0, len(padded))
        os.pwrite(fd, padded, 0)
    except OSError as exc:
        raise InputError(
            f"cannot record the outputs in {str(folder / CLAIM)!r}: {exc.strerror}; the outputs "
            f"in {str(folder)!r} are complete, but a next job there will refuse to replace "
            "them: free some space, or remove them"
        ) from exc


@contextmanager
def suppress_unsupported() -> Iterator[None]:
    """Go on where the file system cannot do what is asked (reserving space, on some)."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
            raise


@contextmanager
def results_folder(requested: str | None, input_path: str | None = None) -> Iterator[Path]:
    """The folder for the local copy of the results, held for this job alone.

    A new temporary folder, or the one asked for, created when missing. Nothing the user gave is
    overwritten or removed: the claim (`CLAIM`) must be a regular file numdiff wrote (never a
    link); a file with an output's name is replaced only when the claim proves an earlier job
    wrote it and nobody changed it since (`fingerprint`); the input itself is refused; a folder
    another job is using is refused. When the job succeeds, the outputs an earlier job left and
    this one did not write again are removed, so that no stale file sits beside new results; a
    job that fails removes nothing.
    """
    folder = Path(requested or tempfile.mkdtemp(prefix=TEMPORARY_PREFIX))
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # something that is not a folder has the name
        mode = os.lstat(folder).st_mode  # a link that leads nowhere is said to be one
        raise InputError(
            f"results folder {str(folder)!r} is {_kind(mode)}, not a folder; give a folder "
            "(or a new name) as --results-dir"
        ) from None
    except OSError as exc:
        raise InputError(f"cannot use results folder {str(folder)!r}: {exc.strerror}") from exc
    fd = _open_claim(folder)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released when the process ends
        except BlockingIOError:
            raise InputError(
                f"results folder {str(folder)!r} is in use by another numdiff job; give each "
                "job its own --results-dir"
            ) from None
        ours = _read_claim(fd, folder)
        before = {}
        for name in OUTPUTS:
            path = folder / name
            if input_path is not None and path.exists() and path.samefile(input_path):
                raise InputError(
                    f"the input {input_path!r} is in the results folder, where {name!r} is "
                    "written; give another --results-dir"
                )
            found = fingerprint(path)
            if (found is not None or path.is_symlink()) and ours.get(name) != found:
                raise InputError(
                    f"results folder {str(folder)!r} holds {name!r}, which no numdiff job "
                    "wrote (or which changed since); give an empty or new --results-dir "
                    "(nothing you gave is overwritten)"
                )
            before[name] = found
        try:
            yield folder
        except BaseException:
            # What is there now is a job's: an earlier one's or this one's. When the disk is
            # full, the job's own error says more than the claim's.
            with suppress(InputError):
                _write_claim(fd, folder)
            raise
        for name, found in before.items():  # an earlier job's, not written again: stale
            path = folder / name
            if found is not None and fingerprint(path) == found:
                if path.is_dir():
                    shutil.rmtree(path)  # a Spark engine's results folder
                else:
                    path.unlink(missing_ok=True)
        _write_claim(fd, folder)
    finally:
        os.close(fd)


def remove_temporary(folder: Path) -> bool:
    """Remove a results folder this process made in the temporary folder (once its contents
    are logged); a folder the user asked for is never touched. Whether it is gone."""
    parent = Path(tempfile.gettempdir()).resolve()
    if folder.resolve().parent != parent or not folder.name.startswith(TEMPORARY_PREFIX):
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return not folder.exists()


@dataclass(frozen=True)
class RunResults:
    """The per-item results of one run (or one local results file) and how they were scored.

    ``params``: `Scoring.params` as recorded, by name (``threshold``, ``id_col``...)."""

    frame: pd.DataFrame
    source: str
    params: Mapping[str, str] = field(default_factory=dict)
    status: str | None = None  # of a run: FINISHED, RUNNING, FAILED, KILLED
    deleted: bool = False  # a run in the trash of its experiment
    run_name: str | None = None  # of a run

    @property
    def label(self) -> str:
        """What names it to a person: ``name (run <id>)`` for a run, else the file as given."""
        return f"{self.run_name} (run {self.source})" if self.run_name else self.source

    @property
    def id_col(self) -> str | None:
        return self.params.get("id_col") or None

    @property
    def options(self) -> dict[str, str]:
        """The scoring options it was made with, as recorded (empty when unknown)."""
        return {name: self.params[name] for name in OPTION_NAMES if name in self.params}


def recorded(params: Mapping[str, str]) -> dict[str, str]:
    """How rows were scored, from a run's params or a file's metadata: for each name, the
    resolved value (``resolved/<name>``) before the value given (``<name>``), and the
    ``numeric_diff/<name>`` of files and runs of earlier versions."""
    names = {key.rpartition("/")[2] for key in params}
    found = {}
    for name in names:
        for key in (f"resolved/{name}", name, f"{PREFIX}/{name}"):
            if key in params:
                found[name] = params[key]
                break
    return found


def read_local(path: Path, ref: str, name: str | None = None) -> RunResults:
    """A results file (how it was scored in its metadata) or folder (in `RESULTS_METADATA`).
    One that is not Parquet (truncated, foreign) is `InputError` naming ``name`` (``ref``)."""
    try:
        if path.is_dir():
            files = sorted(str(p) for p in path.glob("*.parquet"))
            table = ds.dataset(files, format="parquet").to_table()
            sidecar = path / RESULTS_METADATA
            metadata = json.loads(sidecar.read_text()) if sidecar.exists() else {}
        else:
            table = pq.read_table(path)
            metadata = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise InputError(f"cannot read {name or repr(ref)} as parquet: {first_line(exc)}") from exc
    ours = {k: v for k, v in metadata.items() if k.startswith(f"{PREFIX}/")}
    return RunResults(arrow_frame(table), ref, recorded(ours))
