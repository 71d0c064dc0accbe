"""Table formats an embedded session can write besides plain Parquet: Delta Lake and
Apache Iceberg, each a set of jars and the Spark settings that enable it.

A profile with ``method: session`` names one with ``table_format: delta`` (or
``iceberg``); its settings go under the profile's ``server_side_parameters``, which win.
Delta and Iceberg both want Spark's built-in catalog (``spark_catalog``), and dbt-spark
names relations without a catalog, so a session holds one of the two.

The jars come from the folder ``make setup`` fetches them into with Maven (no download
when a session starts); without it, Spark's own package mechanism
(``spark.jars.packages``) fetches them at the first start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from dbt.include import zspark as include

#: Where ``make setup`` puts the formats' jars (:func:`maven_packages`).
JARS_DIR = Path(include.PACKAGE_PATH) / "jars"
EXTENSIONS = "spark.sql.extensions"
CATALOG = "spark.sql.catalog.spark_catalog"
JARS, PACKAGES = "spark.jars", "spark.jars.packages"
#: The tasks Delta rebuilds a table's state from its log with.
DELTA_SNAPSHOT_PARTITIONS = "spark.databricks.delta.snapshotPartitions"


@dataclass(frozen=True)
class TableFormat:
    """A table format: the ``file_format`` models name it by, its jars (Maven
    coordinates for the Spark line pyspark is pinned to) and its session settings."""

    name: str
    packages: tuple[str, ...]
    settings: Mapping[str, str]

    @property
    def extension(self) -> str:
        """The class whose presence in ``spark.sql.extensions`` shows a session enables it."""
        return self.settings[EXTENSIONS]

    def jar_files(self, folder: Path = JARS_DIR) -> list[Path]:
        """The fetched jar of every package, or an empty list when any is missing."""
        jars = [folder / f"{artifact}-{version}.jar"
                for _, artifact, version in (p.split(":") for p in self.packages)]
        return jars if all(jar.is_file() for jar in jars) else []

    def session_settings(self, folder: Path = JARS_DIR) -> dict[str, str]:
        """What an embedded session needs to write this format: its fetched jars (else
        the packages for Spark to fetch) and its settings."""
        jars = self.jar_files(folder)
        where = ({JARS: ",".join(str(jar) for jar in jars)} if jars
                 else {PACKAGES: ",".join(self.packages)})
        return {**where, **self.settings}


DELTA = TableFormat(
    name="delta",
    packages=("io.delta:delta-spark_4.1_2.13:4.4.0", "io.delta:delta-storage:4.4.0"),
    settings={EXTENSIONS: "io.delta.sql.DeltaSparkSessionExtension",
              CATALOG: "org.apache.spark.sql.delta.catalog.DeltaCatalog"},
)

#: The embedded Hive metastore, as Iceberg's Hive catalog uses it: Spark's Derby metastore
#: lacks the BoneCP pool Hive asks for by default (a ClassNotFoundException at the first
#: Iceberg table), Iceberg's commit lock waits forever on it, and its schema is created
#: rather than verified.
ICEBERG_ON_EMBEDDED_METASTORE = {
    "spark.hadoop.datanucleus.connectionPoolingType": "HikariCP",
    "spark.hadoop.iceberg.engine.hive.lock-enabled": "false",
    "spark.hadoop.hive.metastore.schema.verification": "false",
    "spark.hadoop.datanucleus.schema.autoCreateAll": "true",
}
ICEBERG = TableFormat(
    name="iceberg",
    packages=("org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0",),
    settings={
        EXTENSIONS: "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        CATALOG: "org.apache.iceberg.spark.SparkSessionCatalog",
        f"{CATALOG}.type": "hive",
        **ICEBERG_ON_EMBEDDED_METASTORE,
    },
)

TABLE_FORMATS: dict[str, TableFormat] = {f.name: f for f in (DELTA, ICEBERG)}


#: Formats that replace a table in a commit of their own (dbt-spark's ``create or replace``
#: or its own drop and create), whose files a rename of the table would leave behind.
COMMITTING_FORMATS = ("delta", "iceberg", "hudi")


def commits_on_its_own(file_format: str) -> bool:
    """Whether a table of ``file_format`` keeps its state in a log of its own.

    >>> commits_on_its_own("delta"), commits_on_its_own("parquet")
    (True, False)
    """
    return file_format.lower() in COMMITTING_FORMATS


def names_an_iceberg_table(information: str | None) -> bool:
    r"""Whether SHOW TABLE EXTENDED's (or DESCRIBE's) information is an Iceberg table's: under
    Iceberg's SparkSessionCatalog its provider reads 'hive', its properties tell.

    >>> names_an_iceberg_table("Provider: hive\nTable Properties: [owner=me, table_type=ICEBERG]")
    True
    >>> names_an_iceberg_table("Provider: hive\nTable Properties: [owner=me]")
    False
    """
    text = information or ""
    return "Provider: iceberg" in text or "table_type=ICEBERG" in text


class TableFormatError(ValueError):
    pass


def table_format(name: str) -> TableFormat:
    """The format a profile's ``table_format`` names."""
    found = TABLE_FORMATS.get(str(name).lower())
    if found is None:
        raise TableFormatError(
            f"profile: 'table_format' is {name!r}. Allowed: "
            + " or ".join(repr(n) for n in TABLE_FORMATS) + " (or leave it out for Parquet).")
    return found


