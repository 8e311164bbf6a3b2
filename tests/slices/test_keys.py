"""Metric keys of groups (SPEC §3.1): valid in MLflow, one key per value, within its length."""

from __future__ import annotations

import hashlib
import re

import pytest
from mlflow import MlflowClient
from mlflow.entities import Metric
from mlflow.utils.validation import MAX_ENTITY_KEY_LENGTH

from numdiff_component.slices.groups import COLUMN_METRICS, GROUP_METRICS
from numdiff_component.slices.keys import CUT_KEEP, PART_MAX, key_part

HOSTILE = [
    "New York",
    "a/b",
    "../etc",
    ".",
    "..",
    "x=1",
    "user@example.com",
    "a, b",
    "12:30",
    "Z\u00fcrich",
    "\u7b54\u6848",
    "\U0001f600",
    "x" * 300,
    "x" * 299 + "y",  # cut to the same 90 characters as the one above
    "a_2Fb",  # what "a/b" would be under escaping without escaping "_"
    "a/b/",
    " ",
    "\t",
    "",
    None,
    "_null",
    "_empty",
    "1.5",
    "-",
]
KEPT = re.compile(r"[A-Za-z0-9_\-. ]*")


def _unescape(part: str) -> str:
    """The text an uncut part escapes, read back: every ``_XX`` is one byte."""
    data = re.sub(r"_([0-9A-F]{2})", lambda m: f"\0{m.group(1)}", part)
    out = bytearray()
    i = 0
    while i < len(data):
        if data[i] == "\0":
            out.append(int(data[i + 1 : i + 3], 16))
            i += 3
        else:
            out += data[i].encode()
            i += 1
    return out.decode()


@pytest.mark.parametrize("text", HOSTILE, ids=repr)
def test_a_part_holds_allowed_characters_only_and_reads_back(text: str | None) -> None:
    part = key_part(text)
    assert KEPT.fullmatch(part) and 0 < len(part) <= PART_MAX
    assert not part.startswith(".")
    if text and len(part) < PART_MAX:
        assert _unescape(part) == text


def test_no_two_values_share_a_part() -> None:
    parts = [key_part(t) for t in HOSTILE]
    assert len(set(parts)) == len(HOSTILE)
    naive = {t: re.sub(r"[^A-Za-z0-9_\-. ]", "_", t) for t in ("a/b", "a=b", "a_b")}
    assert len(set(naive.values())) == 1  # would collide
    assert len({key_part(t) for t in naive}) == 3


def test_a_long_part_is_cut_with_its_hash() -> None:
    text = "x" * 300
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    assert key_part(text) == "x" * CUT_KEEP + "_h" + digest


def test_every_key_logs_to_a_real_store(tracking_uri: str) -> None:
    """The longest keys there can be, for every hostile value, logged to a sqlite store."""
    names = [*GROUP_METRICS, *COLUMN_METRICS]
    longest = max(names, key=len)
    column = key_part("c" * 300)
    keys = [f"numeric_diff/by/{column}/{key_part(t)}/{longest}" for t in HOSTILE]
    keys += [f"numeric_diff/by/{key_part(t)}/{name}" for t in HOSTILE for name in names]
    assert max(len(k) for k in keys) <= MAX_ENTITY_KEY_LENGTH
    client = MlflowClient()
    run = client.create_run(client.get_experiment_by_name("tests").experiment_id)
    client.log_batch(run.info.run_id, metrics=[Metric(k, 1.0, 0, 0) for k in keys])
    assert set(client.get_run(run.info.run_id).data.metrics) == set(keys)
