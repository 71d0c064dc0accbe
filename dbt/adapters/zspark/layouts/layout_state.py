"""The layout of a clustered table's last full build, stored with the table.

An incremental run keys its new rows exactly as the full build keyed the table's rows:
same layout, columns, curve method, boundaries. The build writes them into the table's
own ``TBLPROPERTIES`` in the same CREATE TABLE that writes its files, so the layout and the
rows it describes appear together at the swap, survive renames, and any later dbt process
reads them from the metastore (session or thrift alike).

Pure Python: properties in, :class:`StoredLayout` out, and back.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dbt.adapters.zspark.core import balanced
from dbt.adapters.zspark.layouts import LAYOUTS, ColumnSpec, KeyFunction
from dbt.adapters.zspark.layouts.planning import ClusteringPlan, normalize_type

PREFIX = "zspark.layout"
#: A readable summary of the layout (``SHOW TBLPROPERTIES``).
SUMMARY_KEY = f"{PREFIX}.summary"
PARTS_KEY = f"{PREFIX}.parts"
#: Some metastores cap a property value at 4000 characters (Spark splits its own schema
#: property the same way).
PART_CHARS = 4000
FORMAT_VERSION = 1
#: What Spark shows instead of a property value that looks like a secret.
REDACTED = "*********(redacted)"
#: Ids of the write jobs whose files were clustered together (by the last full build):
#: files of any other write were added since.
CLUSTERED_WRITES_KEY = f"{PREFIX}.clustered_writes"
# Spark (and Delta) name a job's files part-<task>-<job uuid>[-.]c<n>..., Iceberg
# <partition>-<task>-<query uuid>-<epoch>-<n>...; the uuid tells the write.
_WRITE_ID = re.compile(r"^(?:part-\d+-|\d+-\d+-)"
                       r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")


class StoredLayoutError(ValueError):
    """The stored layout cannot be read."""


@dataclass(frozen=True)
class StoredLayout:
    """What keys a row the way the last full build did, and how big its files were."""

    config_key: str
    columns: tuple[str, ...]
    column_types: tuple[str, ...]
    curve_method: str
    boundary_count: int
    #: Per column, the sampled boundaries in ``value_ranks.rank_values``' comparable form;
    #: None for the direct method.
    boundaries: tuple[np.ndarray | None, ...]
    partition_by: tuple[str, ...]
    rows: int
    files: int
    rows_per_file: int
    #: The balanced layout's fitted partition (``balanced.to_json``), over boundary ranks.
    tree: dict[str, Any] | None = None
    #: ``cluster_weights`` of the build (empty: every column the same), for a full
    #: re-clustering on demand to fit the same way.
    weights: tuple[float, ...] = ()

    @classmethod
    def of_build(cls, plan: ClusteringPlan, boundaries: Sequence[np.ndarray | None],
                 rows: int, files: int, rows_per_file: int,
                 tree: balanced.Tree | None = None) -> StoredLayout:
        return cls(config_key=plan.layout.config_key, columns=plan.columns,
                   column_types=plan.column_types, curve_method=plan.curve_method,
                   boundary_count=plan.boundary_count, boundaries=tuple(boundaries),
                   partition_by=plan.partition_by, rows=rows, files=files,
                   rows_per_file=max(1, rows_per_file),
                   tree=None if tree is None else balanced.to_json(tree),
                   weights=() if len(set(plan.weights)) <= 1 else plan.weights)

    def partition_tree(self) -> balanced.Tree | None:
        """The balanced layout's partition, to key rows as the build did."""
        if self.tree is None:
            return None
        return balanced.from_json(self.tree, ["uint64"] * len(self.columns))

    def key_function(self, input_types: Sequence[str]) -> KeyFunction:
        """The key function of this layout's build, over key inputs of ``input_types``:
        the stored boundaries, tree and weights, so new rows key as the table's did."""
        specs = [ColumnSpec(c, t, b) for c, t, b in
                 zip(self.columns, input_types, self.boundaries, strict=True)]
        return LAYOUTS[self.config_key].key_function(
            specs, self.curve_method, self.boundary_count, self.partition_tree(), self.weights)

    def as_config(self) -> dict[str, Any]:
        """The model config of this layout (to rebuild the table from itself)."""
        weights = dict(zip(self.columns, self.weights, strict=True)) if self.weights else None
        return {self.config_key: list(self.columns), "curve_method": self.curve_method,
                "boundary_count": self.boundary_count, "partition_by": list(self.partition_by),
                "cluster_weights": weights}

    def describe(self) -> str:
        return (f"{self.config_key}=[{', '.join(self.columns)}], curve_method="
                f"{self.curve_method}, boundary_count={self.boundary_count}")

    def drift(self, plan: ClusteringPlan) -> str | None:
        """How ``plan`` keys rows differently from this layout, or None if it does not."""
        def lowered(names: Sequence[str]) -> list[str]:
            return [n.lower() for n in names]

        wanted = (f"{plan.layout.config_key}=[{', '.join(plan.columns)}], curve_method="
                  f"{plan.curve_method}, boundary_count={plan.boundary_count}")
        if (plan.layout.config_key != self.config_key
                or lowered(plan.columns) != lowered(self.columns)
                or plan.curve_method != self.curve_method
                or plan.boundary_count != self.boundary_count):
            return f"the table was clustered with {self.describe()}; the model asks for {wanted}"
        if lowered(plan.partition_by) != lowered(self.partition_by):
            return (f"the table is partitioned by [{', '.join(self.partition_by)}]; the model "
                    f"asks for partition_by=[{', '.join(plan.partition_by)}]")
        for column, stored, now in zip(self.columns, self.column_types, plan.column_types,
                                       strict=True):
            if _rank_family(stored) != _rank_family(now):
                return (f"column '{column}' was {stored} when the table was clustered and "
                        f"the model now returns {now}")
        return None

    def to_properties(self) -> dict[str, str]:
        """Table properties holding this layout: a summary, and the layout encoded in
        parts (compressed JSON in hex: nothing to escape in SQL, and no run of letters
        that Spark's redaction of secrets (``spark.sql.redaction.string.regex``: "token",
        "secret", ...) would mask in SHOW TBLPROPERTIES, as base64 sometimes spells)."""
        document = {
            "version": FORMAT_VERSION, "config_key": self.config_key,
            "columns": list(self.columns), "column_types": list(self.column_types),
            "curve_method": self.curve_method, "boundary_count": self.boundary_count,
            "boundaries": [None if b is None else _encode_array(b) for b in self.boundaries],
            "partition_by": list(self.partition_by), "rows": self.rows, "files": self.files,
            "rows_per_file": self.rows_per_file,
            **({} if self.tree is None else {"tree": self.tree}),
            **({"weights": list(self.weights)} if self.weights else {}),
        }
        packed = zlib.compress(json.dumps(document).encode()).hex()
        parts = [packed[i:i + PART_CHARS] for i in range(0, len(packed), PART_CHARS)]
        properties = {SUMMARY_KEY: self.describe(), PARTS_KEY: str(len(parts))}
        properties.update({f"{PREFIX}.{i}": part for i, part in enumerate(parts)})
        return properties

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> StoredLayout | None:
        """The layout in a table's properties; None when the table has none."""
        if PARTS_KEY not in properties:
            return None
        try:
            count = int(properties[PARTS_KEY])
            packed = "".join(properties[f"{PREFIX}.{i}"] for i in range(count))
            if REDACTED in packed:
                raise StoredLayoutError("Spark redacted it (spark.sql.redaction.string.regex "
                                        "matches it)")
            document = json.loads(zlib.decompress(bytes.fromhex(packed)))
            if document["version"] != FORMAT_VERSION:
                raise StoredLayoutError(f"format version {document['version']}")
            return cls(
                config_key=document["config_key"], columns=tuple(document["columns"]),
                column_types=tuple(document["column_types"]),
                curve_method=document["curve_method"],
                boundary_count=int(document["boundary_count"]),
                boundaries=tuple(None if b is None else _decode_array(b)
                                 for b in document["boundaries"]),
                partition_by=tuple(document["partition_by"]), rows=int(document["rows"]),
                files=int(document["files"]), rows_per_file=int(document["rows_per_file"]),
                tree=document.get("tree"),
                weights=tuple(float(w) for w in document.get("weights", ())),
            )
        except (KeyError, ValueError, TypeError, zlib.error) as error:
            raise StoredLayoutError(f"unreadable stored layout ({error})") from error


