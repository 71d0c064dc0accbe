"""What runs on any DataFrame session, the embedded one and a Spark Connect client's alike:
the DataFrame and SQL APIs only, no JVM call."""
