"""The ways of reaching Spark behind one interface (base.SparkReach): a session in this
process, or a server reached by SQL alone."""
