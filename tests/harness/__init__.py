"""What the tests and the benchmarks both run: servers started on loopback and stopped by
the process ids they started (``servers.py``), and dbt processes forked from a launcher
that imported dbt once (``dbt_launcher.py``)."""
