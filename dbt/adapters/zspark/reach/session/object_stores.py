"""Object stores as Spark reaches them: Hadoop's own connectors, configured in the
session with their standard settings. zspark adds no client of its own; every file it
reads or writes goes through the session's file systems (``hadoop_files.py``,
``folders.py``), so a store the session reaches is a store zspark reaches.

S3 is reached through Hadoop's ``s3a`` connector: the ``hadoop-aws`` jar of the Hadoop
pyspark ships (3.4.2 for pyspark 4.1) and the AWS SDK bundle that release names. ``make
setup`` fetches both beside the formats' jars; a user puts them in ``spark.jars`` (or
``spark.jars.packages``) with the store's settings.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dbt.adapters.zspark.formats.settings import JARS_DIR

#: Hadoop's S3 connector for pyspark 4.1's Hadoop, and the SDK its POM names
#: (``aws-java-sdk-v2.version`` of ``hadoop-project`` 3.4.2).
S3A_PACKAGES = ("org.apache.hadoop:hadoop-aws:3.4.2", "software.amazon.awssdk:bundle:2.29.52",
                # Spark's binding to the S3A committers (4.1.4's is not published yet).
                "org.apache.spark:spark-hadoop-cloud_2.13:4.1.1")


def s3a_jars(folder: Path = JARS_DIR) -> list[Path]:
    """The fetched jars of :data:`S3A_PACKAGES`, or an empty list when any is missing."""
    jars = [folder / f"{artifact}-{version}.jar"
            for _, artifact, version in (p.split(":") for p in S3A_PACKAGES)]
    return jars if all(jar.is_file() for jar in jars) else []


def s3a_settings(endpoint: str, access_key: str, secret_key: str,
                 region: str = "us-east-1") -> dict[str, str]:
    """The standard s3a settings of a session reaching an S3-compatible ``endpoint``
    (``http://host:port``) by path-style requests; nothing of zspark's.

    >>> s3a_settings("http://127.0.0.1:9000", "k", "s")["spark.hadoop.fs.s3a.endpoint"]
    'http://127.0.0.1:9000'
    """
    return {"spark.hadoop.fs.s3a.endpoint": endpoint,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": str(endpoint.startswith("https"))
            .lower(),
            "spark.hadoop.fs.s3a.endpoint.region": region,
            "spark.hadoop.fs.s3a.access.key": access_key,
            "spark.hadoop.fs.s3a.secret.key": secret_key}


def with_jars(settings: Mapping[str, str], jars: list[Path]) -> dict[str, str]:
    """``settings`` whose ``spark.jars`` also lists ``jars``."""
    listed = [settings.get("spark.jars", ""), *(str(jar) for jar in jars)]
    return {**settings, "spark.jars": ",".join(filter(None, listed))}


#: Hadoop's connector for each object store's scheme, as a user adds it to a session.
CONNECTORS = {
    "s3a": "hadoop-aws 3.4.2 and the AWS SDK bundle 2.29.52 (`make setup` fetches both into "
           "dbt/include/zspark/jars/): their jars in spark.jars, or "
           "org.apache.hadoop:hadoop-aws:3.4.2 in spark.jars.packages",
    "gs": "Google's gcs-connector (its shaded jar in spark.jars)",
    "abfss": "hadoop-azure of Hadoop 3.4.2 and its Azure SDK (in spark.jars)",
    "abfs": "hadoop-azure of Hadoop 3.4.2 and its Azure SDK (in spark.jars)",
}
_MISSING = re.compile(r'No FileSystem for scheme "?(\w+)"?|ClassNotFoundException: '
                      r"[^\n]*org\.apache\.hadoop\.fs\.(s3a)\.S3AFileSystem")


def missing_connector_hint(message: str) -> str | None:
    """What to add to a session whose error ``message`` says it has no file system for a
    location's scheme, or None for any other error.

    >>> print(missing_connector_hint('UnsupportedFileSystemException: No FileSystem for '
    ...                              'scheme "s3a"'))  # doctest: +ELLIPSIS
    zspark: this session has no file system for s3a:// locations ... hadoop-aws 3.4.2 ...
    >>> missing_connector_hint("Table or view not found") is None
    True
    """
    found = _MISSING.search(message)
    if found is None:
        return None
    scheme = found.group(1) or found.group(2)
    connector = CONNECTORS.get(scheme, f"Hadoop's connector for {scheme}:// (in spark.jars)")
    return (f"zspark: this session has no file system for {scheme}:// locations (the "
            f"warehouse or a table's). Add Hadoop's connector to the profile's "
            f"server_side_parameters: {connector}.")


def unreachable_warehouse_error(spark: Any) -> str | None:
    """Why the session ``spark`` cannot reach its warehouse's file system (its connector's
    classes are missing), or None when it can. Asked before the first statement: Spark's
    own failure comes later, after its metastore client's retries, and names no jar."""
    context = spark.sparkContext
    warehouse = context.getConf().get("spark.sql.warehouse.dir", "") or ""
    scheme = urllib.parse.urlsplit(warehouse).scheme
    if scheme in ("", "file"):
        return None
    try:
        context._jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(
            scheme, context._jsc.hadoopConfiguration())
    except Exception:  # py4j: the JVM's UnsupportedFileSystemException or a missing class
        return missing_connector_hint(f'No FileSystem for scheme "{scheme}"')
    return None
