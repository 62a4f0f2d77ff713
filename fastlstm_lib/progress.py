"""The library's one progress bar: tqdm when installed, nothing otherwise.

Long work (benchmarks over many steps, training runs, sweeps) shows a bar: in a notebook a widget
where ipywidgets is installed (the ``lab`` extra installs it), else tqdm's text bar on stdout,
not stderr, which Jupyter draws in red like an error. The lean GPU machine may have no tqdm, and
a notebook without ipywidgets would get ``tqdm.auto``'s warning (with its install path) in its
stored output: both cases are handled here, once.
"""

from __future__ import annotations

import sys


class _NoProgressBar(list):
    def set_postfix_str(self, text):  # tqdm's method, doing nothing
        pass


def progress_bar(items, desc: str, unit: str, *, enabled: bool = True):
    """An iterable over ``items`` that draws a bar when ``enabled`` and tqdm is installed."""
    items = list(items)
    if not enabled:
        return _NoProgressBar(items)
    try:
        import ipywidgets  # noqa: F401

        from tqdm.auto import tqdm
    except ImportError:
        try:
            from tqdm import tqdm
        except ImportError:
            return _NoProgressBar(items)
        return tqdm(items, desc=desc, unit=unit, file=sys.stdout)
    return tqdm(items, desc=desc, unit=unit)
