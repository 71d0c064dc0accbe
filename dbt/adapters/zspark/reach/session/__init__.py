"""Spark in this process: the embedded session, its UDFs, its Hadoop file systems, its JVM
classes and log."""
