"""The warehouse's folders as the swap's recovery sees them: one implementation per way of
reaching Spark.

A Python session sees the file system Spark writes (Hadoop's, through the session's JVM)
and can move a folder back under its table or delete one no table names. A server reached
by SQL alone shows no folders: they are taken to agree with its metastore (see
``swap.py``), and nothing is moved outside SQL. It deletes a folder as the metastore
does a managed table's: a managed scratch table is pointed at the folder and dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from dbt.adapters.zspark.core.sql_text import sql_string
from dbt.adapters.zspark.reach.session.hadoop_files import TABLE_FILES, has_table_files, list_status
from dbt.adapters.zspark.reach.session.jvm import SessionJvm
from dbt.adapters.zspark.skipping.stats import spark_path

#: Moves and deletes in flight at once (each a request or two to an object store).
IN_FLIGHT = 16


class Folders(Protocol):
    """What recovery needs of a warehouse's file system."""

    def exists(self, path: str) -> bool | None:
        """Does ``path`` exist (None: this connection cannot tell)?"""

    def move(self, source: str, target: str) -> None:
        """Rename the file or folder ``source`` to ``target`` (atomic where the file system
        is); a file's move that a kill stopped after its copy is finished."""

    def delete(self, path: str) -> None:
        """Delete the folder ``path`` and everything in it."""

    def move_all(self, moves: Sequence[tuple[str, str]]) -> None:
        """:meth:`move` each (source, target) file, in any order (several at once where
        each request waits on a store)."""

    def delete_all(self, paths: Sequence[str]) -> None:
        """:meth:`delete` each path, in any order."""

    def drop_with_folder(self, drop: Callable[[], None], folder: str, scratch: str) -> None:
        """Run ``drop`` (a table's drop, which leaves an external table's files) and delete
        ``folder``, that table's own, so that a kill at any point leaves the folder
        either named by the table, or found and deleted by the next
        :meth:`finish_deletes` (``scratch``: a table name this may take meanwhile)."""

    def finish_deletes(self, scratch: str) -> None:
        """Finish the deletion of a folder a kill stopped inside :meth:`drop_with_folder`."""

    def delete_if_empty(self, path: str) -> None:
        """Delete the folder ``path`` if it holds no folder (where that can be seen)."""

    def make(self, path: str) -> None:
        """Create the empty folder ``path`` (and its parents)."""

    def files(self, path: str) -> list[str]:
        """The data files under the folder ``path``, at any depth (hidden ones left out)."""

    def renames_atomic(self, path: str) -> bool:
        """Does the file system of ``path`` rename a folder in one step?"""

    def subfolders(self, path: str) -> list[str]:
        """The folders directly under ``path`` (none when it does not exist or cannot be
        seen)."""

    def write_lines(self, path: str, lines: list[str]) -> None:
        """Write the small text file ``path`` whole (one line per item), replacing it."""

    def from_uris(self, uris: Sequence[str]) -> list[str]:
        """The path, in this interface's form, of the file each Spark file path names (a
        URI: escaped, as ``_metadata.file_path`` and the index hold it), in order."""

    def to_uris(self, paths: Sequence[str]) -> list[str]:
        """The Spark file path (a URI, as the index holds it) of each of ``paths``, in this
        interface's form: the inverse of :meth:`from_uris`."""

    def read_lines(self, path: str) -> list[str] | None:
        """The lines of the text file ``path`` (None when it does not exist)."""


#: File systems whose folder renames are one step: a local disk's and HDFS's. Object
#: stores' connectors (s3a, gs, abfs without a hierarchical namespace) copy each file.
ATOMIC_RENAMES = ("file", "hdfs", "viewfs")
#: What S3A's rename throws when the target exists (a local file system answers false).
EXISTS = "org.apache.hadoop.fs.FileAlreadyExistsException"
NOT_FOUND = "java.io.FileNotFoundException"


def _thrown(error: Any) -> str:
    """The class name of the Java exception a py4j call raised."""
    return str(error.java_exception.getClass().getName())


