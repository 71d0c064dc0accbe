package dbt.zspark;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system (no checksum files) that sets permissions with a system call.
 *
 * <p>Without Hadoop's native library, which pyspark does not ship, RawLocalFileSystem runs a
 * {@code chmod} process for every file and directory it creates: a 1000-file build spawned
 * 2000 of them, each waited for by the task writing the file.
 */
public class NioLocalFileSystem extends RawLocalFileSystem {
  /** The permission bits in FsPermission.toShort() order, lowest first. */
  private static final PosixFilePermission[] BITS = {
    PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
    PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
    PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
    PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
    PosixFilePermission.OWNER_READ};

  /** Iceberg asks a table's file system for its scheme; Hadoop's raw local one has none. */
  @Override
  public String getScheme() {
    return "file";
  }

  @Override
  public void setPermission(Path path, FsPermission permission) throws IOException {
    short mode = permission.toShort();
    if ((mode & ~0777) != 0) {
      // The sticky bit has no java.nio form: Hadoop's own way.
      super.setPermission(path, permission);
      return;
    }
    Set<PosixFilePermission> granted = EnumSet.noneOf(PosixFilePermission.class);
    for (int bit = 0; bit < BITS.length; bit++) {
      if ((mode & (1 << bit)) != 0) {
        granted.add(BITS[bit]);
      }
    }
    Files.setPosixFilePermissions(pathToFile(path).toPath(), granted);
  }
}
