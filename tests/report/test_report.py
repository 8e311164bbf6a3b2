"""The report: headless PNG plots, a Markdown summary and a self-contained HTML report, the
same fed in batches or at once, with the cells of the table shown as text and never as markup."""

from __future__ import annotations

import base64
import html
import io
import math
import os
import re
import signal
import struct
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from numdiff_component import Options, aggregate, score_frame
from numdiff_component.aggregate import pass_rate_stderr
from numdiff_component.process import ForkedCall
from numdiff_component.report.builder import ReportBuilder
from numdiff_component.report.plots import SCORE_EDGES, axis_scale
from numdiff_component.task.results import HISTOGRAM_PNG, REPORT_HTML, SCATTER_PNG, SUMMARY_MD

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PLANTED = {"bad-1": ("10", "1000"), "bad-2": ("-5", "5"), "bad-3": ("about 3", "4")}


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from the IHDR chunk, after checking the signature."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path.name} is not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.fixture(scope="module")
def results() -> pd.DataFrame:
    """300 rows close to their expected values, three planted misses, two unparseable rows."""
    rng = np.random.default_rng(7)
    expected = rng.lognormal(2, 3, 300) * rng.choice([-1, 1], 300)
    output = expected * (1 + rng.normal(0, 0.003, 300))
    frame = pd.DataFrame(
        {
            "id": [f"r{i:03d}" for i in range(300)],
            "output": [f"{v:.6g}" for v in output],
            "expected": [f"{v:.6g}" for v in expected],
        }
    )
    for row, (key, (out, exp)) in zip((40, 150, 260), PLANTED.items(), strict=True):
        frame.loc[row, ["id", "output", "expected"]] = [key, out, exp]
    frame.loc[[7, 8], "output"] = ["no idea", "n/a"]
    return score_frame(frame)


def build(
    results: pd.DataFrame,
    batch_size: int | None = None,
    *,
    sample_size: int = 5_000,
    worst_k: int = 10,
    seed: int = 0,
) -> ReportBuilder:
    builder = ReportBuilder(
        Options(), id_col="id", sample_size=sample_size, worst_k=worst_k, seed=seed
    )
    step = batch_size or len(results)
    for start in range(0, len(results), step):
        builder.add(results.iloc[start : start + step])
    return builder


def test_write_gives_headless_pngs_a_summary_and_an_html_report(
    results: pd.DataFrame, tmp_path: Path
) -> None:
    paths = build(results).write(tmp_path / "report", aggregate(results), "preds.csv")
    assert [p.name for p in paths] == [HISTOGRAM_PNG, SCATTER_PNG, SUMMARY_MD, REPORT_HTML]
    assert sorted(os.listdir(tmp_path / "report")) == sorted(p.name for p in paths)
    assert png_size(paths[0]) == (800, 450)
    assert png_size(paths[1]) == (650, 650)
    for png in paths[:2]:
        assert 10_000 < png.stat().st_size < 1_000_000


