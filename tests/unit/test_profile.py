"""A new user's profile: what `dbt init` asks for a zspark target, and what `dbt debug`
shows of it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from dbt.task.init import InitTask
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.connections import ZSparkCredentials
from dbt.adapters.zspark.reach.session import spark_log

TEMPLATE = Path(__file__).parents[2] / "dbt" / "include" / "zspark" / "profile_template.yml"


def _answered(answers: list[str]) -> dict[str, Any]:
    """The target `dbt init` writes from the template, given the user's ``answers``."""
    template = yaml.safe_load(TEMPLATE.read_text())
    task = InitTask.__new__(InitTask)  # the prompting needs no project or flags
    with CliRunner().isolation(input="".join(f"{a}\n" for a in answers)):
        return task.generate_target_from_input(template["prompts"], dict(template["fixed"]))


@pytest.mark.parametrize(("answers", "expected"), [
    (["1", "", "2", "analytics", "4"],
     {"type": "zspark", "method": "session", "session_dir": ".zspark",
      "table_format": "delta", "schema": "analytics", "threads": 4}),
    (["1", "/data/zs", "1", "analytics", ""],
     {"type": "zspark", "method": "session", "session_dir": "/data/zs",
      "schema": "analytics", "threads": 1}),
    (["2", "spark.internal", "", "analytics", "2"],
     {"type": "zspark", "method": "thrift", "host": "spark.internal", "port": 10000,
      "schema": "analytics", "threads": 2}),
    (["3", "sc://spark.internal:15002", "analytics", ""],
     {"type": "zspark", "method": "connect", "host": "sc://spark.internal:15002",
      "schema": "analytics", "threads": 1}),
])
def test_dbt_init_asks_how_to_reach_spark_and_writes_a_target_zspark_reads(
        answers: list[str], expected: dict[str, Any]) -> None:
    target = _answered(answers)
    assert target == expected
    credentials = ZSparkCredentials.from_dict(
        {k: v for k, v in target.items() if k not in ("type", "threads")})
    assert credentials.schema == "analytics"


def test_dbt_debug_shows_a_sessions_own_fields_not_a_host(tmp_path: Path) -> None:
    session = ZSparkCredentials.from_dict(
        {"method": "session", "schema": "analytics", "session_dir": str(tmp_path),
         "table_format": "iceberg"})
    shown = dict(session.connection_info())
    assert shown.keys() == {"method", "schema", "session_dir", "table_format",
                            "spark_log_level", "master", "warehouse"}
    assert shown["master"] == "local[*]"
    assert shown["warehouse"] == str(tmp_path.resolve() / "warehouse")
    thrift = ZSparkCredentials.from_dict(
        {"method": "thrift", "schema": "analytics", "host": "spark.internal", "port": 10000})
    assert dict(thrift.connection_info())["host"] == "spark.internal"
    assert "session_dir" not in dict(thrift.connection_info())
    connect = ZSparkCredentials.from_dict(
        {"method": "connect", "schema": "analytics", "host": "spark.internal",
         "token": "secret", "connect_headers": {"x-team": "analytics"}})
    shown = dict(connect.connection_info())
    assert shown["server"] == "sc://spark.internal:15002"  # Connect's port, not 443
    assert "secret" not in str(shown)


def test_a_connect_target_sends_its_token_and_headers_and_refuses_what_is_not_its_own(
        ) -> None:
    from dbt.adapters.zspark.reach.server import connect

    assert connect.connect_url("sc://h:1", 443) == "sc://h:1"
    assert connect.connect_url("h", 7, token="t/0", headers={"x-a": "b c"},
                               use_ssl=True) == "sc://h:7/;token=t%2F0;use_ssl=true;x-a=b%20c"
    with pytest.raises(DbtRuntimeError, match="connect_headers"):
        connect.connect_url("sc://h:1/;token=x", None)
    with pytest.raises(DbtRuntimeError, match="allowed: thrift, http, odbc, session, connect"):
        ZSparkCredentials.from_dict({"method": "conect", "schema": "a", "host": "h"})
    with pytest.raises(DbtRuntimeError, match="'connect_headers' are for method: connect"):
        ZSparkCredentials.from_dict({"method": "thrift", "schema": "a", "host": "h",
                                     "connect_headers": {"x": "y"}})


