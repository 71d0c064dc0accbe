"""When a keyed write's statement gets Spark's limit on whole-stage code
(``core/generated_code.py``)."""

from __future__ import annotations

import doctest

from dbt.adapters.zspark.connections import DRIVER_OPTIONS, session_defaults
from dbt.adapters.zspark.core import generated_code
from dbt.adapters.zspark.core.generated_code import keyed_code_settings


def test_the_examples_hold() -> None:
    assert doctest.testmod(generated_code).failed == 0


def test_the_embedded_sessions_jvms_compile_the_keys_without_a_limit(tmp_path: object) -> None:
    """zspark's own JVMs, in this process or a cluster's executors, get the option."""
    defaults = session_defaults(str(tmp_path))
    for master in ("local[2]", "spark://127.0.0.1:7077"):
        assert keyed_code_settings(master, defaults[DRIVER_OPTIONS],
                                   defaults["spark.executor.extraJavaOptions"], "65535") == {}
