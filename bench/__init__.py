"""Benchmark of dbt-zspark layouts, reproducing seed 002's SSB data-skipping experiment."""
