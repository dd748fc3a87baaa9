"""The grid's model without a view: windowing, formatting, lazy values, filters, sort, CSV."""
from __future__ import annotations

import csv

import numpy as np
import pytest

pytest.importorskip("PySide6")
from PySide6.QtCore import Qt

from app.models.csv_export import export_csv
from app.models.row_selection import RowFilter, SortKey, compute_view_rows, filter_rows, sort_rows
from app.models.windowed_table_model import WindowedTableModel
from itarcore.document import Column, Table

N = 5000
EXTS = ["jpg", "json", "cls"]


class StemResolver:
    """A lazy column that records which rows it was asked for."""

    def __init__(self) -> None:
        self.asked: list[int] = []

    def __call__(self, rows: np.ndarray) -> list[str]:
        self.asked.extend(int(r) for r in rows)
        return [f"sample{r // 3:05d}" for r in rows]


def make_table(resolver: StemResolver | None = None) -> tuple[Table, dict[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    cols = {
        "size": rng.integers(0, 100_000, N).astype(np.uint64),
        "extension": (np.arange(N) % 3).astype(np.uint16),
        "keyhash": rng.integers(0, 2**63, N, dtype=np.int64).astype(np.uint64) * 2 + 1,
    }
    stems = resolver or StemResolver()
    names = np.asarray([f"sample{r // 3:05d}" for r in range(N)])
    table = Table(
        "rows", N,
        [Column("size", cols["size"], "size"), Column("extension", cols["extension"], "enum", EXTS),
         Column("keyhash", cols["keyhash"], "hex"), Column("stem", stems, "text")],
        lookup=lambda text: np.flatnonzero(names == text),
        lookup_label="stem",
    )
    return table, cols


def test_window_exposes_at_most_window_rows_and_maps_to_source():
    table, cols = make_table()
    model = WindowedTableModel(table, window=1000)
    assert model.rowCount() == 1000 and model.columnCount() == 4
    assert model.n_view == N
    model.set_window_start(4500)  # clamped so the window ends at the last row
    assert model.window_start == 4000 and model.rowCount() == 1000
    last = model.index(999, 0)
    assert model.data(last) == f"{int(cols['size'][N - 1]):,}"
    assert model.headerData(999, Qt.Orientation.Vertical) == str(N - 1)
    assert model.data(model.index(0, 1)) == EXTS[4000 % 3]
    assert model.data(model.index(0, 2)) == f"{int(cols['keyhash'][4000]):016x}"
    assert model.data(model.index(0, 0), Qt.ItemDataRole.ToolTipRole) is None  # roles not served: None


def test_lazy_column_is_asked_only_for_rows_around_the_request():
    resolver = StemResolver()
    table, _ = make_table(resolver)
    model = WindowedTableModel(table, window=1000)
    model.lazy_chunk = 20
    assert model.data(model.index(100, 3)) == "sample00033"
    assert resolver.asked == list(range(100, 120))
    assert model.data(model.index(105, 3)) == "sample00035"  # cached: no new call
    assert len(resolver.asked) == 20
    assert model.resolved("stem")[119] == "sample00039"


def test_filter_by_enum_range_and_key_match_numpy_truth():
    table, cols = make_table()
    flt = RowFilter(enums={"extension": {1}}, ranges={"size": (1000, 50_000)})
    got = filter_rows(table, flt)
    truth = np.flatnonzero((cols["extension"] == 1) & (cols["size"] >= 1000) & (cols["size"] <= 50_000))
    assert np.array_equal(got, truth) and len(truth) > 100
    got = filter_rows(table, RowFilter(key="sample00010"))
    assert got.tolist() == [30, 31, 32]
    got = filter_rows(table, RowFilter(key="sample00010", enums={"extension": {2}}))
    assert got.tolist() == [32]
    assert filter_rows(table, RowFilter()) is None


def test_substring_on_lazy_column_reads_every_name_and_reports_first_matches_early():
    resolver = StemResolver()
    table, _ = make_table(resolver)
    first: list[np.ndarray] = []
    got = filter_rows(table, RowFilter(substring=("stem", "PLE0001")), on_first=first.append, first=5)
    # every row's name was read, though none was ever shown: no false negatives, case-insensitive
    assert sorted(set(resolver.asked)) == list(range(N))
    truth = [r for r in range(N) if "ple0001" in f"sample{r // 3:05d}"]
    assert got.tolist() == truth and len(truth) == 30  # sample00010 … sample00019
    assert len(first) == 1 and first[0].tolist() == truth[:5]
    # cheap conditions narrow the rows whose names are read
    resolver.asked.clear()
    got = filter_rows(table, RowFilter(substring=("stem", "00013"), enums={"extension": {0}}))
    assert got.tolist() == [39] and len(resolver.asked) == len(range(0, N, 3))


def test_sort_is_stable_both_ways():
    table, cols = make_table()
    asc = sort_rows(table, SortKey("extension"), None)
    # by label: cls(2) < jpg(0) < json(1); within a label, ascending row order
    assert asc[:3].tolist() == [2, 5, 8]
    assert np.array_equal(asc, np.concatenate([np.arange(2, N, 3), np.arange(0, N, 3), np.arange(1, N, 3)]))
    desc = sort_rows(table, SortKey("size", descending=True), None)
    sizes = cols["size"][desc]
    assert np.all(sizes[:-1] >= sizes[1:])
    ties = [(int(s), int(r)) for s, r in zip(sizes, desc)]
    assert ties == sorted(ties, key=lambda t: (-t[0], t[1]))  # equal sizes keep row order


def test_filter_then_sort_and_view_mapping():
    table, cols = make_table()
    rows = compute_view_rows(table, RowFilter(enums={"extension": {0}}), SortKey("size"))
    truth = np.arange(0, N, 3)[np.argsort(cols["size"][0::3], kind="stable")]
    assert np.array_equal(rows, truth)
    model = WindowedTableModel(table, window=1000)
    model.set_view_rows(rows)
    assert model.n_view == len(truth) and model.rowCount() == 1000
    assert model.source_row(0) == truth[0]
    assert model.view_row_of(int(truth[10])) == 10
    assert model.view_row_of(1) is None  # a json row: filtered out
    model.set_view_rows(None)
    assert model.n_view == N and model.view_row_of(N - 1) == N - 1


def test_csv_export_writes_shown_rows_as_displayed(tmp_path):
    table, cols = make_table()
    rows = np.asarray([9, 3, 4000], dtype=np.int64)
    out = tmp_path / "rows.csv"
    assert export_csv(table, rows, out) == 3
    with open(out, newline="") as fh:
        lines = list(csv.reader(fh))
    assert lines[0] == ["row", "size", "extension", "keyhash", "stem"]
    assert lines[1] == ["9", f"{int(cols['size'][9]):,}", "jpg", f"{int(cols['keyhash'][9]):016x}", "sample00003"]
    assert [line[0] for line in lines[1:]] == ["9", "3", "4000"]
    assert lines[3][2] == EXTS[4000 % 3] and lines[3][4] == "sample01333"


def _changed_rows(model: WindowedTableModel) -> list[tuple[str, int, int]]:
    """Rows announced as changed: ("cells" or "header", first, last) per signal, in order."""
    seen: list[tuple[str, int, int]] = []
    model.dataChanged.connect(lambda a, b, *_: seen.append(("cells", a.row(), b.row())))
    model.headerDataChanged.connect(lambda orientation, a, b: seen.append(("header", a, b)))
    return seen


def _rows(first: int, last: int) -> list[tuple[str, int, int]]:
    return [("cells", first, last), ("header", first, last)]


def test_a_sorts_full_order_repaints_only_the_rows_still_pending():
    """The early first window stays on screen: only rows it did not hold are announced as changed."""
    table, cols = make_table()
    order = np.argsort(cols["size"], kind="stable")
    model = WindowedTableModel(table, window=1000)
    model.set_view_rows(order[:300], N)  # the first 300 rows of the order known, the rest pending
    assert model.source_row(299) == order[299] and model.source_row(300) == -1
    seen = _changed_rows(model)
    model.continue_view_rows(order)
    assert seen == _rows(300, 999)  # rows 0..299 painted already with these very source rows
    assert model.source_row(300) == order[300]
    assert model.data(model.index(500, 0)) == f"{int(cols['size'][order[500]]):,}"

    model.set_view_rows(order[:2000], N)  # the early answer covers the whole window
    seen = _changed_rows(model)
    model.continue_view_rows(order)
    assert seen == []


def test_a_continued_view_repaints_every_row_when_the_window_had_to_move():
    """A final answer shorter than the early estimate pulls the window back: every row on screen changes."""
    table, cols = make_table()
    matches = np.flatnonzero(cols["extension"] == 1)  # a filter's answer: 1,667 rows
    model = WindowedTableModel(table, window=1000)
    model.set_view_rows(matches[:1200], 3000)  # first matches, a count still running
    model.set_window_start(2000)
    assert model.window_start == 2000
    seen = _changed_rows(model)
    model.continue_view_rows(matches)
    assert model.window_start == len(matches) - 1000
    assert seen == _rows(0, 999)
    assert model.source_row(model.window_start) == matches[len(matches) - 1000]


def test_a_full_order_below_a_scrolled_window_repaints_from_the_first_pending_row():
    table, cols = make_table()
    order = np.argsort(cols["size"], kind="stable")
    model = WindowedTableModel(table, window=1000)
    model.set_view_rows(order[:1300], N)
    model.set_window_start(500)  # view rows 500..1499 on screen, 500..1299 of them known
    seen = _changed_rows(model)
    model.continue_view_rows(order)
    assert model.window_start == 500
    assert seen == _rows(800, 999)
    assert model.source_row(1300) == order[1300]


def test_an_early_answer_that_is_not_the_final_orders_prefix_is_repainted_where_they_part():
    """Defence in depth: rows on screen whose source row changed are never left painted with the old one."""
    table, cols = make_table()
    order = np.argsort(cols["size"], kind="stable")
    early = order[:300].copy()
    early[120:] = early[120:][::-1]  # from view row 120 on, not what the full order says
    model = WindowedTableModel(table, window=1000)
    model.set_view_rows(early, N)
    seen = _changed_rows(model)
    model.continue_view_rows(order)
    assert seen == _rows(120, 999)