def _rank_family(spark_type: str) -> str:
    """Types whose values rank against the same boundaries."""
    family = normalize_type(spark_type)
    if family in ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal",
                  "boolean"):
        return "number"
    return family


def _encode_array(values: np.ndarray) -> dict[str, Any]:
    kind = values.dtype.kind
    if kind == "M":
        unit = np.datetime_data(values.dtype)[0]
        return {"kind": f"M8[{unit}]", "values": values.astype(np.int64).tolist()}
    if kind == "U":
        return {"kind": "U", "values": values.tolist()}
    if kind in "iub":
        return {"kind": "i8", "values": values.astype(np.int64).tolist()}
    if kind == "f":
        # repr of a float round-trips exactly; JSON keeps +-Infinity.
        return {"kind": "f8", "values": values.astype(np.float64).tolist()}
    raise StoredLayoutError(f"boundaries of dtype {values.dtype} cannot be stored")


def _decode_array(encoded: Mapping[str, Any]) -> np.ndarray:
    kind, values = encoded["kind"], encoded["values"]
    if kind.startswith("M8"):
        return np.array(values, dtype=np.int64).view(kind)
    if kind == "U":
        width = max([len(v) for v in values] + [1])
        return np.array(values, dtype=f"U{width}")
    return np.array(values, dtype=kind)


