"""The table family a model is written in, chosen once per model and run (a service).

Two families of clustered tables, told apart by their format (``formats/``):

- *versions* (Parquet): a full build or a re-clustering writes the table's next version
  and swaps it in; the statistics are zspark's ``__zindex``;
- *commits* (Delta, Iceberg): every write is a commit of the format's own log, which
  keeps the statistics.

A model zspark does not cluster is dbt-spark's, except a Parquet table, which zspark
builds as a version too (a rebuild never loses the previous table), and a Python model of
a format. The materialization asks once which of its paths to take (``ModelFlow.path``)
and runs that one; the paths name no format, and no service asks for one again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbt.adapters.zspark.formats import CLUSTERED_FORMATS, format_table
from dbt.adapters.zspark.services.builds import TableBuilds
from dbt.adapters.zspark.services.format_increments import FormatIncrements
from dbt.adapters.zspark.services.increments import ParquetIncrements
from dbt.adapters.zspark.services.tables import TableFiles

#: dbt-spark's flags of a relation's format (``is_delta``, ``is_iceberg``).
RELATION_FLAGS = tuple(flag for flag in (format_table(f).relation_flag for f in CLUSTERED_FORMATS)
                       if flag)


@dataclass(frozen=True)
class ModelFlow:
    """How this run writes a model, chosen before anything is written."""

    #: The materialization's path: ``versions`` or ``commits`` (the family of a table
    #: zspark writes), ``spark`` (dbt-spark's own) or ``python`` (an unclustered Python
    #: model, written through the session).
    path: str
    file_format: str
    clustered: bool
    #: dbt-spark's flag of a table of this format (``is_delta``; '' for Parquet): a
    #: relation cached by this run's earlier build lacks it, and dbt-spark's statements
    #: read it.
    relation_flag: str

    def relation_flags(self) -> dict[str, bool]:
        """The format flags of a relation of this format, for ``incorporate``."""
        return {flag: flag == self.relation_flag for flag in RELATION_FLAGS}

    def same_format(self, relation: Any) -> bool:
        """Whether ``relation`` is a table of this format that one commit of the format
        replaces (a table of another format, or a view, is dropped first)."""
        return bool(self.relation_flag) and bool(getattr(relation, self.relation_flag, False))


class TableFamilies:
    """The family of a model (its flow) and of an existing table (its re-clustering)."""

    def __init__(self, builds: TableBuilds, tables: TableFiles, increments: ParquetIncrements,
                 format_increments: FormatIncrements) -> None:
        self.builds = builds
        self.tables = tables
        self.increments = increments
        self.format_increments = format_increments

    def flow(self, model: str, config: dict[str, Any], file_format: str, language: str,
             materialized: str) -> ModelFlow:
        """The path a ``materialized`` ('table' or 'incremental') model of ``language``
        takes, after its configs and ``file_format`` were checked (refused with the
        model's name before anything is written)."""
        clustered = self.builds.check_config(
            model, config, materialized if language == "sql" else "python")
        commits = self.builds.check_file_format(model, file_format, clustered, materialized)
        if clustered:
            path = "commits" if commits else "versions"
        elif language == "python" and (commits or materialized == "incremental"):
            path = "python"
        elif commits or materialized == "incremental":
            path = "spark"
        else:
            path = "versions"  # an unclustered Parquet table, swapped in as a version
        flag = (format_table(file_format).relation_flag
                if file_format.lower() in CLUSTERED_FORMATS else "")
        return ModelFlow(path, file_format, clustered, flag)

    def recluster(self, relation: Any, full: bool) -> dict[str, Any]:
        """``zspark_recluster``: the pending runs merged (or, ``full``, the whole table
        re-clustered), in the family of the table as it is: a commit of its format, or
        its next version."""
        file_format, properties = self.tables.format_of(relation)
        if file_format is not None:
            return self.format_increments.recluster(relation.identifier, relation,
                                                    file_format, properties, full)
        return self.increments.recluster(relation.identifier, relation, full)
