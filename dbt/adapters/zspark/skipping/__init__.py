"""Data skipping: Parquet footers to file statistics, the __zindex, predicates to "may this
file match", scans, layout health and its report."""
