"""Whether the JVMs computing a keyed write's rows compile its generated code, and the
Spark setting that keeps it compiled where they would not.

A keyed SELECT (the ranks' binary searches and the curve) is one stage of whole-stage
generated code whose main method passes 8000 bytes of bytecode for a three-column Hilbert
key (9,462). HotSpot leaves a method that large to its interpreter unless the JVM runs
with ``-XX:-DontCompileHugeMethods``, which zspark's embedded session does. A server's
JVMs may not: there Spark is told to give up whole-stage code for a method past HotSpot's
limit (``spark.sql.codegen.hugeMethodLimit``, as Spark's own documentation suggests on
HotSpot), and the plan's expressions run as small compiled methods instead. A 2 M-row
keyed write, 2 cores, a JVM without the option: 22-25 s interpreted, 7.8 s so; 4.2 s in a
JVM with the option.

>>> keyed_code_settings("local[2]", "-Xmx2g", "<undefined>", "<undefined>")
{'spark.sql.codegen.hugeMethodLimit': '8000'}
>>> keyed_code_settings("local[2]", "-XX:-DontCompileHugeMethods", "", "<undefined>")
{}
>>> keyed_code_settings("spark://h:7077", "-XX:-DontCompileHugeMethods", "", "<undefined>")
{'spark.sql.codegen.hugeMethodLimit': '8000'}
>>> keyed_code_settings("spark://h:7077", "", "-XX:-DontCompileHugeMethods", "<undefined>")
{}
>>> keyed_code_settings("local[2]", "-XX:-DontCompileHugeMethods -XX:+DontCompileHugeMethods",
...                     "", "65535")  # the last option wins
{'spark.sql.codegen.hugeMethodLimit': '8000'}
>>> keyed_code_settings("local-cluster[2,1,1024]", "-XX:-DontCompileHugeMethods", "", "65535")
{'spark.sql.codegen.hugeMethodLimit': '8000'}
>>> keyed_code_settings("local[2]", "", "", "20000")  # the server's own choice stands
{}
"""

from __future__ import annotations

#: The JVM option under which HotSpot compiles methods of any size.
COMPILE_HUGE_METHODS = "-XX:-DontCompileHugeMethods"
#: Spark's setting: whole-stage code whose methods pass it is not used for that stage.
HUGE_METHOD_LIMIT = "spark.sql.codegen.hugeMethodLimit"
#: HotSpot's ``HugeMethodLimit``: bytes of bytecode past which it compiles no method.
HOTSPOT_HUGE_METHOD_BYTES = 8000
#: Spark's default for it (every method a JVM can load).
SPARK_HUGE_METHOD_LIMIT = "65535"
#: The Spark settings a keyed write's JVMs are read from.
JVM_SETTINGS = ("spark.master", "spark.driver.extraJavaOptions",
                "spark.executor.extraJavaOptions", HUGE_METHOD_LIMIT)


def keyed_code_settings(master: str, driver_options: str, executor_options: str,
                        huge_method_limit: str) -> dict[str, str]:
    """The session settings a keyed write's statement runs with, from the values of
    :data:`JVM_SETTINGS` (``<undefined>`` or empty where unset). The rows are keyed by the
    executors: in a ``local`` master the driver's JVM, else the executors' own."""
    in_driver = master == "local" or master.startswith("local[")  # not local-cluster
    options = driver_options if in_driver else executor_options
    if compiles_huge_methods(options):
        return {}
    limit = huge_method_limit.strip()
    if limit.isdigit() and limit != SPARK_HUGE_METHOD_LIMIT:  # the server's own choice
        return {}
    return {HUGE_METHOD_LIMIT: str(HOTSPOT_HUGE_METHOD_BYTES)}


def compiles_huge_methods(java_options: str) -> bool:
    """Whether a JVM of these options compiles methods of any size (its last word on
    ``DontCompileHugeMethods`` is the one HotSpot keeps)."""
    said = [option for option in java_options.split()
            if option.lstrip("-").removeprefix("XX:").lstrip("+-") == "DontCompileHugeMethods"]
    return bool(said) and said[-1] == COMPILE_HUGE_METHODS