def write_id(path: str) -> str | None:
    """The id of the write job that wrote a data file, from its name (None: unknown).

    >>> write_id("file:/t/part-00003-6b436be3-f21c-434e-a27e-728232976d02.c000.snappy.parquet")
    '6b436be3-f21c-434e-a27e-728232976d02'
    >>> write_id("file:/w/t/data/00000-7-1e0ddf51-6256-4b4d-bb9a-ffdd0fba134a-0-00001.parquet")
    '1e0ddf51-6256-4b4d-bb9a-ffdd0fba134a'
    >>> write_id("file:/w/t/x.parquet") is None
    True
    """
    found = _WRITE_ID.search(path.rsplit("/", 1)[-1])
    return found.group(1) if found else None


def clustered_writes(properties: Mapping[str, str]) -> set[str]:
    """The ids of the writes the table's properties name as clustered."""
    return set(filter(None, properties.get(CLUSTERED_WRITES_KEY, "").split(",")))


def clustered_writes_property(paths: Sequence[str]) -> dict[str, str]:
    """The table property naming the writes of a full build's files."""
    ids = sorted({w for w in map(write_id, paths) if w is not None})
    return {CLUSTERED_WRITES_KEY: ",".join(ids)}


def clustered_writes_after(properties: Mapping[str, str], present: Sequence[str],
                           written: Sequence[str]) -> dict[str, str]:
    """The clustered writes once the files ``written`` count as clustered: those already
    clustered that still have files among ``present``, and the writes of ``written``
    (a re-clustering of some table partitions keeps the others' clustered files)."""
    kept = clustered_writes(properties) & {write_id(p) for p in present}
    added = {w for w in map(write_id, written) if w is not None}
    return {CLUSTERED_WRITES_KEY: ",".join(sorted(kept | added))}


def pending_rows(files: Sequence[tuple[str, int]], properties: Mapping[str, str]) -> int:
    """Rows in files (path, rows) not written by the table's clustered writes."""
    clustered = clustered_writes(properties)
    return sum(rows for path, rows in files if write_id(path) not in clustered)
