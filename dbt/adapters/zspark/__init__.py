"""dbt-zspark: Spark tables clustered along a Z-order or Hilbert curve, with file skipping."""

from dbt.adapters.base import AdapterPlugin

from dbt.adapters.zspark.connections import ZSparkConnectionManager, ZSparkCredentials
from dbt.adapters.zspark.impl import ZSparkAdapter
from dbt.include import zspark

Plugin = AdapterPlugin(
    adapter=ZSparkAdapter,  # type: ignore[arg-type]
    credentials=ZSparkCredentials,
    include_path=zspark.PACKAGE_PATH,
    dependencies=["spark"],
)

__all__ = ["Plugin", "ZSparkAdapter", "ZSparkConnectionManager", "ZSparkCredentials"]