class SessionFolders:
    """Folders through the session's Hadoop file systems."""

    def __init__(self, spark: Any) -> None:
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()
        # zspark's JVM class takes a table's files in one call (none: one call per file).
        session = SessionJvm(spark)
        self._table_files = session if has_table_files(session) else None

    def _path(self, path: str) -> tuple[Any, Any]:
        located = self._jvm.org.apache.hadoop.fs.Path(path)
        return located, located.getFileSystem(self._conf)

    def exists(self, path: str) -> bool | None:
        located, files = self._path(path)
        return bool(files.exists(located))

    def move(self, source: str, target: str) -> None:
        located, files = self._path(source)
        moved, _ = self._path(target)
        files.mkdirs(moved.getParent())
        if self._renamed(files, located, moved):
            return
        # An object store moves a file by a copy, then a delete of the source: a move a
        # kill stopped between them left a whole copy (an object is written whole or not
        # at all), and only the source is left to delete.
        if files.isFile(located) and files.exists(moved) and \
                files.getFileStatus(moved).getLen() == files.getFileStatus(located).getLen():
            files.delete(located, False)
            return
        raise OSError(f"could not move {source} to {target}")

    @staticmethod
    def _renamed(files: Any, source: Any, target: Any) -> bool:
        """Hadoop's rename; False where the target exists, which a local file system
        says by its answer and S3A by ``FileAlreadyExistsException``."""
        from py4j.protocol import Py4JJavaError

        try:
            return bool(files.rename(source, target))
        except Py4JJavaError as error:
            if _thrown(error) != EXISTS:
                raise
            return False

    def delete(self, path: str) -> None:
        located, files = self._path(path)
        files.delete(located, True)

    def move_all(self, moves: Sequence[tuple[str, str]]) -> None:
        if self._table_files is None:
            for source, target in moves:
                self.move(source, target)
            return
        if moves:
            jvm = self._table_files
            jvm.call_static(TABLE_FILES, "moveAll", jvm.session,
                            "\n".join(s for s, _ in moves), "\n".join(t for _, t in moves),
                            IN_FLIGHT)

    def delete_all(self, paths: Sequence[str]) -> None:
        if self._table_files is None:
            for path in paths:
                self.delete(path)
            return
        if paths:
            jvm = self._table_files
            jvm.call_static(TABLE_FILES, "deleteAll", jvm.session, "\n".join(paths), IN_FLIGHT)

    def drop_with_folder(self, drop: Callable[[], None], folder: str, scratch: str) -> None:
        # A kill between leaves a version folder no entry names, which recovery sees and
        # deletes (``swap.py``, f.).
        drop()
        self.delete(folder)

    def finish_deletes(self, scratch: str) -> None:
        return None

    def delete_if_empty(self, path: str) -> None:
        if not self.subfolders(path):
            self.delete(path)

    def make(self, path: str) -> None:
        located, files = self._path(path)
        files.mkdirs(located)

    def files(self, path: str) -> list[str]:
        if self._table_files is not None:
            jvm = self._table_files
            listed = str(jvm.call_static(TABLE_FILES, "listFiles", jvm.session, path))
            return sorted(listed.split("\n")) if listed else []
        located, files = self._path(path)
        if not files.exists(located):
            return []
        found, listing = [], files.listFiles(located, True)
        while listing.hasNext():
            status = listing.next().getPath()
            relative = str(status.toString())[len(str(located.toString())):]
            if not any(part.startswith(("_", ".")) for part in relative.split("/") if part):
                found.append(str(status.toString()))
        return sorted(found)

    def renames_atomic(self, path: str) -> bool:
        located, _ = self._path(path)
        return str(located.toUri().getScheme() or "file") in ATOMIC_RENAMES

    def subfolders(self, path: str) -> list[str]:
        located, files = self._path(path)
        return sorted(str(status.getPath().toString())
                      for status in list_status(files, located) if status.isDirectory())

    def from_uris(self, uris: Sequence[str]) -> list[str]:
        # A partition value's escapes are escaped once more in the URI: parsed as one.
        if self._table_files is None:
            return [str(self._jvm.org.apache.hadoop.fs.Path(self._jvm.java.net.URI(uri))
                        .toString()) for uri in uris]
        jvm = self._table_files
        paths = str(jvm.call_static(TABLE_FILES, "fromUris", "\n".join(uris)))
        return paths.split("\n") if paths else []

    def to_uris(self, paths: Sequence[str]) -> list[str]:
        if self._table_files is None:
            return [spark_path(str(self._jvm.org.apache.hadoop.fs.Path(path).toUri().toString()))
                    for path in paths]
        jvm = self._table_files
        uris = str(jvm.call_static(TABLE_FILES, "toUris", "\n".join(paths)))
        return [spark_path(uri) for uri in uris.split("\n")] if uris else []

    def write_lines(self, path: str, lines: list[str]) -> None:
        located, files = self._path(path)
        stream = files.create(located, True)
        try:
            stream.write(bytearray("".join(f"{line}\n" for line in lines).encode()))
        finally:
            stream.close()

    def read_lines(self, path: str) -> list[str] | None:
        from py4j.protocol import Py4JJavaError

        located, files = self._path(path)
        try:  # no existence check first: on S3 that is one request more
            stream = files.open(located)
        except Py4JJavaError as error:
            if _thrown(error) != NOT_FOUND:
                raise
            return None
        try:
            text = self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
        finally:
            stream.close()
        return [line for line in str(text).split("\n") if line]


