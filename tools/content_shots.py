"""The content views of ``tools/screenshots.py``: Gallery, Statistics, Duplicates, Export Subset, Open URL.

A mixin of its ``Shots`` (which gives ``open``, ``raise_panel``, ``wait``, ``settle``, ``save``
and ``demo``); each view is reached as a user would and grabbed once the signal its test waits
for has come.
"""
from __future__ import annotations

import tarfile
import tempfile
from pathlib import Path

LEAKED_SAMPLES = 12  # samples of the demo's second shard copied into a "val" fold: planted leaks


class ContentShots:
    def leak_fold(self) -> Path:
        """A "val" fold beside the demo: its first samples copied byte for byte from the demo's second shard."""
        from itarcore.jobs import index_fold

        folder = self.demo.parent.parent / "val"
        index = folder / "val.taridx"
        if index.exists():
            return index
        folder.mkdir(parents=True, exist_ok=True)
        shard = folder / "val_0000.tar"
        with tarfile.open(self.demo.parent / "demo_0001.tar") as tar, \
                tarfile.open(shard, "w", format=tarfile.USTAR_FORMAT) as out:
            stems: set[str] = set()
            for member in tar.getmembers():
                stems.add(member.name.split(".", 1)[0])
                if len(stems) > LEAKED_SAMPLES:
                    break
                out.addfile(member, tar.extractfile(member))
        index_fold([shard], index, fold="val")
        return index

    def view_gallery(self, view: str, theme: str) -> Path:
        w = self.open(self.demo)
        gallery = self.raise_panel("Gallery")
        self.wait(lambda: gallery._started and gallery._items_worker is None and gallery.n_items(), what="items")
        gallery.label_combo.setCurrentIndex(gallery.label_combo.findData("cls"))
        gallery.colour_combo.setCurrentIndex(1)  # colour by label
        self.wait(lambda: gallery._items_worker is None and (gallery.label_rows >= 0).all(), what="labels")

        def loaded() -> bool:
            first, stop = gallery.grid.visible_range()
            return stop > first and all(gallery.cell(i) is not None for i in range(first, stop))

        self.wait(loaded, what="the thumbnails")
        # as a click: the sample's rows are selected in the grid, and previewed
        self.previewed(lambda: gallery.grid.set_current(6))
        self.wait(lambda: gallery._select_worker is None, what="the selection")
        self.wait(loaded, what="the thumbnails")
        return self.save(w, view, theme)

    def view_statistics(self, view: str, theme: str) -> Path:
        w, stats = self.panel_job("Statistics", lambda p: p.run_button.click(),
                                  lambda p: p.stats is not None and p.stats.complete, "the statistics")
        stats.tabs.setCurrentIndex(1)  # shards: the shard × extension heatmap and its table
        self.settle(60)
        return self.save(w, view, theme)

    def view_duplicates(self, view: str, theme: str) -> Path:
        def start(panel) -> None:
            panel.add_other(self.leak_fold())
            panel.run_button.click()

        w, dedup = self.panel_job("Duplicates", start, lambda p: p.report is not None, "the duplicate search")
        first = dedup.tree.topLevelItem(0)  # leaks come first
        dedup.tree.expandItem(first)
        self.settle()
        dedup.tree.setCurrentItem(first)
        self.previewed(lambda: dedup.tree.itemClicked.emit(first, 0))  # as a click on the group
        return self.save(w, view, theme)

    def view_export(self, view: str, theme: str) -> Path:
        from app.views.formats.taridx.export_dialog import ExportDialog

        w = self.open(self.demo)
        rows_tab = w.tabs_by_name["rows"]
        w.tabs.setCurrentWidget(rows_tab)
        applied = []
        mark = lambda: applied.append(True)
        rows_tab.viewApplied.connect(mark)
        rows_tab.filter_bar.substring.setText("demo0000")  # the grid's view: the first 100 samples
        self.wait(lambda: applied, what="the grid's filter")
        rows_tab.viewApplied.disconnect(mark)
        w.actions_.export_subset.trigger()
        dialog = w.findChildren(ExportDialog)[-1]
        dialog.output_edit.setText(str(Path(tempfile.mkdtemp(prefix="itar-export-")) / "demo-subset"))
        dialog.fold_edit.setText("first100")
        dialog.export_button.click()
        self.wait(lambda: dialog.worker is None, what="the export")
        path = self.save(dialog, view, theme)
        dialog.reject()
        rows_tab.filter_bar.substring.clear()
        self.settle()
        return path

    def view_open_url(self, view: str, theme: str) -> Path:
        from app.views.open_url_dialog import OpenUrlDialog

        w = self.window if self.window is not None else self.new_window()
        w.close_document()
        w._show_start_page()
        w.actions_.open_url.trigger()
        dialog = w.findChildren(OpenUrlDialog)[-1]
        dialog.url_box.setCurrentText("s3://bucket/dataset/train.taridx")
        dialog.option_rows[0].key.setText("endpoint_url")
        dialog.option_rows[0].value.setText("https://minio.example.org:9000")
        dialog.add_option("secret", "not-shown-on-screen")
        self.settle()
        path = self.save(dialog, view, theme)
        dialog.reject()
        return path