def test_a_connect_server_that_does_not_answer_fails_in_seconds_naming_it() -> None:
    """No server on the port: the first statement's retries stop at the profile's
    connect_timeout, and the error names the server and gRPC's reason."""
    from dbt.adapters.zspark.reach.server import connect

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(DbtRuntimeError, match=rf"sc://127.0.0.1:{port} did not answer in "
                                              r"1 s .*Connection refused"):
        connect.open_handle(f"sc://127.0.0.1:{port}", 1)


def test_a_sessions_spark_log_goes_to_a_file_and_its_console_level_is_checked(
        tmp_path: Path) -> None:
    """The driver JVM reads zspark's log configuration (Spark's lines into spark.log
    beside dbt's logs, none on the console by default) unless the profile names its
    own; a level that is not one is refused naming the setting and what is allowed."""
    base = {"method": "session", "schema": "analytics", "session_dir": str(tmp_path)}
    session = ZSparkCredentials.from_dict(base)
    options = session.server_side_parameters["spark.driver.extraJavaOptions"]
    assert f"{spark_log.CONFIG_OPTION}{tmp_path.resolve() / 'log4j2.properties'}" in options
    assert "-XX:+UseParallelGC" in options
    log_file = spark_log.write_config(session.log_config, session.spark_log_level)
    config = session.log_config.read_text()
    assert f"appender.file.fileName = {log_file}" in config
    assert "appender.console.filter.threshold.level = off" in config
    louder = spark_log.log4j2_properties(log_file, "info")
    assert "rootLogger.level = info" in louder
    assert "appender.console.filter.threshold.level = info" in louder

    own = ZSparkCredentials.from_dict({**base, "server_side_parameters": {
        "spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=/etc/spark/log4j2.xml"}})
    # The profile's options kept as they are, zspark's class archive after them.
    assert own.server_side_parameters["spark.driver.extraJavaOptions"].startswith(
        "-Dlog4j2.configurationFile=/etc/spark/log4j2.xml -XX:")
    with pytest.raises(DbtRuntimeError, match=r"'spark_log_level' is 'loud'\. Allowed: 'off'"):
        ZSparkCredentials.from_dict({**base, "spark_log_level": "loud"})


def test_a_session_whose_jvm_cannot_start_says_why_and_where_its_output_is(
        tmp_path: Path) -> None:
    """The driver JVM's own output goes to the log file, not the console; when the JVM
    exits before the session starts, the error quotes its last lines and names the
    file. A process of its own: this one's JVM runs already."""
    log_file = tmp_path / "logs" / "spark.log"
    log_file.parent.mkdir()
    log_file.write_text("an earlier run's line\n")
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from dbt.adapters.zspark.reach.session import embedded\n"
        "try:\n"
        "    embedded.start({'spark.driver.extraJavaOptions': '-Xss1k'},\n"
        f"                   Path({str(log_file)!r}))\n"
        "except embedded.SessionStartError as error:\n"
        "    print(error)\n"
        "    sys.exit(3)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    assert done.returncode == 3, done.stdout + done.stderr
    assert "did not start" in done.stdout
    assert str(log_file) in done.stdout
    # A stack too small for the JVM to start: its own words, quoted, not on the console.
    assert "stack size specified is too small" in done.stdout
    assert "stack size" not in done.stderr
    assert "stack size specified is too small" in log_file.read_text()
    assert "an earlier run's line" not in done.stdout  # only this start's output quoted
    assert log_file.read_text().startswith("an earlier run's line")  # appended to
