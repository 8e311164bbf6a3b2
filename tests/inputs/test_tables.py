"""Loading tables: every format and compression, streamed and whole; the limits on what is read
(columns, bytes, time); and one clear `InputError` line for every bad input, in process."""

from __future__ import annotations

import bz2
import contextlib
import gzip
import json
import lzma
import os
import re
import threading
import zipfile
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from numdiff_component.errors import InputError
from numdiff_component.inputs.sources import MAX_COLUMNS, is_remote, local_path
from numdiff_component.inputs.tables import StreamBroken, Table, open_table
from numdiff_component.job.run import run_job
from numdiff_component.task.config import JobConfig
from tests.fixtures.commands import invoke, one_line_error

ROWS = pd.DataFrame(
    {
        "id": [f"r{i}" for i in range(23)],
        "output": [f"about {i}.5 units" for i in range(23)],
        "expected": [f"{i}.5" for i in range(23)],
    }
)


def load_table(source: str | None = None, fmt: str | None = None) -> pd.DataFrame:
    """The whole table at ``source`` as one frame; `InputError` when it is empty."""
    table = open_table(source, fmt)
    frame = table.read()
    if len(frame) == 0:
        raise InputError(f"no rows to score in {table.source!r}")
    return frame


def _write(frame: pd.DataFrame, path: Path, fmt: str) -> Path:
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "parquet":
        frame.to_parquet(path, row_group_size=5, index=False)
    elif fmt == "json":
        frame.to_json(path, orient="records")
    else:
        frame.to_json(path, orient="records", lines=True)
    return path


def _rows(table: Table, batch_rows: int | None) -> list[dict[str, object]]:
    frames = list(table.batches(batch_rows))
    return pd.concat(frames, ignore_index=True).to_dict("records") if frames else []


def _compress(data: bytes, path: Path) -> Path:
    """``data`` written to ``path``, compressed as its extension says."""
    ext = path.suffix
    if ext == ".zip":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(path.stem, data)
    elif ext == ".zst":
        with pa.output_stream(str(path), compression="zstd") as out:
            out.write(data)
    else:
        opener = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}[ext]
        path.write_bytes(opener(data))
    return path


# ---------------------------------------------------------------------------------------------
# Every format, streamed and whole, gives the same rows in order


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json", "jsonl"])
def test_every_format_gives_the_same_rows_streamed_and_whole(fmt: str, tmp_path: Path) -> None:
    table = open_table(str(_write(ROWS, tmp_path / f"t.{fmt}", fmt)))
    want = ROWS.to_dict("records")
    streamed = list(table.batches(4))
    # Frames of at most 4 rows (CSV: read in blocks of 4 KiB at least, then cut); a JSON
    # document is read whole.
    assert len(streamed) == (1 if fmt == "json" else 6)
    assert _rows(table, 4) == want
    assert table.read().to_dict("records") == want
    assert list(table.read().columns) == ["id", "output", "expected"]


