# One command sets everything up and runs the demo; one sets up and runs the tests.
VENV ?= .venv
PY := $(VENV)/bin/python
export PYSPARK_PYTHON := $(abspath $(PY))
export SPARK_LOCAL_IP := 127.0.0.1

.PHONY: setup demo test test-slow test-thin-client test-bench bench bench-object-store bench-formats bench-formats-bar bench-keys bench-scale bench-sort-series bench-task-binaries bench-auto bench-advice-sample bench-driver-scale bench-bar bench-pipeline bench-thrift bench-server-code bench-balanced bench-kills bench-seeds bench-pip-user bench-jvm-start bench-delta-log bench-first-sample bench-quick bench-report lint

# Scale of `make bench` (seed 002: 1000 files).
ROWS ?= 2000000
FILES ?= 1000

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	touch $@

# Delta Lake's and Iceberg's jars for `table_format:` sessions, and Hadoop's S3 connector
# with its AWS SDK for tables in object stores, fetched once with Maven (table_formats.py
# and object_stores.py list them); without them a session asks Spark to fetch the formats.
FORMAT_JARS := dbt/include/zspark/jars/.fetched
$(FORMAT_JARS): dbt/adapters/zspark/formats/settings.py dbt/adapters/zspark/reach/session/object_stores.py $(VENV)/.installed
	@if command -v mvn >/dev/null; then \
	  for artifact in $$($(PY) -c 'from dbt.adapters.zspark.formats.settings import maven_packages; from dbt.adapters.zspark.reach.session.object_stores import S3A_PACKAGES; print(*maven_packages(), *S3A_PACKAGES)'); do \
	    mvn -q dependency:copy -Dartifact=$$artifact -DoutputDirectory=$(@D) || exit 1; \
	  done && touch $@; \
	else echo "no Maven (mvn): table_format sessions fetch their jars through Spark"; fi

