"""Where an embedded session's own log goes: a file beside dbt's logs, not the console.

Spark's default configuration prints its warnings (and Hive's, Delta's, a failed
metastore call's stack trace) among dbt's lines. An embedded session's driver JVM is
given a log4j2 configuration of zspark's instead: every Spark line at WARN and above
goes to ``spark.log`` in dbt's log folder, and the console shows Spark's lines only
from the profile's ``spark_log_level`` up (none by default).
"""

from __future__ import annotations

from pathlib import Path

#: The profile's ``spark_log_level`` values: Spark's lines shown on the console from
#: this level up; ``off`` shows none.
CONSOLE_LEVELS = ("off", "error", "warn", "info", "debug")
DEFAULT_CONSOLE_LEVEL = "off"
CONFIG_FILE = "log4j2.properties"
LOG_FILE = "spark.log"
#: The JVM option naming a log4j2 configuration file.
CONFIG_OPTION = "-Dlog4j2.configurationFile="


def level_error(level: str) -> str | None:
    """Why ``level`` is not a ``spark_log_level``, or None.

    >>> level_error("warn") is None
    True
    """
    if level.lower() in CONSOLE_LEVELS:
        return None
    return (f"profile: 'spark_log_level' is '{level}'. Allowed: "
            f"{', '.join(repr(name) for name in CONSOLE_LEVELS)} (the Spark log lines "
            f"shown on the console, from that level up; all of them go to {LOG_FILE} "
            f"beside dbt's logs)")


def with_log_option(java_options: str, config: Path) -> str:
    """``java_options`` naming ``config`` as the JVM's log configuration, unless they
    name one already (the profile's own wins).

    >>> with_log_option("-Xss4m", Path("/s/log4j2.properties"))
    '-Xss4m -Dlog4j2.configurationFile=/s/log4j2.properties'
    """
    if CONFIG_OPTION in java_options:
        return java_options
    return f"{java_options} {CONFIG_OPTION}{config}".strip()


def log4j2_properties(log_file: Path, console_level: str) -> str:
    """The configuration: Spark's lines into ``log_file`` (WARN and up, or the console's
    level when lower), on the console from ``console_level`` up."""
    console = console_level.lower()
    root = console if console in ("info", "debug") else "warn"
    return "\n".join([
        "# Written by dbt-zspark at each session start (reach/session/spark_log.py).",
        "status = error",
        f"rootLogger.level = {root}",
        "rootLogger.appenderRef.file.ref = file",
        "rootLogger.appenderRef.console.ref = console",
        "appender.file.type = File",
        "appender.file.name = file",
        f"appender.file.fileName = {log_file}",
        "appender.file.append = true",
        "appender.file.layout.type = PatternLayout",
        "appender.file.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex",
        "appender.console.type = Console",
        "appender.console.name = console",
        "appender.console.target = SYSTEM_ERR",
        "appender.console.filter.threshold.type = ThresholdFilter",
        f"appender.console.filter.threshold.level = {console}",
        "appender.console.layout.type = PatternLayout",
        "appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex",
        ""])


def jvm_output(log_file: Path, console_level: str) -> Path | None:
    """Where the driver JVM's own output goes (Ivy's resolution of
    ``spark.jars.packages``, the JVM's warnings): ``log_file`` while Spark's lines stay
    off the console; else the console, with the lines the level shows.

    >>> jvm_output(Path("/l/spark.log"), "off")
    PosixPath('/l/spark.log')
    >>> jvm_output(Path("/l/spark.log"), "warn") is None
    True
    """
    return log_file if console_level.lower() == DEFAULT_CONSOLE_LEVEL else None


def dbt_log_folder(fallback: Path) -> Path:
    """dbt's log folder for this invocation (``--log-path``), else ``fallback``."""
    try:
        from dbt.flags import get_flags

        path = getattr(get_flags(), "LOG_PATH", None)
    except ImportError:  # dbt's adapters without dbt-core's CLI
        path = None
    return Path(path).resolve() if path else fallback


def write_config(config: Path, console_level: str) -> Path:
    """Write the configuration ``config`` names before the session's JVM starts; the
    log file it sends Spark's lines to."""
    log_file = dbt_log_folder(config.parent) / LOG_FILE
    log_file.parent.mkdir(parents=True, exist_ok=True)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(log4j2_properties(log_file, console_level))
    return log_file
