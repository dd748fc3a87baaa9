"""The main window's docks: the default arrangement, sizes that fit the screen, saved layouts, Reset Layout.

A layout is only worth restoring if it fits the screen the window is on: one saved while a
long message had stretched the window past the screen would otherwise come back for every
later file. The window itself is capped at its screen's available size, so no widget's
size hint can push it past the screen.
"""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QRect, QSettings, QSize, Qt
from PySide6.QtWidgets import QDockWidget, QMainWindow, QTabBar, QWidget

# Bump when the default dock arrangement changes, so layouts saved by older versions are not restored.
LAYOUT_VERSION = 3
DEFAULT_SIZE = QSize(1440, 900)
# Smallest useful dock: a few lines of the header, a preview title and its buttons.
DOCK_MIN_WIDTH = 220
DOCK_MIN_HEIGHT = 120
PANEL_MIN_WIDTH = 340  # a format panel's widest minimum (it fits beside the grid on a 1366-px laptop)
# Title bar and borders, until the window is shown and the real frame is known.
FRAME_ALLOWANCE = QSize(16, 40)


def screen_area(widget: QWidget) -> QRect:
    """The available (work-area) geometry of the screen ``widget`` is on."""
    screen = widget.screen()
    return screen.availableGeometry() if screen is not None else QRect(0, 0, DEFAULT_SIZE.width(),
                                                                        DEFAULT_SIZE.height())


class WholeDockTabTitles(QObject):
    """Tabified docks keep their whole titles and scroll, rather than eliding seven titles to "P…".

    QMainWindow makes its dock tab bars itself, whenever a layout first needs one, so each is
    configured as it is polished.
    """

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        window.installEventFilter(self)
        for bar in window.findChildren(QTabBar):
            self.configure(bar)

    @staticmethod
    def configure(bar: QTabBar) -> None:
        bar.setElideMode(Qt.TextElideMode.ElideNone)
        bar.setUsesScrollButtons(True)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ChildPolished and isinstance(event.child(), QTabBar):
            self.configure(event.child())
        return False


