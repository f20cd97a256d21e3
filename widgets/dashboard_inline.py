"""Draw a dashboard's panels with matplotlib when no visdom server answers.

One figure, a subplot per panel, three per row. In a Jupyter kernel a *live*
renderer displays it once and then replaces that same output in place (IPython's
``display_id``), at most every ``min_interval_s`` seconds while training runs;
otherwise the figure appears when :meth:`InlineRenderer.show` is called. After
each cell the dashboard calls :meth:`InlineRenderer.flush`, so a live figure ends
up showing the last step even when the last redraw was skipped.
"""
from __future__ import annotations

import io
import math
import time
from typing import Callable

from matplotlib.figure import Figure

from .dashboard_log import Panel

COLUMNS = 3


def in_jupyter() -> bool:
    """Whether this runs in a Jupyter kernel (where figures can be displayed)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")


def draw(panels: list[Panel], figure: Figure | None = None) -> Figure:
    """Draw ``panels`` into ``figure`` (cleared first; a new one if None) and return it."""
    if figure is None:
        # A bare Figure, not pyplot's: the inline backend would otherwise show it
        # again at the end of every cell that touched it.
        figure = Figure()
    figure.clear()
    rows = max(1, math.ceil(len(panels) / COLUMNS))
    figure.set_size_inches(4.6 * min(COLUMNS, max(1, len(panels))), 3.0 * rows)
    if not panels:
        figure.text(0.5, 0.5, "nothing logged yet", ha="center", va="center")
        return figure
    for i, panel in enumerate(panels):
        ax = figure.add_subplot(rows, min(COLUMNS, len(panels)), i + 1)
        for name, (xs, ys) in panel.traces.items():
            if panel.kind == "histogram":
                ax.step(xs, ys, where="post", label=name)
            else:
                ax.plot(xs, ys, label=name)
        if panel.log_y and any(ys for _xs, ys in panel.traces.values()):
            ax.set_yscale("log")
        ax.set_title(panel.title, fontsize=10)
        ax.set_xlabel(panel.xlabel, fontsize=8)
        ax.set_ylabel(panel.ylabel, fontsize=8)
        ax.tick_params(labelsize=7)
        if len(panel.traces) > 1:
            # beside the axes, never over the lines (placed inside, it hid them)
            ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                      frameon=False)
    figure.tight_layout()
    return figure


class InlineRenderer:
    """Keeps one matplotlib figure in step with a dashboard's panels.

    Args:
        live (bool, optional): in Jupyter, display the figure at the first
            :meth:`render` and update it in place afterwards. Default: ``True``.
        min_interval_s (float, optional): while live, redraw at most this often
            (a redraw takes about 0.1-0.3 s); :meth:`show` always redraws.
            Default: ``1.0``.
    """

    def __init__(self, live: bool = True, min_interval_s: float = 1.0):
        self.live = live
        self.min_interval_s = min_interval_s
        self.figure: Figure | None = None
        self._display = None
        self._last = -math.inf
        self._dirty = False

    def render(self, panels: Callable[[], list[Panel]]) -> None:
        """Redraw in place during training (only live, in Jupyter, and not too often).

        ``panels`` is called only when a redraw happens.
        """
        self._dirty = True
        if not (self.live and in_jupyter()) or time.monotonic() - self._last < self.min_interval_s:
            return
        self._draw(panels(), new_output=self._display is None)

    def flush(self, panels: Callable[[], list[Panel]]) -> None:
        """Bring a live figure up to date (the dashboard calls this after each cell)."""
        if self._dirty and self._display is not None:
            self._draw(panels(), new_output=False)

    def show(self, panels: Callable[[], list[Panel]]) -> None:
        """Draw now, as a new output in Jupyter (``plt.show()`` outside Jupyter)."""
        if in_jupyter():
            self._draw(panels(), new_output=True)
            return
        import matplotlib.pyplot as plt

        draw(panels(), plt.figure())
        plt.show()

    def _draw(self, panels: list[Panel], new_output: bool) -> None:
        from IPython.display import Image, display

        self.figure = draw(panels, self.figure)
        # A PNG of the figure rather than the Figure itself: a bare Figure only
        # renders where pyplot has set up the inline backend, a PNG everywhere.
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png")
        image = Image(data=buffer.getvalue(), format="png")
        if new_output:
            self._display = display(image, display_id=True)
        else:
            self._display.update(image)
        self._last = time.monotonic()
        self._dirty = False