def test_summary_has_headline_aggregates_options_and_the_planted_failures(
    results: pd.DataFrame, tmp_path: Path
) -> None:
    aggregates = aggregate(results)
    text = (build(results).write(tmp_path, aggregates, "preds.csv")[2]).read_text()
    lines = text.splitlines()
    n_passed = int(results["passed"].sum())
    assert lines[2] == f"**{_headline(aggregates, n_passed)}**"
    assert lines[4] == "Input: preds\\.csv, 300 rows (2 unparseable)."
    # The report opens on the failing rows; the aggregates and the options come last.
    headings = [line for line in lines if line.startswith("## ")]
    assert [h.split(" (")[0] for h in headings] == [
        "## Failing rows", "## Unparseable rows", "## Plots", "## Aggregates", "## Options"
    ]  # fmt: skip
    for name in ("mean_score", "pass_rate"):  # each interval beside its value, not a row
        low, high = (aggregates[f"{name}_ci_{b}"] for b in ("low", "high"))
        escaped = name.replace("_", "\\_")
        assert f"| {escaped} | {aggregates[name]:.6g} | \\[{low:.6g}, {high:.6g}\\] |" in text
    assert "ci\\_low" not in text and "ci\\_high" not in text
    assert f"| mean\\_score\\_stderr | {aggregates['mean_score_stderr']:.6g} |" in text
    assert f"| no\\_answer\\_rate | {aggregates['no_answer_rate']:.6g} |" in text
    assert "| threshold | 0.99 |" in text and "| pick | first |" in text
    assert "| id\\_col | id |" in text  # as the params say it, not a Python repr
    failing = text.split("## Failing rows (3 shown of 3, lowest scores first)")[1]
    table_rows = table(failing.split("## Unparseable")[0])
    # Only the three planted misses fail, lowest first: the sign flip (0), 0.01, then 0.75.
    # Rows are numbered as a person counts them: the first row is 1.
    assert [row[:2] for row in table_rows] == [["151", "bad-2"], ["41", "bad-1"], ["261", "bad-3"]]
    assert table_rows[0] == ["151", "bad-2", "⟦-5⟧", "⟦5⟧", "-5", "5", "0", "fail"]
    assert table_rows[2][2:4] == ["about ⟦3⟧", "⟦4⟧"]  # the number read, marked in its text
    unparseable = text.split("## Unparseable rows (2 shown of 2)")[1]
    assert "| 8 | r007 | no number\\: no idea |" in unparseable
    assert "| 9 | r008 | no number\\: n/a |" in unparseable


def _headline(aggregates: dict[str, float], n_passed: int) -> str:
    bounds = [
        aggregates[f"{name}_ci_{b}"]
        for name in ("mean_score", "pass_rate")
        for b in ("low", "high")
    ]
    return (
        f"Mean score {aggregates['mean_score']:.4f} [{bounds[0]:.4f}, {bounds[1]:.4f}]"
        f" · passed {n_passed} of 300 rows, {n_passed / 300:.1%} [{bounds[2]:.1%}, {bounds[3]:.1%}]"
        " (95% intervals)"
    )


def table(markdown: str) -> list[list[str]]:
    """The body rows of the first Markdown table in ``markdown``, split on unescaped pipes."""
    rows = [line for line in markdown.splitlines() if line.startswith("| ")][2:]
    return [re.split(r"(?<!\\) \| ", row[2:-2]) for row in rows]


def failures(n_failed: int, n_unparseable: int = 0) -> pd.DataFrame:
    """20 exact rows, then ``n_failed`` failing rows scoring 0.5, 0.495, ..., then unparseable."""
    outputs = ["7"] * 20 + [str(100 - i) for i in range(n_failed)] + ["none"] * n_unparseable
    expecteds = ["7"] * 20 + ["200"] * n_failed + ["1"] * n_unparseable
    frame = pd.DataFrame({"id": [f"k{i}" for i in range(len(outputs))], "output": outputs})
    return score_frame(frame.assign(expected=expecteds))


@pytest.mark.parametrize(
    ("n_failed", "n_unparseable", "title", "shown"),
    [
        (1, 0, "## Failing rows (1 shown of 1, lowest scores first)", ["k20"]),
        (3, 2, "## Failing rows (3 shown of 3, lowest scores first)", ["k22", "k21", "k20"]),
        (
            25,
            0,
            "## Failing rows (10 shown of 25, lowest scores first)",
            [f"k{i}" for i in range(44, 34, -1)],
        ),
        (0, 0, "## Failing rows\n\nNo row failed.\n", []),
        (0, 2, "## Failing rows\n\nNo row with a number on both sides failed.\n", []),
    ],
)
def test_failing_rows_show_failures_only_and_say_how_many(
    n_failed: int, n_unparseable: int, title: str, shown: list[str], tmp_path: Path
) -> None:
    results = failures(n_failed, n_unparseable)
    builder = ReportBuilder(Options(), id_col="id")
    builder.add(results)
    summary, page = (p.read_text() for p in builder.write(tmp_path, aggregate(results), "t")[2:])
    assert title in summary
    section = summary.split(title)[1].split("## Unparseable")[0]
    assert [row[1] for row in table(section)] == shown  # no passing row fills the table
    assert html.escape(title.splitlines()[0][3:]) in page
    assert all(f">{key}<" in page for key in shown) and ">k0<" not in page


