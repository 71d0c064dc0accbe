"""The few JVM values the formats' replacement commits pass through py4j: Scala lists,
maps, options and objects (Delta's and Iceberg's commit APIs live on the JVM only), and
the formats' classes, found where the session's SQL finds them.

py4j looks a class up in the loader of the JVM thread serving the calling Python thread;
a format's jars may be elsewhere (added by ``ADD JAR``, or in a loader other than that
thread's). The session's jar class loader holds every jar its SQL can use, so a format
call works exactly when the format's SQL does, however its jars reached the session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def java_list(jvm: Any, items: Iterable[Any]) -> Any:
    """A ``java.util.ArrayList`` of ``items``."""
    java = jvm.java.util.ArrayList()
    for item in items:
        java.add(item)
    return java


def scala_list(jvm: Any, items: Iterable[Any]) -> Any:
    """An immutable Scala list of ``items`` (a ``Seq`` where an API asks for one)."""
    return jvm.scala.jdk.javaapi.CollectionConverters.asScala(java_list(jvm, items)).toList()


def scala_map(jvm: Any, entries: Mapping[str, str]) -> Any:
    """An immutable Scala map of strings."""
    java = jvm.java.util.HashMap()
    for key, value in entries.items():
        java.put(key, value)
    mutable = jvm.scala.jdk.javaapi.CollectionConverters.asScala(java)
    return getattr(jvm.scala.collection.immutable.Map, "from")(mutable)


def python_list(jvm: Any, seq: Any) -> list[Any]:
    """A Scala collection's elements."""
    return list(jvm.scala.jdk.javaapi.CollectionConverters.asJava(seq))


def jvm_class(spark: Any, name: str) -> Any:
    """The JVM class ``name`` as the session's SQL loads it."""
    loader = spark._jsparkSession.sharedState().jarClassLoader()
    return spark._jvm.java.lang.Class.forName(name, True, loader)


def call_static(spark: Any, class_name: str, method: str, *args: Any) -> Any:
    """The static ``method`` of the class ``class_name`` (:func:`jvm_class`) called with
    ``args``: the first overload whose parameters take them."""
    jvm = spark._jvm
    found = jvm_class(spark, class_name)
    for candidate in found.getMethods():
        if (candidate.getName() != method or candidate.getParameterCount() != len(args)
                or not jvm.java.lang.reflect.Modifier.isStatic(candidate.getModifiers())):
            continue
        kinds = candidate.getParameterTypes()
        if all(kind.isPrimitive() or kind.isInstance(arg) for kind, arg in zip(kinds, args,
                                                                              strict=True)):
            values = spark.sparkContext._gateway.new_array(jvm.java.lang.Object, len(args))
            for i, arg in enumerate(args):
                values[i] = arg
            return candidate.invoke(None, values)
    raise LookupError(f"no static {class_name}.{method} taking {len(args)} arguments")


def scala_object(spark: Any, name: str) -> Any:
    """A Scala ``object`` by its class's name (``DeltaOperations.Optimize``:
    ``"org.apache.spark.sql.delta.DeltaOperations$Optimize"``)."""
    return jvm_class(spark, f"{name}$").getField("MODULE$").get(None)


def java_iterable(iterable: Any, closeable: bool = False) -> list[Any]:
    """The elements of a Java ``Iterable``; a ``closeable`` one is closed after (py4j
    answers every attribute, so it cannot be asked)."""
    found = []
    iterator = iterable.iterator()
    while iterator.hasNext():
        found.append(iterator.next())
    if closeable:
        iterable.close()
    return found