def with_table_format(settings: Mapping[str, str], name: str | None) -> dict[str, str]:
    """A session's settings with those of the format ``name`` filled in (the profile's
    own win); the format's jars join any the profile lists."""
    if name is None:
        return dict(settings)
    wanted = table_format(name).session_settings()
    merged = {**wanted, **settings}
    for key in (JARS, PACKAGES):
        if key in wanted and key in settings:
            merged[key] = ",".join(filter(None, [settings[key], wanted[key]]))
    return merged


def enabled_formats(extensions: str | None) -> list[str]:
    """The formats a session's ``spark.sql.extensions`` enables (Parquet always is)."""
    listed = {e.strip() for e in (extensions or "").split(",")}
    return [f.name for f in TABLE_FORMATS.values() if f.extension in listed]


def unwritable_format_error(model: str, file_format: str, extensions: str | None) -> str | None:
    """Why a session whose ``spark.sql.extensions`` are ``extensions`` cannot write a model
    of ``file_format``, or None when it can (or the format is not one zspark sets up)."""
    wanted = TABLE_FORMATS.get(file_format.lower())
    if wanted is None or wanted.name in enabled_formats(extensions):
        return None
    return (f"Model '{model}': config 'file_format' is '{file_format}', which this session "
            f"cannot write (its spark.sql.extensions: {extensions or 'none'}). Add "
            f"`table_format: {wanted.name}` to the profile's target (method: session), or "
            f"set the format's jars, spark.sql.extensions and spark_catalog in "
            f"server_side_parameters.")


def maven_packages() -> list[str]:
    """Every format's Maven coordinates (``make setup`` fetches them)."""
    return [package for f in TABLE_FORMATS.values() for package in f.packages]


def with_embedded_metastore(settings: Mapping[str, str]) -> dict[str, str]:
    """An embedded session's settings, with what Iceberg's Hive catalog needs of Spark's
    embedded Derby metastore (:data:`ICEBERG_ON_EMBEDDED_METASTORE`) filled in when a
    catalog is Iceberg's over Hive and the metastore is that Derby one (no metastore
    server, no other database): Iceberg's own documented settings then work as written.
    The profile's own win.

    >>> iceberg = {CATALOG: "org.apache.iceberg.spark.SparkSessionCatalog",
    ...            f"{CATALOG}.type": "hive"}
    >>> with_embedded_metastore(iceberg)["spark.hadoop.datanucleus.connectionPoolingType"]
    'HikariCP'
    >>> "spark.hadoop.datanucleus.connectionPoolingType" in with_embedded_metastore(
    ...     {**iceberg, "spark.hadoop.hive.metastore.uris": "thrift://h:9083"})
    False
    """
    catalogs = {key for key, value in settings.items()
                if key.startswith("spark.sql.catalog.") and key.count(".") == 3
                and str(value).startswith("org.apache.iceberg.spark.")}
    over_hive = any(settings.get(f"{catalog}.type", "hive") == "hive"
                    and f"{catalog}.uri" not in settings for catalog in catalogs)
    embedded = not settings.get("spark.hadoop.hive.metastore.uris") and str(settings.get(
        "spark.hadoop.javax.jdo.option.ConnectionURL", "jdbc:derby:")).startswith("jdbc:derby:")
    if not (over_hive and embedded):
        return dict(settings)
    return {**ICEBERG_ON_EMBEDDED_METASTORE, **settings}