def test_summary_names_the_plots_instead_of_embedding_them(
    results: pd.DataFrame, tmp_path: Path
) -> None:
    text = (build(results).write(tmp_path, aggregate(results), "preds.csv")[2]).read_text()
    assert "![" not in text and "](" not in text
    assert (
        "The plots are in `report.html` (with everything in this summary), "
        "`score_histogram.png` and `output_vs_expected.png` (beside this file; in an MLflow "
        "run, at the root of the run's artifacts)."
    ) in text


class Tags(HTMLParser):
    """The tags, attributes and text of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


EMITTED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "code", "div", "img",
    "table", "thead", "tbody", "tr", "th", "td", "details", "summary", "mark",
}  # fmt: skip


def parse(page: str) -> Tags:
    parser = Tags()
    parser.feed(page)
    parser.close()
    tags = {tag for tag, _ in parser.tags}
    assert tags <= EMITTED_TAGS, f"unexpected tags: {tags - EMITTED_TAGS}"
    images = [attrs for tag, attrs in parser.tags if tag == "img"]
    assert len(images) == 2
    assert all(str(image["src"]).startswith("data:image/png;base64,") for image in images)
    assert not any(name.startswith("on") for _, attrs in parser.tags for name in attrs)
    return parser


def test_html_report_is_self_contained_with_the_summary_content(
    results: pd.DataFrame, tmp_path: Path
) -> None:
    aggregates = aggregate(results)
    paths = build(results).write(tmp_path, aggregates, "preds.csv")
    page = paths[3].read_text()
    parser = parse(page)
    sources = [str(attrs["src"]) for tag, attrs in parser.tags if tag == "img"]
    embedded = [base64.b64decode(src.split(",", 1)[1]) for src in sources]
    assert embedded == [paths[0].read_bytes(), paths[1].read_bytes()]
    outside = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", page).replace("/(n-1)", "")
    assert not re.search(r"<script|<link|<iframe|url\(|https?:|//", outside)
    text = " ".join(parser.text)
    n_passed = int(results["passed"].sum())
    texts = [t for t in parser.text if t.strip()]
    assert texts[:3:2] == ["Numeric diff report"] * 2  # the title, then the style, the heading
    assert texts[3] == _headline(aggregates, n_passed)
    assert "<details><summary>Options</summary>" in page  # the options, collapsed, come last
    assert page.index("Failing rows") < page.index("<h2>Plots") < page.index("<details>")
    for expected in (
        "preds.csv", "300 rows (2 unparseable)", f"{aggregates['pass_rate']:.6g}",
        f"[{aggregates['pass_rate_ci_low']:.6g}, {aggregates['pass_rate_ci_high']:.6g}]",
        "threshold", "first",
        "id_col", "Failing rows (3 shown of 3, lowest scores first)", "bad-2",
        "Unparseable rows (2 shown of 2)", "no number: no idea",
    ):  # fmt: skip
        assert expected in text


@pytest.mark.parametrize("batch_size", [1, 7, 64, 299])
def test_batches_give_the_same_report_as_one_shot(results: pd.DataFrame, batch_size: int) -> None:
    whole = build(results, sample_size=40, worst_k=5)
    batched = build(results, batch_size, sample_size=40, worst_k=5)
    assert (batched.passed_counts == whole.passed_counts).all()
    assert (batched.failed_counts == whole.failed_counts).all()
    assert (batched.n_rows, batched.n_unparseable) == (whole.n_rows, whole.n_unparseable)
    pd.testing.assert_frame_equal(batched.failing(), whole.failing())
    pd.testing.assert_frame_equal(batched.unparseable(), whole.unparseable())
    pd.testing.assert_frame_equal(batched.sample(), whole.sample())


def test_memory_is_bounded_and_the_histogram_counts_every_row(results: pd.DataFrame) -> None:
    builder = build(results, 50, sample_size=25, worst_k=3)
    assert len(builder.sample()) == 25 and len(builder.failing()) == 3
    assert len(builder.unparseable()) == 2
    counted = builder.passed_counts.sum() + builder.failed_counts.sum() + builder.n_unparseable
    assert counted == len(results)
    assert builder.passed_counts.sum() == results["passed"].sum()


def test_sample_is_seeded_and_spread_over_the_table(results: pd.DataFrame) -> None:
    first = build(results, sample_size=60).sample()
    pd.testing.assert_frame_equal(first, build(results, 13, sample_size=60).sample())
    assert not first.equals(build(results, sample_size=60, seed=1).sample())
    rows = results["output_value"].to_numpy()
    positions = [int(np.flatnonzero(rows == v)[0]) for v in first["output_value"]]
    assert min(positions) < 100 and max(positions) > 200  # not just the first rows


def frame_of(outputs: list[object], expecteds: list[object]) -> pd.DataFrame:
    return score_frame(pd.DataFrame({"output": outputs, "expected": expecteds}, dtype=object))


EDGE_CASES: dict[str, tuple[list[object], list[object]]] = {
    "all unparseable": (["x", None, "nan"], ["1", "2", "y"]),
    "one row": (["5"], ["7"]),
    "all scores 1": (["3", "3", "-2"], ["3", "3", "-2"]),
    "negative values": (["-1", "-50", "-1000"], ["-1.5", "-49", "-990"]),
    "huge range": (
        ["1.7976931348623157e308", "1e-300", "0", "-1e308"],
        ["-1.7976931348623157e308", "1e-300", "0", "1e308"],
    ),
    "NaN": ([math.nan, 1.0, float("inf")], [1.0, math.nan, 2.0]),
}


@pytest.mark.parametrize("case", EDGE_CASES)
def test_edge_cases_still_give_a_report(case: str, tmp_path: Path) -> None:
    results = frame_of(*EDGE_CASES[case])
    builder = ReportBuilder(Options())
    builder.add(results)
    paths = builder.write(tmp_path, aggregate(results), case)
    assert png_size(paths[0]) == (800, 450) and png_size(paths[1]) == (650, 650)
    text = paths[2].read_text()
    n_unparseable = int((results["label"] == "unparseable").sum())
    rows = "row" if len(results) == 1 else "rows"  # "1 row", as a person writes it
    assert f"{len(results):,} {rows} ({n_unparseable:,} unparseable)" in text
    if n_unparseable == len(results):
        assert "No row with a number on both sides failed." in text
        assert "| mae | n/a |" in text
    if len(results) == 1:
        assert "| mean\\_score | 0.714286 |  |" in text  # no interval for the mean of one row
        assert (
            "**Mean score 0.7143 · passed 0 of 1 rows, 0.0% [0.0%, 79.3%] (95% intervals)**" in text
        )
    parse(paths[3].read_text())


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1.0, 50.0], ("linear", 0.0)),
        ([-3.0, 0.0, 4.0], ("linear", 0.0)),
        ([0.5, 2e3], ("log", 0.0)),
        ([-2e3, 0.5], ("symlog", 0.1)),
        ([-1e308, 1e-300, 1e308], ("symlog", 1e299)),
        ([0.0, 0.0], ("linear", 0.0)),
    ],
)
def test_axis_scale(values: list[float], expected: tuple[str, float]) -> None:
    scale, linthresh = axis_scale(np.array(values))
    assert scale == expected[0] and linthresh == pytest.approx(expected[1])


def test_drawing_needs_no_display_and_leaves_pyplot_alone(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; import pandas as pd;"
        "from numdiff_component import Options, aggregate, score_frame;"
        "from numdiff_component.report.builder import ReportBuilder;"
        "r = score_frame(pd.DataFrame({'output': ['1', '2'], 'expected': ['1', '3']}));"
        "b = ReportBuilder(Options()); b.add(r);"
        f"b.write(Path({str(tmp_path)!r}), aggregate(r), 'x');"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported'"
    )
    env = {"PATH": "/usr/bin:/bin", "MPLBACKEND": "", "HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    assert png_size(tmp_path / SCATTER_PNG) == (650, 650)


ATTACKS = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(2)">',
    "![x](http://evil.example/t.png) 3",
    "[click](javascript:alert(4))",
    "<http://evil.example/5> <!-- 5 -->",
    "see http://evil.example/6 or www.evil.example",
    "mail a@evil.example 7",
    "&lt;script&gt; &amp; &#x3C;b&#62; 8",
    "\x1b[31mred 9\x1b[0m",
    "n/a\u202egnp.exe",
    "**b** _i_ `c` ~~s~~ | \\| # h",
    "[x]: http://evil.example/\n[y][x] 10",
]
HOSTILE_SOURCE = "/tmp/<b>in</b>/![i](http://evil.example/i.png)&amp;.csv"
HOSTILE_COLUMNS = ("out<script>", "exp ![i](http://e.example/i.png)", "id [l](javascript:x)")
NOTES = [
    "62% of outputs hold several numbers; the first is read (--pick answer reads the final answer)",
    "<b>bold</b> ![n](http://evil.example/n.png) \x1b[1m",
]


def shown(text: str) -> str:
    """A cell as the reports show it: one line, control characters as Python escapes."""
    return " ".join(text.replace("\x1b", "\\x1b").replace("\u202e", "\\u202e").split())


def unmarkdown(text: str) -> str:
    """What a Markdown renderer shows for escaped text: backslash escapes, then entities."""
    return html.unescape(re.sub(r"\\(.)", r"\1", text))


def inert(line: str) -> str:
    """``line`` without its escapes: what is left could make markup."""
    return re.sub(r"\\.|&(amp|lt|gt|#64);", "", line)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """summary.md and report.html of a table whose ids, cells, column names, source and notes
    are attacks on Markdown and HTML."""
    out_col, exp_col, id_col = HOSTILE_COLUMNS
    frame = pd.DataFrame(
        {id_col: ATTACKS, out_col: ATTACKS, exp_col: [f"1e9 {a}" for a in ATTACKS]}
    )
    results = score_frame(frame, out_col, exp_col)
    builder = ReportBuilder(Options(), out_col, exp_col, id_col, worst_k=20)
    builder.add(results)
    folder = tmp_path_factory.mktemp("hostile")
    paths = builder.write(folder, aggregate(results), HOSTILE_SOURCE, NOTES)
    return paths[2].read_text(), paths[3].read_text()


def test_hostile_cells_are_inert_text_in_the_summary(hostile: tuple[str, str]) -> None:
    summary = hostile[0]
    for forbidden in ("<", "![", "](", "javascript:", "http:", "www.", "\x1b", "\u202e"):
        assert forbidden not in summary
    rows = table(summary.split("## Failing rows")[1].split("## Unparseable")[0])
    rows += table(summary.split("## Unparseable rows")[1].split("## Plots")[0])
    assert len(rows) == len(ATTACKS)
    # Each cell shows as itself once rendered (the outputs: around their number, marked), and
    # nothing in it is left unescaped.
    assert sorted(unmarkdown(row[1]) for row in rows) == sorted(shown(a) for a in ATTACKS)
    for row in rows:
        attack = shown(unmarkdown(row[1]))
        output = unmarkdown(row[2]).removeprefix("no number: ")
        assert output.replace("⟦", "").replace("⟧", "").strip("…") in attack, row
    lines = summary.splitlines()
    source = lines[7].removeprefix("Input: ").removesuffix(", 12 rows (2 unparseable).")
    assert unmarkdown(source) == HOSTILE_SOURCE
    options = table(summary.split("## Options")[1].split("## Plots")[0])
    named = {unmarkdown(row[0]): unmarkdown(row[1]) for row in options}
    roles = ("output_col", "expected_col", "id_col")
    assert [named[role] for role in roles] == list(HOSTILE_COLUMNS)
    user_text = [source, *lines[4:6], *(cell for row in rows + options for cell in row)]
    for text in user_text:
        assert not re.search(r"[`*_~\[\]()!<>&:@\\|]|(?<![0-9])\.|\.(?![0-9])", inert(text)), text


def test_hostile_cells_are_escaped_text_in_the_html_report(hostile: tuple[str, str]) -> None:
    page = hostile[1]
    parser = parse(page)  # only the tags the report emits, images only as data URIs
    assert "<script" not in page and "<img src=x" not in page and "<b>" not in page
    cells = re.findall(r'<td class="text">(.*?)</td>', page)
    for attack in ATTACKS:
        assert parser.text.count(shown(attack)) == 1  # as the id, as text
    marks = [cell for cell in cells if "<mark>" in cell]
    assert len(marks) == 2 * len(ATTACKS) - 2  # each output and expected value but "n/a"s
    for cell in marks:  # the number read, marked, in its text escaped (no other tag)
        before, token, after = re.fullmatch(r"(.*)<mark>(.*)</mark>(.*)", cell).groups()
        assert "<" not in before + token + after
        whole = html.unescape(before + token + after).strip("…")
        assert any(whole in shown(a) for a in ATTACKS) or whole.startswith("1e9")
    assert HOSTILE_SOURCE in parser.text
    for column in HOSTILE_COLUMNS:
        assert column in parser.text


def test_notes_show_under_the_headline_in_both_reports(hostile: tuple[str, str]) -> None:
    summary, page = hostile
    lines = summary.splitlines()
    assert lines[2].startswith("**Mean score ") and lines[3] == ""
    assert [unmarkdown(line.removeprefix("- ")) for line in lines[4:6]] == [shown(n) for n in NOTES]
    assert lines[6] == "" and lines[7].startswith("Input: ")
    texts = [t for t in parse(page).text if t.strip()]
    assert texts[3].startswith("Mean score ")
    assert texts[4:6] == [shown(n) for n in NOTES] and texts[6] == "Input: "
    assert '<p class="note">' in page


@pytest.mark.parametrize(
    ("pass_rate", "n", "expected"),
    [(0.9, 101, 0.03), (0.5, 2, 0.5), (1.0, 50, 0.0), (0.0, 50, 0.0), (1.0, 1, math.nan),
     (0.0, 0, math.nan)],
)  # fmt: skip
def test_pass_rate_stderr(pass_rate: float, n: int, expected: float) -> None:
    assert pass_rate_stderr(pass_rate, n) == pytest.approx(expected, nan_ok=True)


def test_pass_rate_stderr_is_that_of_the_pass_indicator() -> None:
    passed = np.random.default_rng(3).random(77) < 0.8
    expected = passed.std(ddof=1) / math.sqrt(len(passed))
    assert pass_rate_stderr(passed.mean(), len(passed)) == pytest.approx(expected)


def test_a_failed_write_leaves_no_report_file(results: pd.DataFrame, tmp_path: Path) -> None:
    """report.html cannot be written (a folder holds its name): the plots and the summary
    written before it, and a stale summary of an earlier run, are removed; the error is raised."""
    (tmp_path / SUMMARY_MD).write_text("an earlier run")
    (tmp_path / REPORT_HTML).mkdir()
    with pytest.raises(IsADirectoryError):
        build(results).write(tmp_path, aggregate(results), "preds.csv")
    assert os.listdir(tmp_path) == [REPORT_HTML]


def test_a_full_disk_leaves_no_report_file(results: pd.DataFrame, tmp_path: Path) -> None:
    """On a real tmpfs with room for the plots and the summary but not for report.html."""
    sizes = [p.stat().st_size for p in build(results).write(tmp_path / "roomy", {}, "p.csv")]
    page = 4096
    room = (sum(sizes[:3]) // page + 2) * page
    assert sizes[3] > 3 * page  # report.html cannot fit in what is left
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={room}", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    try:
        with pytest.raises(OSError, match="No space left on device"):
            build(results).write(mount / "report", {}, "p.csv")
        assert os.listdir(mount / "report") == []
    finally:
        subprocess.run(["umount", str(mount)], check=True, timeout=30)


def test_the_report_made_in_a_child_is_the_plain_one(results: pd.DataFrame, tmp_path: Path) -> None:
    """The job's fast path (a child process makes the files while MLflow is imported) writes
    the very bytes of the plain path."""
    builder = build(results)
    aggregates, notes = aggregate(results), ("a note",)
    with builder.render_in_child(aggregates, "preds.csv", notes):
        paths = builder.write(tmp_path, aggregates, "preds.csv", notes)
    assert {p.name: p.read_bytes() for p in paths} == builder.files(aggregates, "preds.csv", notes)


def _elsewhere(parent: int) -> dict[str, bytes]:
    """This process's id, after a minute when it is not ``parent``."""
    if os.getpid() != parent:
        time.sleep(60)
    return {"pid": str(os.getpid()).encode()}