# zspark's JVM classes (its local file system, the AWS SDK's log binding), compiled into
# zspark's cache folder as a pip user's first session compiles them
# (dbt/adapters/zspark/reach/session/jvm_jar.py). A machine without a JDK keeps Hadoop's file system.
JVM_CLASSES := $(VENV)/.jvm-classes
$(JVM_CLASSES): $(wildcard dbt/include/zspark/jvm/*.java) dbt/adapters/zspark/reach/session/jvm_jar.py $(VENV)/.installed
	@$(PY) -m dbt.adapters.zspark.reach.session.jvm_jar && touch $@ || \
	  echo "no JDK (javac, jar): embedded Spark keeps Hadoop's RawLocalFileSystem"

setup: $(VENV)/.installed $(JVM_CLASSES) $(FORMAT_JARS)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy dbt bench tests/harness

test: lint
	$(PY) -m pytest

# The tests the suite leaves out for its time (marker `slow`; each starts JVMs of its
# own), listed in docs/tests.md beside the suite's shorter test of the same protocol.
test-slow: setup
	$(PY) -m pytest -m slow

# README's thin install (Connect's client alone, no JVM) in a fresh venv, its dbt run
# against a local Connect server (one of the slow tests; pip fetches dbt, about 4 minutes).
test-thin-client: setup
	$(PY) -m pytest -m slow -n 0 tests/functional/test_thin_client.py

# The benchmarks' quick runs, checked (tests/bench): bench.run, bench.pipeline,
# bench.balanced and bench.keys on small tables, started together (about 15 minutes).
test-bench: setup
	$(PY) -m pytest -m bench tests/bench

demo: setup
	$(PY) -m bench.demo

bench: setup
	$(PY) -m bench.run --rows $(ROWS) --files $(FILES)
	$(PY) -m bench.keys
	$(PY) -m bench.pipeline
	$(PY) -m bench.report

# Tables in an object store (moto's S3 server on loopback): write requests of builds beside
# Spark's own write, and the files and requests of point queries (about 25 minutes).
bench-object-store: setup
	$(PY) -m bench.object_store --rows 200000 --files 100
	$(PY) -m bench.object_store --rows 200000 --files 100 --latency-ms 30 \
	  --out bench/results/object-store-latency.json

# Keys per second per core: the curve-key UDFs against the same keys in Spark SQL.
bench-keys: setup
	$(PY) -m bench.keys
	$(PY) -m bench.report

# Clustered incremental runs: base of 50%, ten appends of 5%, three re-clustering policies.
bench-pipeline: setup
	$(PY) -m bench.pipeline
	$(PY) -m bench.report

# The Hilbert build over a Spark Thrift Server (SQL keys and index) beside the session build.
bench-thrift: setup
	$(PY) -m bench.thrift
	$(PY) -m bench.report

bench-server-code: setup
	$(PY) -m bench.server_code

# zspark's Delta and Iceberg tables beside the formats' own clustering (about 20 minutes),
# then the pipeline (a base, ten appends) on each format beside OPTIMIZE after every run.
bench-formats: setup
	$(PY) -m bench.formats --rows $(ROWS) --files $(FILES)
	$(PY) -m bench.format_pipeline --rows $(ROWS) --files $(FILES)
	$(PY) -m bench.report

# The pipeline at the bar's scale, one format at a time (each run 25 min; --add keeps the
# other format's figures; --no-peers: zspark and the rebuild only).
bench-formats-bar: setup
	$(PY) -m bench.format_pipeline --rows $(ROWS) --files $(FILES) --formats delta \
		--out bench/results/format-pipeline-bar.json
	$(PY) -m bench.format_pipeline --rows $(ROWS) --files $(FILES) --formats iceberg \
		--out bench/results/format-pipeline-bar.json --add
	$(PY) -m bench.report

# Hilbert beside the balanced layout (equal and weighted) on uniform, Zipf and correlated data.
bench-balanced: setup
	$(PY) -m bench.balanced --repeats 3
	$(PY) -m bench.report

# Random SIGKILLs of a clustered incremental model's runs, in a session, over thrift and
# with the warehouse on a local S3 server.
bench-kills: setup
	$(PY) -m bench.kills --rounds 20
	$(PY) -m bench.kills --rounds 20 --thrift --kill-window 8 40
	$(PY) -m bench.kills --rounds 12 --s3 --kill-window 30 100

# Seeds: zspark's loader (one Spark write) beside dbt-spark's (insert statements).
bench-seeds: setup
	$(PY) -m bench.seeds --rows 1000000 --sql-rows 5000

# The Iceberg benchmark as a pip user runs it: HEAD installed by pip alone into a fresh
# venv, Iceberg enabled by its own settings (bench/results/formats-pip-user.json).
bench-pip-user: setup
	$(PY) -m bench.pip_user --formats iceberg --rows $(ROWS) --files $(FILES)

# 2 M, 8 M and 20 M rows at 1000 files: build time per M rows, driver memory, queries.
bench-scale: setup
	$(PY) -m bench.scale
	$(PY) -m bench.report

# Clustering at the cost of a sort: bare, sorted and clustered builds at 200,000 to
# 20 M rows on Parquet, Delta and Iceberg, each build its own dbt process (~60 min).
bench-sort-series: setup
	$(PY) -m bench.sort_series
	$(PY) -m bench.report

# What a keyed write's tasks carry: the write stage with and without the keying plan in
# its tasks, beside Spark's sorted write (1 M rows into 1,000 partitions, about 2 min).
bench-task-binaries: setup
	$(PY) -m bench.task_binaries

# cluster_by='auto' against every hand-chosen layout, before and after a workload shift;
# then an incremental AUTO model's runs across the shift.
bench-auto: setup
	$(PY) -m bench.auto_choice
	$(PY) -m bench.auto_shift
	$(PY) -m bench.report

# An advice's sample from every file of a 5,000-file table against from the files it picks.
bench-advice-sample: setup
	$(PY) -m bench.advice_sample

# A scan's planning on the driver at 10,000, 100,000 and 1 M files (10 M row groups), on
# synthetic index statistics (about 2 minutes).
bench-driver-scale: setup
	$(PY) -m bench.driver_scale

# The scale bar: 100 M rows into 10,000 files, each build and append its own dbt process:
# Spark's bare and sorted writes beside a Hilbert build, point queries, appends (~35 min).
bench-bar: setup
	$(PY) -m bench.bar
	$(PY) -m bench.report

# An embedded session's start without zspark's class archive, recording it, mapping it.
bench-jvm-start: setup
	$(PY) -m bench.jvm_start

# A Delta table's file statistics over Connect: its log replayed by SQL beside the rows
# aggregated (20 M rows, 1,000 files).
bench-delta-log: setup
	$(PY) -m bench.delta_log

# A first build's sample, one top-k beside the count and a cut-off top-k: over a Thrift
# server (20 M rows read by 40 and by 200 tasks), in a session (a 30 M-row Parquet table).
bench-first-sample: setup
	$(PY) -m bench.first_sample --reach thrift
	$(PY) -m bench.first_sample --reach session --rows 30000000 --files 200

bench-quick: setup
	$(PY) -m bench.run --quick

# Redraw BENCHMARKS.md and docs/img/ from the figures in bench/results/ (each benchmark
# above ends by it).
bench-report: setup
	$(PY) -m bench.report
