"""The few JVM values the formats' replacement commits pass through py4j: Scala lists,
maps, options and objects (Delta's and Iceberg's commit APIs live on the JVM only)."""

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


def scala_object(package: Any, name: str) -> Any:
    """A Scala ``object`` (``DeltaOperations.Optimize``: ``"DeltaOperations$Optimize"``)."""
    return getattr(getattr(package, f"{name}$"), "MODULE$")


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
