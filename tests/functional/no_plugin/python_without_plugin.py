"""A Python for Spark's workers that cannot import dbt: an executor without the plugin.

Spark starts it as ``<python> -m pyspark.daemon``; every ``dbt`` import fails as it would
on a cluster machine where only pyspark, numpy, pandas and pyarrow are installed.
"""

import importlib.abc
import runpy
import sys


class NoDbt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        if name == "dbt" or name.startswith("dbt."):
            raise ModuleNotFoundError(f"No module named '{name}'", name=name)
        return None


sys.meta_path.insert(0, NoDbt())
if sys.argv[1:2] != ["-m"]:
    raise SystemExit(f"expected -m <module>, got {sys.argv[1:]}")
module = sys.argv[2]
sys.argv = [module, *sys.argv[3:]]
runpy.run_module(module, run_name="__main__", alter_sys=True)
