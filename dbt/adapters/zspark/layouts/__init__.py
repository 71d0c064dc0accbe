"""The layouts, one module each, and their registry: how rows are ordered before they are
cut into files.

A layout owns its key twice, in numpy (the key UDF) and in Spark SQL, and the config that
selects it. Adding one means a module here with a :class:`~.base.Layout` (or, for a
space-filling curve, a :class:`~.base.CurveLayout`: its ``curve`` and ``curve_sql``), a
line in :data:`LAYOUTS`, and its config field in ``impl.ZSparkConfig``
(``docs/architecture.md``).
"""

from __future__ import annotations

from dbt.adapters.zspark.layouts.balanced import BalancedLayout, group_shift
from dbt.adapters.zspark.layouts.base import (
    CURVE_METHODS,
    ColumnSpec,
    CurveLayout,
    KeyFunction,
    Layout,
    boundary_ranks,
    rank_grid_bits,
    stretch_ranks,
)
from dbt.adapters.zspark.layouts.gray import GrayLayout
from dbt.adapters.zspark.layouts.hilbert import HilbertLayout
from dbt.adapters.zspark.layouts.linear import LinearLayout
from dbt.adapters.zspark.layouts.zorder import ZOrderLayout, zorder_schedule

_CURVES: tuple[CurveLayout, ...] = (LinearLayout(), ZOrderLayout(), HilbertLayout(),
                                    GrayLayout())

#: Every layout by the model config that selects it (``zorder_by``, ...).
LAYOUTS: dict[str, Layout] = {
    layout.config_key: layout
    for layout in (*_CURVES, BalancedLayout({curve.name: curve for curve in _CURVES}))
}
LAYOUTS_BY_NAME: dict[str, Layout] = {layout.name: layout for layout in LAYOUTS.values()}
#: The configs that choose a layout, in the registry's order.
CONFIG_KEYS: tuple[str, ...] = tuple(LAYOUTS)

__all__ = [
    "CONFIG_KEYS", "CURVE_METHODS", "LAYOUTS", "LAYOUTS_BY_NAME", "ColumnSpec", "CurveLayout",
    "KeyFunction", "Layout", "boundary_ranks", "group_shift", "rank_grid_bits",
    "stretch_ranks", "zorder_schedule",
]
