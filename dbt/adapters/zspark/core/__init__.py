"""The pure core: curves, the balanced partition, planning, the stored layout and the rules
a run follows. Nothing here imports Spark."""