def test_in_child_makes_it_apart_and_leaves_no_process() -> None:
    files = {"empty": b"", "a": b"\n{}\n", "b": bytes(range(256)) * 1000}
    with ForkedCall(lambda: {**files, "pid": str(os.getpid()).encode()}) as child:
        pid = child.pid
        assert child.result() == {**files, "pid": str(pid).encode()}
        assert pid != os.getpid()
    assert child.pid == -1
    with pytest.raises(ProcessLookupError):  # reaped, not a zombie
        os.kill(pid, 0)


def test_in_child_falls_back_to_the_plain_call() -> None:
    """A child that fails, is killed or does not answer in time: made here, errors included."""
    parent = os.getpid()
    here = {"pid": str(parent).encode()}

    def fails_in_the_child() -> dict[str, bytes]:
        if os.getpid() != parent:
            raise RuntimeError("the child fails")
        return here

    assert ForkedCall(fails_in_the_child).result() == here
    killed = ForkedCall(lambda: _elsewhere(parent))
    os.kill(killed.pid, signal.SIGKILL)
    assert killed.result() == here
    assert ForkedCall(lambda: _elsewhere(parent), timeout=0.5).result() == here

    def broken() -> dict[str, bytes]:
        raise ValueError("broken everywhere")

    with pytest.raises(ValueError, match="broken everywhere"):
        ForkedCall(broken).result()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_in_child_dies_of_a_signal_without_the_parents_handler(signum: int, tmp_path: Path) -> None:
    """The parent's handler (the CLI's: it removes partial files) is not the child's: the
    child stops at once and runs nothing of it."""
    handled = tmp_path / "handled"
    previous = signal.signal(signum, lambda *_: handled.write_text(str(os.getpid())))
    try:
        parent = os.getpid()
        with ForkedCall(lambda: _elsewhere(parent)) as child:
            os.kill(child.pid, signum)
            info = os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
            assert info is not None and (info.si_code, info.si_status) == (os.CLD_KILLED, signum)
    finally:
        signal.signal(signum, previous)
    assert not handled.exists()


