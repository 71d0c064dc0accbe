"""Choosing a table's layout from the workload it serves (``cluster_by='auto'``, the
``zspark_advise`` operation): where the queries come from, the candidate layouts, and how
each is scored in files per query on a sample of the table."""
