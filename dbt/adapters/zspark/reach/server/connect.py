"""``method: connect``: dbt's statements sent to a Spark Connect server (Spark's own client
protocol, ``sc://host:port``), through pyspark's Connect client.

The client starts no JVM in the dbt process: statements go over gRPC, rows come back as
Arrow. zspark reaches the connection's session as a DataFrame session
(``reach/frames/reach.py``): a build's sample job and keyed write are the embedded
session's own code, and keys only Python computes (``curve_method='direct'``) go to the
server as the session's pandas UDFs; the index and the files' bounds are Spark SQL, as
over a Thrift server.

The connection URL carries the profile's ``token`` and ``connect_headers`` as Connect's
``;name=value`` parameters (a header each), and ``use_ssl`` as ``;use_ssl=true``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from dbt.adapters.spark.session import Connection, Cursor, SessionConnectionWrapper
from dbt_common.exceptions import DbtRuntimeError

#: The profile's ``method`` for a Spark Connect server.
METHOD = "connect"
SCHEME = "sc://"
DEFAULT_PORT = 15002


def connect_url(host: str, port: int | None, token: str | None = None,
                headers: Mapping[str, str] | None = None, use_ssl: bool = False) -> str:
    """The client's URL: ``host`` (``sc://name[:port]`` or a bare name), the profile's
    ``port`` where the host names none, then the token and headers as parameters.

    >>> connect_url("sc://127.0.0.1:15002", 443)
    'sc://127.0.0.1:15002'
    >>> connect_url("spark.example.com", None, token="t0", headers={"x-team": "a b"})
    'sc://spark.example.com:15002/;token=t0;x-team=a%20b'
    """
    address = host[len(SCHEME):] if host.startswith(SCHEME) else host
    address = address.rstrip("/")
    if ";" in address or "/" in address:
        raise DbtRuntimeError(
            f"profile: host '{host}' for method: connect takes a server's name and port "
            f"(sc://name:port); put the token in 'token' and headers in 'connect_headers'")
    if ":" not in address:
        address = f"{address}:{port or DEFAULT_PORT}"
    parameters = {**({"token": token} if token else {}),
                  **({"use_ssl": "true"} if use_ssl else {}), **(headers or {})}
    tail = "".join(f";{name}={quote(str(value), safe='')}"
                   for name, value in parameters.items())
    return f"{SCHEME}{address}" + (f"/{tail}" if tail else "")


def _remote_session(url: str) -> Any:
    """A new client session on the server: one per dbt connection (a thread's), as each
    Thrift connection is a session of its own, so one model's session settings and
    temporary views are not another's, and a cancel interrupts that thread's operations.
    Connect's own builder: pyspark's common one refuses a remote session in a process
    that runs an embedded one, and ``getOrCreate`` would hand back any session the process
    made before, to whichever server."""
    try:
        from pyspark.sql.connect.session import SparkSession

        return SparkSession.builder.remote(url).create()
    except ImportError as missing:
        raise DbtRuntimeError(
            f"method: connect needs Spark Connect's client packages ({missing}); "
            f"install them with `pip install 'dbt-zspark[connect]'`") from missing


def _reason(error: BaseException) -> str:
    """gRPC's ``details`` line of a failed call (the client prints the call's whole
    state), else the error's first line."""
    text = str(error)
    details = re.search(r'details = "(.*)"', text)
    return details.group(1) if details else (text.split("\n")[0] or type(error).__name__)


class ConnectCursor(Cursor):
    """dbt-spark's session cursor, whose statements run in a Connect session."""

    def __init__(self, session: Any) -> None:
        super().__init__()
        self.session = session

    def execute(self, sql: str, *parameters: Any) -> None:
        from pyspark.errors import AnalysisException

        if parameters:
            sql = sql % parameters
        try:
            self._df = self.session.sql(sql)
        except AnalysisException as error:
            raise DbtRuntimeError(str(error)) from error


class ConnectHandle(Connection):
    def __init__(self, session: Any) -> None:
        super().__init__()
        self.session = session

    def cursor(self) -> Cursor:
        return ConnectCursor(self.session)


class ConnectConnectionWrapper(SessionConnectionWrapper):
    """dbt's handle of a Connect session; dbt's cancel interrupts the session's operations
    on the server (a Ctrl-C stops the server's jobs, not only the client's wait)."""

    handle: ConnectHandle

    def __init__(self, session: Any) -> None:
        super().__init__(ConnectHandle(session))

    @property
    def session(self) -> Any:
        return self.handle.session

    def cancel(self) -> None:
        self.session.interruptAll()


def dataframe_session(handle: Any) -> Any:
    """The Connect session behind a dbt connection's handle; None for another handle."""
    return handle.session if isinstance(handle, ConnectConnectionWrapper) else None


def open_handle(url: str, timeout_seconds: int) -> ConnectConnectionWrapper:
    """A handle whose server answered: a first statement now, retried for about
    ``timeout_seconds`` (the profile's ``connect_timeout``), so a wrong host or a stopped
    server fails ``dbt debug`` and the run's first connection in seconds, naming the
    server; the statements after it keep the client's own patient retries (minutes), as a
    busy server may pause."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    session = _remote_session(url)
    patient = session.client.get_retry_policies()
    session.client.set_retry_policies([DefaultPolicy(
        max_retries=max(1, timeout_seconds), backoff_multiplier=1.0, initial_backoff=1000,
        max_backoff=1000, jitter=0, min_jitter_threshold=0)])
    try:
        session.sql("select 1").collect()
    except Exception as error:  # the client's gRPC errors have no common base
        # No retries left for the session's release when the process ends (else minutes).
        session.client.set_retry_policies([])
        first = _reason(error)
        raise DbtRuntimeError(
            f"Spark Connect server {url.split('/;')[0]} did not answer in "
            f"{timeout_seconds} s (profile: host, port, token, connect_timeout): {first}"
        ) from error
    session.client.set_retry_policies(patient)
    return ConnectConnectionWrapper(session)