def test_a_bar_of_one_row_shows_on_a_log_scale() -> None:
    """Log scale (a tall bar at 1 beside a few rows): one failing row still makes a bar."""
    from PIL import Image

    from numdiff_component.report.plots import FAIL_COLOUR, draw_histogram

    passed = np.zeros(len(SCORE_EDGES) - 1, dtype=np.int64)
    failed = passed.copy()
    passed[-1], failed[0], failed[9] = 5_000, 2, 1
    png = draw_histogram(passed, failed, 0, 0.99, "log scale")
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    colour = tuple(int(FAIL_COLOUR[i : i + 2], 16) for i in (1, 3, 5))
    below_the_legend = (rgb[250:] == colour).all(axis=2)
    columns = np.flatnonzero(below_the_legend.any(axis=0))
    assert np.count_nonzero(np.diff(columns) > 1) + 1 == 2  # two red bars: bins 0 and 9


def test_a_failing_rows_answer_shows_however_far_it_stands(tmp_path: Path) -> None:
    """Issue 30: the text around the number read, never the first characters; a long chain of
    thought shows its final answer, marked, with … where the text is cut."""
    steps = " ".join(f"Step {i}: {i} + {i} = {2 * i}." for i in range(1, 30))
    frame = pd.DataFrame({"output": [f"{steps} So 17 * 23 = 391. The answer is 392."]})
    results = score_frame(frame.assign(expected=["400"]), pick="answer")
    builder = ReportBuilder(Options(pick="answer"))
    builder.add(results)
    summary, page = (p.read_text() for p in builder.write(tmp_path, aggregate(results), "t")[2:])
    row = table(summary.split("## Failing rows")[1])[0]
    assert row[0] == "1" and row[1].endswith("answer is ⟦392\\.⟧") and row[1].startswith("…")
    assert "<mark>392.</mark>" in page and "Step 1:" not in page
