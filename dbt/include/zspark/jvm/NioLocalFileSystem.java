package dbt.zspark;

import static java.nio.charset.StandardCharsets.UTF_8;
import static java.nio.file.StandardCopyOption.ATOMIC_MOVE;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system, writing no checksum files, over a raw one that sets
 * permissions with a system call.
 *
 * <p>It stays a {@link LocalFileSystem}: object stores' clients (S3A, ABFS, GCS) buffer their
 * uploads through {@code FileSystem.getLocal}, which casts to that class. Checksum files are
 * still verified where another writer left them.
 *
 * <p>Without Hadoop's native library, which pyspark does not ship, RawLocalFileSystem runs a
 * {@code chmod} process for every file and directory it creates: a 1000-file build spawned
 * 2000 of them, each waited for by the task writing the file.
 *
 * <p>With {@code ZSPARK_WRITE_GATE=<folder>} in the JVM's environment (tests that kill a
 * run amid its write), a task creating a data file while {@code <folder>/hold} exists
 * writes its path to {@code <folder>/held} and waits for the hold to go: the run is then surely
 * between its first data file and its commit, whatever the machine's load.
 */
public class NioLocalFileSystem extends LocalFileSystem {
  public NioLocalFileSystem() {
    super(new Raw());
    setWriteChecksum(false);
  }

  /** The raw file system underneath: permissions by a system call, the write gate. */
  public static class Raw extends RawLocalFileSystem {
    /** The permission bits in FsPermission.toShort() order, lowest first. */
    private static final PosixFilePermission[] BITS = {
      PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
      PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
      PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
      PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
      PosixFilePermission.OWNER_READ};

    private static final String GATE = System.getenv("ZSPARK_WRITE_GATE");
    /** How long a held write waits for its test before going on regardless. */
    private static final long HOLD_LIMIT_MILLIS = 600_000;

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

    @Override
    protected OutputStream createOutputStreamWithMode(Path path, boolean append,
        FsPermission permission) throws IOException {
      OutputStream stream = super.createOutputStreamWithMode(path, append, permission);
      if (GATE != null && isDataFile(path)) {
        holdWhileGated(path);
      }
      return stream;
    }

    /** A table's data file, not a Delta log checkpoint. */
    private static boolean isDataFile(Path path) {
      return path.getName().endsWith(".parquet") && !path.toUri().getPath().contains("/_delta_log/");
    }

    private static void holdWhileGated(Path path) throws IOException {
      java.nio.file.Path hold = Paths.get(GATE, "hold");
      if (!Files.exists(hold)) {
        return;
      }
      // A name of its own per task: two tasks held at once must not move each other's.
      java.nio.file.Path written = Paths.get(GATE, "held." + Thread.currentThread().getId() + ".tmp");
      Files.write(written, path.toUri().getPath().getBytes(UTF_8));
      Files.move(written, Paths.get(GATE, "held"), ATOMIC_MOVE);
      long deadline = System.currentTimeMillis() + HOLD_LIMIT_MILLIS;
      try {
        while (Files.exists(hold) && System.currentTimeMillis() < deadline) {
          Thread.sleep(20);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