class ServerFolders:
    """A server's folders: unseen, taken to agree with its metastore, and deleted by SQL
    (``execute`` runs a statement on the server)."""

    def __init__(self, execute: Callable[[str], Any]) -> None:
        self._execute = execute

    def exists(self, path: str) -> bool | None:
        return None

    def move(self, source: str, target: str) -> None:
        raise NotImplementedError("folders of a server are moved by SQL only")

    def delete(self, path: str) -> None:
        raise NotImplementedError("folders of a server are deleted with a table's drop only")

    def move_all(self, moves: Sequence[tuple[str, str]]) -> None:
        raise NotImplementedError("folders of a server are moved by SQL only")

    def delete_all(self, paths: Sequence[str]) -> None:
        raise NotImplementedError("folders of a server are deleted with a table's drop only")

    def drop_with_folder(self, drop: Callable[[], None], folder: str, scratch: str) -> None:
        # Dropping a managed table deletes the folder its entry names, wherever that is:
        # the scratch table names the folder before the table's entry goes, and until it
        # is deleted, so that a kill in between leaves it to :meth:`finish_deletes`.
        self.finish_deletes(scratch)
        self._execute(f"create table {scratch} (deleting int) using parquet")
        self._execute(f"alter table {scratch} set location {sql_string(folder)}")
        drop()
        self.finish_deletes(scratch)
        # The scratch table's create made its own empty folder: gone with a second drop.
        self._execute(f"create table {scratch} (deleting int) using parquet")
        self._execute(f"drop table if exists {scratch}")

    def finish_deletes(self, scratch: str) -> None:
        # Whatever the scratch table names is a folder being deleted, or its own, empty.
        self._execute(f"drop table if exists {scratch}")

    def delete_if_empty(self, path: str) -> None:
        return None  # unseen: left as it is

    def make(self, path: str) -> None:
        raise NotImplementedError("folders of a server are made by SQL only")

    def files(self, path: str) -> list[str]:
        raise NotImplementedError("files of a server are listed by SQL only")

    def renames_atomic(self, path: str) -> bool:
        return True  # a server's rename runs to its end (see ``swap.py``)

    def subfolders(self, path: str) -> list[str]:
        return []

    def from_uris(self, uris: Sequence[str]) -> list[str]:
        raise NotImplementedError("files of a server are named by SQL only")

    def to_uris(self, paths: Sequence[str]) -> list[str]:
        raise NotImplementedError("files of a server are named by SQL only")

    def write_lines(self, path: str, lines: list[str]) -> None:
        raise NotImplementedError("files of a server are written by SQL only")

    def read_lines(self, path: str) -> list[str] | None:
        raise NotImplementedError("files of a server are read by SQL only")
