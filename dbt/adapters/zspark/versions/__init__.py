"""A table as versions: the crash-safe swap (pure), the journaled batches run on Spark, a
re-clustering's next version, its policy and its rewrites."""