def test_csv_cells_stay_text(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text('output,expected\n007,1e999\n"",  3 \nNaN,NA\n')
    frame = open_table(str(path)).read()
    assert frame.to_dict("list") == {
        "output": ["007", "", "NaN"],
        "expected": ["1e999", "  3 ", "NA"],
    }


def test_quoted_multiline_cells_across_blocks(tmp_path: Path) -> None:
    """Quoted newlines fall on block boundaries when 2,000 such rows are read in 4 KiB blocks."""
    frame = pd.DataFrame(
        {"output": [f'line one\nsaid "{i}"\r\nthen {i}' for i in range(2000)], "expected": "1"}
    )
    path = _write(frame, tmp_path / "t.csv", "csv")
    table = open_table(str(path))
    assert len(list(table.batches(7))) > 10
    assert _rows(table, 7) == frame.to_dict("records") == table.read().to_dict("records")


@pytest.mark.parametrize(
    ("name", "content"),
    [("t.csv", "output,expected\n"), ("t.json", "[]"), ("t.jsonl", ""), ("t.parquet", None)],
)
def test_empty_table(name: str, content: str | None, tmp_path: Path) -> None:
    path = tmp_path / name
    if content is None:
        ROWS.head(0).to_parquet(path, index=False)
    else:
        path.write_text(content)
    table = open_table(str(path))
    assert _rows(table, 5) == []
    assert len(table.read()) == 0
    if name == "t.csv":
        assert list(table.read().columns) == ["output", "expected"]
    with pytest.raises(InputError, match=f"^no rows to score in {str(path)!r}$"):
        load_table(str(path))


# ---------------------------------------------------------------------------------------------
# What is wrong with the input, in one line


def _pickle(d: Path) -> str:
    (d / "t.pkl").write_bytes(b"\x80\x04.")
    return str(d / "t.pkl")


def _unreadable(d: Path) -> str:
    (d / "t.csv").write_text("output,expected\n1,1\n")
    (d / "t.csv").chmod(0)
    if os.access(d / "t.csv", os.R_OK):
        pytest.skip("root reads any file; tests/e2e/test_faults.py drops that right in a child")
    return str(d / "t.csv")


def _file(name: str, content: str | bytes, *, compress: bool = False) -> Callable[[Path], str]:
    """Makes the file ``name`` holding ``content``, compressed as its extension says or as is."""

    def make(d: Path) -> str:
        data = content.encode() if isinstance(content, str) else content
        if compress:
            _compress(data, d / name)
        else:
            (d / name).write_bytes(data)
        return str(d / name)

    return make


def _symlink(target: str) -> Callable[[Path], str]:
    def make(d: Path) -> str:
        (d / "t.csv").symlink_to(d / target)
        return str(d / "t.csv")

    return make


def _loop(d: Path) -> str:
    (d / "a.csv").symlink_to(d / "b.csv")
    (d / "b.csv").symlink_to(d / "a.csv")
    return str(d / "a.csv")


_NUMBERS = b"output,expected\n" + "".join(f"{i},{i * 7}\n" for i in range(20000)).encode()
BAD_INPUTS: dict[str, tuple[Callable[[Path], str], str]] = {
    "missing file": (lambda d: str(d / "nope.csv"), "predictions file not found: '{s}'$"),
    "a directory": (lambda d: str(d), "'{s}' is a directory; give a file"),
    "unreadable": (_unreadable, "cannot read '{s}': permission denied$"),
    "pickle": (_pickle, "'{s}' is a pickle file, which is not read: unpickling runs code"),
    "unknown extension": (
        _file("t.txt", "a"),
        "cannot tell the format of '{s}' from its extension; pass --format with one of",
    ),
    "symlink loop": (_loop, "'{s}' is a symbolic link loop .*; point the link at a file$"),
    "dangling symlink": (
        _symlink("gone.csv"),
        "'{s}' is a symbolic link to '.*gone.csv', which does not exist",
    ),
    "climbing runs uri": (
        lambda d: "runs:/abc/../def/artifacts/secret.csv",
        "'{s}' reaches outside its run with '..'",
    ),
    "device": (lambda d: "/dev/zero", "'{s}' is not a regular file .*; give a file"),
    "csv not utf-8": (
        _file("t.csv", b"id,output,expected\nr1,1,1\nr2,caf\xe9 2,2\n"),
        "cannot read '{s}' as csv: it is not valid UTF-8: byte 0xe9 on line 3; save it as UTF-8$",
    ),
    "xz csv not utf-8": (
        _file("t.csv.xz", b"output,expected\n1,1\n\xff1,1\n", compress=True),
        "as csv: it is not valid UTF-8: byte 0xff on line 3",
    ),
    "jsonl not utf-8": (
        _file("t.jsonl", b'{"output": "1", "expected": "1"}\n{"output": "\xe9"}\n'),
        "as jsonl: it is not valid UTF-8: byte 0xe9 on line 2",
    ),
    "json not utf-8": (
        _file("t.json", b'[{"output": "caf\xe9 2", "expected": "2"}]'),
        "as json: it is not valid UTF-8: byte 0xe9 on line 1",
    ),
    "ragged csv": (
        _file("t.csv", "a,b\n1,2,3\n"),
        "cannot read '{s}' as csv: CSV parse error: Expected 2 columns, got 3",
    ),
    "json not a table": (_file("t.json", "[1, 2]"), "as json: not a table; give a list"),
    "json records and a number": (
        _file("t.json", '[{"output": "1"}, 2]'),
        "cannot read '{s}' as json: not a table; give a list",
    ),
    "json lines records and an array": (
        _file("t.jsonl", '{"output": "1"}\n[1]\n'),
        "cannot read '{s}' as jsonl: not a table; give a list",
    ),
    "corrupt gzip": (_file("t.csv.gz", b"\x1f\x8bnot gzip"), "cannot read '{s}' as csv: "),
    "truncated gzip": (
        _file("t.csv.gz", gzip.compress(_NUMBERS)[: len(gzip.compress(_NUMBERS)) // 2]),
        "cannot read '{s}' as csv: Truncated compressed stream",
    ),
    "corrupt xz": (_file("t.json.xz", b"not xz"), "cannot read '{s}' as json: "),
}


@pytest.mark.parametrize("case", BAD_INPUTS, ids=list(BAD_INPUTS))
def test_bad_input_is_one_line(case: str, tmp_path: Path) -> None:
    make, pattern = BAD_INPUTS[case]
    source = make(tmp_path)
    with pytest.raises(InputError) as error:
        load_table(source)
    message = str(error.value)
    assert "\n" not in message
    assert re.search(pattern.replace("{s}", re.escape(source)), message), message


def test_device_is_refused_at_once_whatever_the_format() -> None:
    for fmt in ("csv", "json", "jsonl"):
        with pytest.raises(InputError, match="'/dev/zero' is not a regular file"):
            open_table("/dev/zero", fmt)


@pytest.mark.parametrize("error", [TypeError, AttributeError, KeyError])
def test_a_bug_in_reading_is_not_reported_as_bad_input(
    error: type[Exception], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only what readers raise for a bad file becomes `InputError`; a bug keeps its traceback."""
    csv_table = open_table(str(_write(ROWS, tmp_path / "t.csv", "csv")))
    parquet_table = open_table(str(_write(ROWS, tmp_path / "t.parquet", "parquet")))

    def bug(*args: object, **kwargs: object) -> None:
        raise error("a bug")

    monkeypatch.setattr(pa_csv, "open_csv", bug)
    monkeypatch.setattr(pq.ParquetFile, "iter_batches", bug)
    with pytest.raises(error, match="a bug"):
        list(csv_table.batches())
    with pytest.raises(error, match="a bug"):
        list(parquet_table.batches())


# ---------------------------------------------------------------------------------------------
# Paths and URIs


@pytest.mark.parametrize(
    ("source", "path"),
    [
        ("t.csv", "t.csv"),
        ("/data/t.csv", "/data/t.csv"),
        ("C:\\data\\t.csv", "C:\\data\\t.csv"),
        ("file:///data/a%20b.csv", "/data/a b.csv"),
        ("/data/http://x/t.csv", "/data/http://x/t.csv"),
        ("s3://bucket/t.csv", None),
        ("https://example.com/t.csv", None),
        ("runs:/abc/t.csv", None),
        ("dbfs:/t.csv", None),
    ],
)
def test_local_path_or_uri(source: str, path: str | None) -> None:
    assert local_path(source) == path
    assert is_remote(source) == (path is None)


def test_local_path_that_looks_like_a_url_is_streamed(tmp_path: Path) -> None:
    """A folder named ``http:`` makes a path holding ``://``: it is still a local file."""
    (tmp_path / "http:").mkdir()
    path = _write(ROWS, tmp_path / "http:" / "t.parquet", "parquet")
    source = f"{tmp_path}/http://t.parquet"
    assert Path(source).samefile(path)
    table = open_table(source)
    assert table.name == "t" and table.path == source
    assert len(list(table.batches(4))) == 6 and _rows(table, 4) == ROWS.to_dict("records")


# ---------------------------------------------------------------------------------------------
# Parquet written by pandas


def test_parquet_named_index_comes_back_as_a_column(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    ROWS.set_index("id").to_parquet(path, row_group_size=5)
    table = open_table(str(path))
    want = ROWS.to_dict("records")
    assert _rows(table, 4) == want and table.read().to_dict("records") == want
    two = tmp_path / "two.parquet"
    ROWS.set_index(["id", "expected"]).to_parquet(two)
    assert open_table(str(two)).read().to_dict("records") == want


def test_parquet_unnamed_index_adds_no_column(tmp_path: Path) -> None:
    for name, frame in {"range": ROWS, "filtered": ROWS[ROWS["id"] != "r3"]}.items():
        path = tmp_path / f"{name}.parquet"
        frame.to_parquet(path)  # pandas' default: the index is kept in the file
        table = open_table(str(path))
        want = frame.to_dict("records")
        assert _rows(table, 4) == want and table.read().to_dict("records") == want, name


# ---------------------------------------------------------------------------------------------
# Compression


@pytest.mark.parametrize("ext", [".gz", ".bz2", ".xz", ".zst", ".zip"])
@pytest.mark.parametrize("fmt", ["csv", "json", "jsonl"])
def test_compressed_tables_are_read(fmt: str, ext: str, tmp_path: Path) -> None:
    plain = _write(ROWS, tmp_path / f"t.{fmt}", fmt)
    table = open_table(str(_compress(plain.read_bytes(), tmp_path / f"t.{fmt}{ext}")))
    assert table.name == "t" and table.format == fmt
    want = ROWS.to_dict("records")
    assert _rows(table, 4) == want and table.read().to_dict("records") == want


def test_zip_must_hold_one_file(tmp_path: Path) -> None:
    path = tmp_path / "t.csv.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.csv", "output,expected\n1,1\n")
        archive.writestr("b.csv", "output,expected\n2,2\n")
    with pytest.raises(InputError, match=r"a \.zip must hold exactly one file, this one holds 2"):
        load_table(str(path))


def test_compressed_parquet_is_refused(tmp_path: Path) -> None:
    path = _compress(
        _write(ROWS, tmp_path / "t.parquet", "parquet").read_bytes(), tmp_path / "t.parquet.gz"
    )
    with pytest.raises(
        InputError, match="is a compressed Parquet file; Parquet compresses its own"
    ):
        open_table(str(path))


LONG = 3 << 20  # a row longer than the first whole-file block (1 MiB): the block must grow


@pytest.mark.parametrize("ext", [".gz", ".bz2", ".xz", ".zst", ".zip", ""])
def test_csv_row_longer_than_a_block(ext: str, tmp_path: Path) -> None:
    """Streaming gives up (`StreamBroken`); reading whole grows its block until the row fits."""
    data = b"id,output,expected\nr0,1,1\nr1," + b"x" * LONG + b" 2,2\nr2,3,3\n"
    path = _compress(data, tmp_path / f"t.csv{ext}") if ext else tmp_path / "t.csv"
    if not ext:
        path.write_bytes(data)
    table = open_table(str(path))
    with pytest.raises(StreamBroken):
        list(table.batches(7))
    frame = table.read()
    assert list(frame["id"]) == ["r0", "r1", "r2"] and frame["output"][1] == "x" * LONG + " 2"
    out = str(tmp_path / "res")
    run_job(JobConfig(str(path), results_dir=out, track=False, plots=False, batch_rows=7))
    results = pd.read_parquet(tmp_path / "res" / "results.parquet")
    assert list(results["id"]) == ["r0", "r1", "r2"] and list(results["label"]) == ["pass"] * 3


def test_csv_row_longer_than_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row longer than about two blocks of the limit cannot be read."""
    monkeypatch.setenv("NUMDIFF_MAX_INPUT_BYTES", str(1 << 20))
    data = b"output,expected\n" + b"7" * LONG + b",1\n"
    table = open_table(str(_compress(data, tmp_path / "t.csv.gz")))
    with pytest.raises(InputError, match=r"a row is longer than 1,048,576 bytes"):
        table.read()


@pytest.mark.parametrize(("limit", "code"), [(2 << 20, 2), (4 << 20, 0)])
def test_a_csv_row_past_the_row_limit_is_exit_2_naming_it(
    limit: int, code: int, tracking_uri: str, tmp_path: Path
) -> None:
    """A row longer than a block is read whole, at about 10 times its bytes of memory: past
    NUMDIFF_MAX_ROW_BYTES (low here: a 3 MiB row against 2 MiB, from a 3 kB .csv.gz) it is one
    line and exit 2 naming the limit; under it (4 MiB) the row is scored whole. The command runs
    in this process: what it proves is the reader's limit, not the process."""
    data = b"id,output,expected\nr0,1,1\nlong," + b"7" * LONG + b",1\n"
    source = _compress(data, tmp_path / "t.csv.gz")
    folder = tmp_path / "res"
    done = invoke(
        "score",
        str(source),
        "-q",
        "--no-plots",
        "--results-dir",
        str(folder),
        env={"NUMDIFF_MAX_ROW_BYTES": str(limit)},
    )
    if code:
        one_line_error(done, 2, "a row is longer than 2,097,152 bytes", "NUMDIFF_MAX_ROW_BYTES")
        assert not (folder / "results.parquet").exists()
    else:
        assert done.returncode == 0, done.stderr
        results = pd.read_parquet(folder / "results.parquet")
        assert list(results["id"]) == ["r0", "long"] and len(results["output"][1]) == LONG


# ---------------------------------------------------------------------------------------------
# Limits: columns, bytes read whole, pipes


@pytest.mark.parametrize("n", [MAX_COLUMNS + 1, 200_000])
def test_csv_with_too_many_columns_is_refused_at_once(n: int, tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    names = ",".join(f"c{i}" for i in range(n))
    # Rows of two cells: a reader that went past the header would fail on them, not on the width.
    path.write_text(f"{names}\n" + "1,2\n" * 20)
    table = open_table(str(path))
    for read in (lambda: next(table.batches()), table.read):
        with pytest.raises(InputError, match=r"columns, more than the limit of 10,000") as error:
            read()
    assert f" {n:,} columns" in str(error.value)


@pytest.mark.parametrize(
    "header",
    [
        "x" * 131_073 + "," + ",".join(f"c{i}" for i in range(200_002)),  # csv's field limit
        '"' + "y" * 300_000 + '",' + ",".join(f"c{i}" for i in range(200_002)),  # quoted
        "a" + ",b" * 20_000,  # the most commas the first 16 MiB could be read without
    ],
    ids=["long-name", "long-quoted-name", "plain"],
)
def test_no_header_steps_round_the_column_limit(header: str, tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    path.write_text(f"{header}\n{header}\n")
    with pytest.raises(InputError, match=r"it has [\d,]+ columns, more than the limit of 10,000"):
        next(open_table(str(path)).batches())


def test_a_header_longer_than_what_is_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    path.write_text("n" * (17 << 20) + ",output,expected\nx,1,1\n")
    with pytest.raises(InputError, match=r"its header \(the first row\) is longer than 16,777,216"):
        next(open_table(str(path)).batches())


def test_csv_with_the_most_columns_allowed_is_read(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    names = ",".join(f"c{i}" for i in range(MAX_COLUMNS))
    path.write_text(f"{names}\n{names}\n")
    assert open_table(str(path)).read().shape == (1, MAX_COLUMNS)


@pytest.mark.parametrize("fmt", ["parquet", "json", "jsonl"])
def test_other_formats_with_too_many_columns_are_refused(fmt: str, tmp_path: Path) -> None:
    wide = pd.DataFrame({f"c{i}": ["1"] for i in range(MAX_COLUMNS + 1)})
    table = open_table(str(_write(wide, tmp_path / f"t.{fmt}", fmt)))
    for read in (lambda: next(table.batches()), table.read):
        with pytest.raises(
            InputError, match=r"it has 10,001 columns, more than the limit of 10,000"
        ):
            read()


def test_json_read_whole_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A JSON document is read whole: at most NUMDIFF_MAX_INPUT_BYTES, decompressed too."""
    monkeypatch.setenv("NUMDIFF_MAX_INPUT_BYTES", "100000")
    small = _write(ROWS, tmp_path / "small.json", "json")
    assert len(open_table(str(small)).read()) == len(ROWS)
    big = tmp_path / "big.json"
    big.write_text("[" + " " * 200_000 + "]")
    bomb = _compress(b"[" + b" " * (50 << 20) + b"]", tmp_path / "bomb.json.gz")
    assert bomb.stat().st_size < 100_000
    for path in (big, bomb):
        with pytest.raises(InputError, match=r"larger than the input limit of 100,000 bytes"):
            load_table(str(path))


def _feed_pipe(path: Path, chunks: Iterator[bytes]) -> threading.Thread:
    """A thread writing ``chunks`` into the named pipe ``path``; it stops when the reader goes."""

    def feed() -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError), open(path, "wb") as pipe:
            for chunk in chunks:
                pipe.write(chunk)

    os.mkfifo(path)
    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    return thread


def test_named_pipe_is_read(tmp_path: Path) -> None:
    data = _write(ROWS, tmp_path / "rows.csv", "csv").read_bytes()
    thread = _feed_pipe(tmp_path / "pipe.csv", iter([data]))
    assert load_table(str(tmp_path / "pipe.csv")).to_dict("records") == ROWS.to_dict("records")
    thread.join(10)


def test_endless_pipe_stops_at_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NUMDIFF_MAX_INPUT_BYTES", str(1 << 20))
    thread = _feed_pipe(tmp_path / "pipe.csv", (b"1,1\n" * 16384 for _ in range(4096)))
    with pytest.raises(InputError, match=r"larger than the input limit of 1,048,576 bytes"):
        open_table(str(tmp_path / "pipe.csv"))
    thread.join(10)
    assert not thread.is_alive()


@pytest.mark.parametrize("value", ["abc", "0", "-1", "inf", "nan"])
def test_bad_limit_setting_is_refused(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NUMDIFF_MAX_INPUT_BYTES", value)
    path = _write(ROWS, tmp_path / "t.json", "json")
    with pytest.raises(
        InputError, match=f"NUMDIFF_MAX_INPUT_BYTES must be a positive number, got {value!r}"
    ):
        open_table(str(path)).read()


# ---------------------------------------------------------------------------------------------
# http(s) inputs: a real server on loopback


class _Server:
    """An HTTP server on 127.0.0.1 serving ``files``, plus a few bad behaviours by path."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.release = threading.Event()  # lets the silent handler go when the test is done
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                if path == "/silent.csv":  # accepts, never answers
                    server.release.wait(30)
                elif path == "/endless.csv":  # no length, never ends (bounded at 1 GiB)
                    self.send_response(200)
                    self.end_headers()
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        self.wfile.write(b"output,expected\n")
                        for _ in range(16384):
                            self.wfile.write(b"1,1\n" * 16384)
                elif path == "/huge.csv":  # says it is a terabyte
                    self.send_response(200)
                    self.send_header("Content-Length", str(1 << 40))
                    self.end_headers()
                elif path in server.files:
                    body = server.files[path]
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                else:
                    self.send_error(404)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Server]:
    monkeypatch.setenv("no_proxy", "127.0.0.1")  # a proxy set for the machine is not asked
    running = _Server()
    try:
        yield running
    finally:
        running.stop()


def test_http_table_is_downloaded_and_streamed(server: _Server, tmp_path: Path) -> None:
    plain = _write(ROWS, tmp_path / "t.jsonl", "jsonl").read_bytes()
    server.files["/data/t.jsonl.gz"] = gzip.compress(plain)
    source = f"{server.url}/data/t.jsonl.gz?version=2"
    table = open_table(source)
    assert (table.source, table.name, table.format) == (source, "t", "jsonl")
    assert not is_remote(table.path) and table.path.endswith("t.jsonl.gz")
    assert len(list(table.batches(4))) > 1 and _rows(table, 4) == ROWS.to_dict("records")


def test_http_server_that_never_answers_times_out(
    server: _Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NUMDIFF_HTTP_TIMEOUT", "1.5")
    source = f"{server.url}/silent.csv"
    # The server holds the request for 30 s, then drops it: only the reader's own timeout gives
    # this message (a dropped connection is another error).
    with pytest.raises(
        InputError,
        match=f"^cannot download {re.escape(repr(source))}: no answer within 1.5 s; "
        "raise NUMDIFF_HTTP_TIMEOUT to wait longer$",
    ):
        open_table(source)


def test_http_endless_stream_stops_at_the_limit(
    server: _Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NUMDIFF_MAX_INPUT_BYTES", str(4 << 20))
    for name in ("endless.csv", "huge.csv"):
        source = f"{server.url}/{name}"
        with pytest.raises(
            InputError,
            match=f"^cannot download {re.escape(repr(source))}: it is larger than the input "
            "limit of 4,194,304 bytes; raise NUMDIFF_MAX_INPUT_BYTES to read it$",
        ):
            open_table(source)


def test_http_errors_are_one_line(server: _Server) -> None:
    with pytest.raises(InputError, match=r"cannot download '.*/nope.csv': HTTP 404 Not Found$"):
        open_table(f"{server.url}/nope.csv")
    with pytest.raises(InputError, match="cannot tell the format of"):
        open_table(f"{server.url}/nope.txt")  # refused before anything is downloaded
    closed = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    url = f"http://127.0.0.1:{closed.server_address[1]}/t.csv"
    closed.server_close()  # nothing listens there now
    with pytest.raises(InputError, match=f"^cannot download {re.escape(repr(url))}: .*refused"):
        open_table(url)


def test_json_column_names_as_written(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps([{"007": "3", "2": "3"}]))
    assert list(open_table(str(path)).read().columns) == ["007", "2"]


@pytest.mark.parametrize(
    ("encoding", "said"),
    [
        ("utf-16", "it is UTF-16 text (it starts with a UTF-16 byte order mark)"),
        ("utf-16-le", "it looks like UTF-16 text (every other byte is NUL)"),
        ("utf-32", "it is UTF-32 text (it starts with a UTF-32 byte order mark)"),
    ],
)
@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_utf16_is_named(encoding: str, said: str, fmt: str, tmp_path: Path) -> None:
    text = "output,expected\n1,1\n" if fmt == "csv" else '[{"output": "1", "expected": "1"}]'
    path = tmp_path / f"t.{fmt}"
    path.write_bytes(text.encode(encoding))
    with pytest.raises(InputError, match=re.escape(said) + "; save it as UTF-8"):
        open_table(str(path)).read()


def test_parquet_index_named_like_a_column_is_a_clear_error(tmp_path: Path) -> None:
    frame = pd.DataFrame({"output": ["1"], "expected": ["1"]}, index=pd.Index(["a"], name="output"))
    frame.to_parquet(tmp_path / "t.parquet")
    with pytest.raises(InputError, match="its index is named 'output', like a column; rename"):
        open_table(str(tmp_path / "t.parquet")).read()


@pytest.mark.parametrize("kind", [pa.binary(), pa.large_binary(), pa.binary(2)])
def test_a_bytes_column_is_refused_before_any_row_is_read(
    kind: pa.DataType, tmp_path: Path
) -> None:
    table = pa.table({"output": ["1"], "expected": ["1"], "blob": pa.array([b"ab"], kind)})
    pq.write_table(table, tmp_path / "t.parquet")
    with pytest.raises(InputError, match=r"column 'blob' holds bytes \(.*binary.*\), which are"):
        next(open_table(str(tmp_path / "t.parquet")).batches())
