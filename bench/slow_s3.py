"""moto's S3 server with a fixed delay before each request is served: the latency of a
real object store (tens of milliseconds per request), on 127.0.0.1. It logs one line per
request as ``moto_server`` does (``tests.harness.servers.s3_requests`` reads them).

    python -m bench.slow_s3 --port 9000 --latency-ms 30
"""

from __future__ import annotations

import argparse
import time
from typing import Any


def main(argv: list[str] | None = None) -> None:
    from moto.server import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import run_simple

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency-ms", type=float, required=True)
    args = parser.parse_args(argv)
    served = DomainDispatcherApplication(create_backend_app)
    delay = args.latency_ms / 1000

    def delayed(environ: dict[str, Any], start_response: Any) -> Any:
        time.sleep(delay)
        return served(environ, start_response)

    run_simple("127.0.0.1", args.port, delayed, threaded=True,
               request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
