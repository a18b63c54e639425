"""The README's notebook example, run as written against the real server while two
raters work through the batch it uploads."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import matplotlib
import pandas as pd
from helpers import rate

README = Path(__file__).resolve().parent.parent / "README.md"


def example() -> str:
    """The first Python block of the README."""
    found = re.search(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
    assert found, "the README has a Python example"
    return found.group(1)


def test_the_readme_example_runs(server, monkeypatch, tmp_path):
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VERDICT_TOKEN", server.tokens["admin"])
    code = example().replace("http://localhost:8080", server.base_url)
    # The example polls every 30 s, as a person watching would; a test has less time.
    code = code.replace("every=30", "every=0.1")

    failures: list[BaseException] = []

    def raters_at_work() -> None:
        try:
            with server.client("admin") as admin:
                deadline = time.monotonic() + 30
                while not (found := [b for b in admin.batches() if b.name == "squares"]):
                    assert time.monotonic() < deadline, "the example uploaded its batch"
                    time.sleep(0.05)
            for username in ("rater", "rater2"):
                with server.client(username) as client:
                    for _ in range(20):
                        rate(client, found[0].id)
        except BaseException as failure:  # reported by the test, not lost in the thread
            failures.append(failure)

    work = threading.Thread(target=raters_at_work)
    work.start()
    scope: dict = {}
    try:
        exec(compile(code, str(README), "exec"), scope)
    finally:
        work.join(timeout=60)
    assert failures == []

    assert scope["batch"].progress.tasks == 20
    assert scope["metrics"].counts.included == 40
    ratings = scope["ratings"]
    assert isinstance(ratings, pd.DataFrame) and len(ratings) == 40
    assert (tmp_path / "preferences.png").stat().st_size > 0
    assert len(pd.read_parquet(tmp_path / "squares.parquet")) == 40
    assert scope["dataset"].num_rows == 40
    agreed = scope["agreed"]
    # Both raters found A better (2 of 7) as they were shown the task; the example's
    # batch shows A and B in a random order, so in the task's own order that is 2 or 6;
    # where one rater saw the task swapped and the other did not, the two answers tie.
    for _, row in agreed[agreed["question"] == "sxs"].iterrows():
        if row["answer"] is None:
            assert list(row["tied"]) == [2, 6]
        else:
            assert row["answer"] in (2, 6) and list(row["tied"]) == []
    assert set(ratings["answers.sxs"]) <= {2, 6}