class DockLayout:
    """Creates, sizes, saves and restores the docks of ``window``."""

    def __init__(self, window: QMainWindow, settings: QSettings) -> None:
        self.w = window
        self.settings = settings
        self.panel_docks: list[QDockWidget] = []
        self._preview_dock: QDockWidget | None = None
        self._header_dock: QDockWidget | None = None
        self._hex_dock: QDockWidget | None = None
        self._tab_titles = WholeDockTabTitles(window)

    def add(self, title: str, name: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self.w)
        dock.setObjectName(name)
        dock.setWidget(widget)
        dock.setMinimumSize(DOCK_MIN_WIDTH, DOCK_MIN_HEIGHT)
        self.w.addDockWidget(area, dock)
        return dock

    def arrange(self, header: QDockWidget, hex_: QDockWidget, preview: QDockWidget) -> None:
        """Header and hex side by side under the grids; the preview spans the full height on the right."""
        self._header_dock, self._hex_dock, self._preview_dock = header, hex_, preview
        self.w.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.w.setCorner(Qt.Corner.TopRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.w.splitDockWidget(header, hex_, Qt.Orientation.Horizontal)

    def add_panel(self, panel: QWidget, title: str, name: str) -> QDockWidget:
        """Dock a format panel as a tab beside the preview and the other panels."""
        # an explicit minimum: a panel's own layout may not push the dock, and so the window, wider
        hint = panel.minimumSizeHint()
        panel.setMinimumSize(min(max(hint.width(), 0), PANEL_MIN_WIDTH), min(max(hint.height(), 0), 200))
        dock = self.add(title, name, panel, Qt.DockWidgetArea.RightDockWidgetArea)
        self.w.tabifyDockWidget(self.panel_docks[-1] if self.panel_docks else self._preview_dock, dock)
        self.panel_docks.append(dock)
        return dock

    def remove_panels(self) -> list[QDockWidget]:
        docks, self.panel_docks = self.panel_docks, []
        for dock in docks:
            self.w.removeDockWidget(dock)
            # out of the window now, not at deleteLater's turn: restoreState() finds docks by name among
            # the window's children, and would dock a closing one back as a stale tab
            dock.setParent(None)
            dock.deleteLater()
        return docks

    # ---- sizes ---------------------------------------------------------------------------
    def fit_to_screen(self) -> None:
        """Cap the window at its screen, and shrink it to fit if it is larger."""
        area = screen_area(self.w)
        frame = self._frame()
        limit = QSize(max(320, area.width() - frame.width()), max(240, area.height() - frame.height()))
        if self.w.isVisible():  # before that the frame is a guess: a cap from it would be wrong
            self.w.setMaximumSize(limit)
        if self.w.width() > limit.width() or self.w.height() > limit.height():
            self.w.resize(min(self.w.width(), limit.width()), min(self.w.height(), limit.height()))

    def follow_screen(self) -> None:
        """Once shown: fit again whenever the window moves to another screen (a laptop's, say)."""
        handle = self.w.windowHandle()
        if handle is not None and not getattr(self, "_following", False):
            self._following = True
            handle.screenChanged.connect(lambda _screen: self.fit_to_screen())

    def default_size(self) -> QSize:
        area, frame = screen_area(self.w), self._frame()
        return QSize(min(DEFAULT_SIZE.width(), area.width() - frame.width()),
                     min(DEFAULT_SIZE.height(), area.height() - frame.height()))

    def _frame(self) -> QSize:
        frame = self.w.frameGeometry().size() - self.w.geometry().size()
        return frame if self.w.isVisible() and not frame.isEmpty() else FRAME_ALLOWANCE

    def size_docks(self) -> None:
        w, h = self.w.width(), self.w.height()
        preview_w = max(PANEL_MIN_WIDTH, w * 25 // 100)  # the grid, header fields and hex pane get the rest
        hex_pane = self._hex_dock.widget()
        hex_w = hex_pane.minimum_width_hint() if hasattr(hex_pane, "minimum_width_hint") else 420
        self.w.resizeDocks([self._preview_dock], [preview_w], Qt.Orientation.Horizontal)
        self.w.resizeDocks([self._header_dock], [max(DOCK_MIN_HEIGHT + 60, h // 3)], Qt.Orientation.Vertical)
        rest = max(DOCK_MIN_WIDTH, w - preview_w - hex_w)
        hex_w += self._hex_dock.width() - hex_pane.width() if hex_pane.width() else 8  # the dock's own margins
        self.w.resizeDocks([self._header_dock, self._hex_dock], [rest, hex_w], Qt.Orientation.Horizontal)

    # ---- saving and restoring ------------------------------------------------------------
    def restore_geometry(self) -> bool:
        """The saved window geometry if it fits the screen; otherwise the default size. True if restored."""
        geometry = self.settings.value("window/geometry")
        restored = geometry is not None and self.w.restoreGeometry(geometry)
        # Qt squeezes an oversized geometry onto the screen edge to edge; a default-sized window is better
        if restored and not self._fits(QRect(self.w.pos(), self.w.size() + self._frame())):
            self.w.resize(self.default_size())
            restored = False
        self.fit_to_screen()
        return restored

    def restore(self) -> bool:
        """Apply the saved dock layout if there is one, it is of this version, and the window then fits."""
        state = self.settings.value("window/state")
        if state is None:
            return False
        before = self.w.saveState()
        if not self.w.restoreState(state, LAYOUT_VERSION):
            return False
        hint = self.w.minimumSizeHint()
        area = screen_area(self.w)
        if hint.width() > area.width() or hint.height() > area.height():
            self.w.restoreState(before)  # docks sized for a bigger screen than this one
            return False
        return True

    def save(self) -> None:
        self.settings.setValue("window/geometry", self.w.saveGeometry())
        self.settings.setValue("window/state", self.w.saveState(LAYOUT_VERSION))
        self.settings.sync()

    def reset(self) -> None:
        """View → Reset Layout: the default arrangement, sized for this window, every dock shown.

        Built again dock by dock rather than with restoreState(): a restored state that lacks the
        panels' docks leaves stale tab bars behind once those docks close.
        """
        self.fit_to_screen()
        docks = (self._header_dock, self._hex_dock, self._preview_dock, *self.panel_docks)
        # a dock is only docked again if it moved: docking one again where it already is leaves a
        # stale tab bar behind once it closes
        bottom, right = Qt.DockWidgetArea.BottomDockWidgetArea, Qt.DockWidgetArea.RightDockWidgetArea
        header_hex_moved = False
        for dock, area in ((self._header_dock, bottom), (self._hex_dock, bottom), (self._preview_dock, right)):
            if dock.isFloating() or self.w.dockWidgetArea(dock) != area:
                dock.setFloating(False)
                self.w.addDockWidget(area, dock)
                header_hex_moved |= dock is not self._preview_dock
        if header_hex_moved:
            self.w.splitDockWidget(self._header_dock, self._hex_dock, Qt.Orientation.Horizontal)
        tabbed = set(self.w.tabifiedDockWidgets(self._preview_dock))
        previous = self._preview_dock
        for dock in self.panel_docks:
            if dock not in tabbed or dock.isFloating():
                dock.setFloating(False)
                self.w.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
                self.w.tabifyDockWidget(previous, dock)
            previous = dock
        for dock in docks:
            dock.show()
        self.size_docks()
        self._preview_dock.raise_()

    def _fits(self, rect: QRect) -> bool:
        area = screen_area(self.w)
        return rect.width() < area.width() and rect.height() < area.height() and area.intersects(rect)
