"""A session's JVM, as the formats' replacement commits reach it through py4j: Scala
lists, maps, options and objects (Delta's and Iceberg's commit APIs live on the JVM
only), the formats' classes found where the session's SQL finds them, and DataFrames
passed both ways.

py4j looks a class up in the loader of the JVM thread serving the calling Python thread;
a format's jars may be elsewhere (added by ``ADD JAR``, or in a loader other than that
thread's). The session's jar class loader holds every jar its SQL can use, so a format
call works exactly when the format's SQL does, however its jars reached the session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class SessionJvm:
    """The JVM behind an embedded ``spark`` session: every py4j call of the formats."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        jvm = spark._jvm
        assert jvm is not None, "a session in this process has a JVM"
        #: py4j's view of the JVM's packages (``jvm.scala.Option.empty()``).
        self.jvm: Any = jvm

    @property
    def session(self) -> Any:
        """The session's JVM ``SparkSession``."""
        return self.spark._jsparkSession

    def set_active(self) -> None:
        """This session as the active one of the calling thread's JVM thread: outside a
        query the catalog manager reads the active session's settings, and a dbt worker
        thread has none (it would get Spark's own session catalog)."""
        self.jvm.org.apache.spark.sql.SparkSession.setActiveSession(self.session)

    def dataframe(self, dataset: Any) -> DataFrame:
        """A JVM ``Dataset[Row]`` as a DataFrame of the session."""
        from pyspark.sql.classic.dataframe import DataFrame

        return DataFrame(dataset, self.spark)

    @staticmethod
    def dataset(frame: DataFrame) -> Any:
        """A DataFrame's JVM ``Dataset[Row]``."""
        return frame._jdf

    def java_list(self, items: Iterable[Any]) -> Any:
        """A ``java.util.ArrayList`` of ``items``."""
        java = self.jvm.java.util.ArrayList()
        for item in items:
            java.add(item)
        return java

    def scala_list(self, items: Iterable[Any]) -> Any:
        """An immutable Scala list of ``items`` (a ``Seq`` where an API asks for one)."""
        converters = self.jvm.scala.jdk.javaapi.CollectionConverters
        return converters.asScala(self.java_list(items)).toList()

    def scala_map(self, entries: Mapping[str, str]) -> Any:
        """An immutable Scala map of strings."""
        java = self.jvm.java.util.HashMap()
        for key, value in entries.items():
            java.put(key, value)
        mutable = self.jvm.scala.jdk.javaapi.CollectionConverters.asScala(java)
        return getattr(self.jvm.scala.collection.immutable.Map, "from")(mutable)

    def python_list(self, seq: Any) -> list[Any]:
        """A Scala collection's elements."""
        return list(self.jvm.scala.jdk.javaapi.CollectionConverters.asJava(seq))

    def java_map(self, scala_map: Any) -> dict[Any, Any]:
        """A Scala map's entries."""
        return dict(self.jvm.scala.jdk.javaapi.CollectionConverters.asJava(scala_map))

    def jvm_class(self, name: str) -> Any:
        """The JVM class ``name`` as the session's SQL loads it."""
        loader = self.session.sharedState().jarClassLoader()
        return self.jvm.java.lang.Class.forName(name, True, loader)

    def call_static(self, class_name: str, method: str, *args: Any) -> Any:
        """The static ``method`` of the class ``class_name`` (:meth:`jvm_class`) called
        with ``args``: the first overload whose parameters take them."""
        found = self.jvm_class(class_name)
        for candidate in found.getMethods():
            if (candidate.getName() != method or candidate.getParameterCount() != len(args)
                    or not self.jvm.java.lang.reflect.Modifier.isStatic(
                        candidate.getModifiers())):
                continue
            kinds = candidate.getParameterTypes()
            if all(kind.isPrimitive() or kind.isInstance(arg)
                   for kind, arg in zip(kinds, args, strict=True)):
                gateway = self.spark.sparkContext._gateway
                assert gateway is not None
                values = gateway.new_array(self.jvm.java.lang.Object, len(args))
                for i, arg in enumerate(args):
                    values[i] = arg
                return candidate.invoke(None, values)
        raise LookupError(f"no static {class_name}.{method} taking {len(args)} arguments")

    @staticmethod
    def iterable(items: Any, closeable: bool = False) -> list[Any]:
        """:func:`java_iterable`."""
        return java_iterable(items, closeable)

    def scala_object(self, name: str) -> Any:
        """A Scala ``object`` by its class's name (``DeltaOperations.Optimize``:
        ``"org.apache.spark.sql.delta.DeltaOperations$Optimize"``)."""
        return self.jvm_class(f"{name}$").getField("MODULE$").get(None)


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
