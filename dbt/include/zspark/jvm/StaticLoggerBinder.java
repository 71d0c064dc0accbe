package org.slf4j.impl;

import org.slf4j.ILoggerFactory;
import org.slf4j.LoggerFactory;

/**
 * An SLF4J 1.x binding that hands its callers the SLF4J 2 logger factory Spark already
 * runs on (log4j2, configured by zspark).
 *
 * <p>The AWS SDK bundle that Hadoop's S3A connector needs carries a shaded SLF4J 1.7 whose
 * own binder looks this class up by name. Spark 4 ships SLF4J 2, which has no such class,
 * so without it the SDK prints three "Failed to load class" lines to stderr at every start
 * and drops its log. With it, the SDK's lines go where Spark's go. SLF4J 2 itself ignores
 * this class while it finds a provider, as it does in Spark.
 */
public final class StaticLoggerBinder {

  /** The SLF4J API version this binding serves, read by SLF4J 1.x callers. */
  public static String REQUESTED_API_VERSION = "1.7.36";

  private static final StaticLoggerBinder SINGLETON = new StaticLoggerBinder();

  private StaticLoggerBinder() {}

  public static StaticLoggerBinder getSingleton() {
    return SINGLETON;
  }

  public ILoggerFactory getLoggerFactory() {
    return LoggerFactory.getILoggerFactory();
  }

  public String getLoggerFactoryClassStr() {
    return getLoggerFactory().getClass().getName();
  }
}
