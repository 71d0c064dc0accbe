package dbt.zspark;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

import scala.Tuple2;

/**
 * A table's files through the session's Hadoop file systems, in calls that take and return
 * every file at once (py4j answers each call in about a tenth of a millisecond, and a
 * table has thousands): listings, identities, moves and deletes, and the Parquet footers
 * of a table's files, read by the executors. The session's storage settings travel with
 * the job, and no client of zspark's own is involved.
 *
 * <p>The driver lists each folder once (a page of up to 1000 files per request on an object
 * store) and hands each file's status to a task, which opens it without asking for it again
 * and reads its tail in one ranged read (a second one only for a footer longer than the
 * first read). Each task keeps a few reads in flight: a request to an object store waits
 * tens of milliseconds.
 */
public final class TableFiles {
  /** The rows {@link #read} returns: a file's path as given, size, mtime (ms) and tail. */
  public static final StructType SCHEMA = new StructType()
      .add("file_path", DataTypes.StringType, false)
      .add("file_size", DataTypes.LongType, false)
      .add("file_mtime", DataTypes.LongType, false)
      .add("footer", DataTypes.BinaryType, false);

  private static final byte[] MAGIC = {'P', 'A', 'R', '1'};
  /** Up to this many files of one folder are asked for by name, not found in its listing. */
  static final int STATUS_EACH_UP_TO = 8;

  private TableFiles() {}

  /**
   * The footer of each file of {@code paths} (one per line, as Spark lists a table's files),
   * read in {@code tasks} tasks with {@code readers} reads in flight in each, the first read
   * of each file its last {@code tailBytes}. A file that is not there fails the call,
   * named, before any task runs.
   */
  public static Dataset<Row> read(SparkSession spark, String paths, int tasks, int readers,
                                  int tailBytes) throws IOException {
    Configuration conf = spark.sessionState().newHadoopConf();
    List<Tuple2<String, FileStatus>> files = statuses(conf, paths, true);
    JavaSparkContext context = JavaSparkContext.fromSparkContext(spark.sparkContext());
    Broadcast<SerializableConfiguration> shared =
        context.broadcast(new SerializableConfiguration(conf));
    int slices = Math.max(1, Math.min(tasks, files.size()));
    JavaRDD<Row> rows = context.parallelize(files, slices)
        .mapPartitions(new ReadTails(shared, readers, tailBytes));
    return spark.createDataFrame(rows, SCHEMA);
  }

  /**
   * The data files under {@code folder} at any depth, hidden ones (a name or folder
   * starting with {@code _} or {@code .}) left out, one per line; none when it does not
   * exist.
   */
  public static String listFiles(SparkSession spark, String folder) throws IOException {
    Path located = new Path(folder);
    FileSystem fs = located.getFileSystem(spark.sessionState().newHadoopConf());
    List<String> found = new ArrayList<>();
    if (!fs.exists(located)) {
      return "";
    }
    String root = fs.makeQualified(located).toString();
    List<Path> folders = new ArrayList<>(List.of(located));
    // listStatus, not listFiles: a located status asks a local disk for each file's
    // permissions, which Hadoop without its native library does by starting a process.
    while (!folders.isEmpty()) {
      for (FileStatus status : fs.listStatus(folders.remove(folders.size() - 1))) {
        String path = status.getPath().toString();
        boolean hidden = false;
        for (String part : path.substring(Math.min(root.length(), path.length())).split("/")) {
          hidden |= part.startsWith("_") || part.startsWith(".");
        }
        if (hidden) {
          continue;
        }
        if (status.isDirectory()) {
          folders.add(status.getPath());
        } else {
          found.add(path);
        }
      }
    }
    return String.join("\n", found);
  }

  /** Each URI (one per line) as a Hadoop path's text, in the same order. */
  public static String fromUris(String uris) {
    List<String> paths = new ArrayList<>();
    for (String uri : uris.split("\n")) {
      if (!uri.isEmpty()) {
        paths.add(parse(uri).toString());
      }
    }
    return String.join("\n", paths);
  }

  /** Each Hadoop path (one per line) as the URI Spark lists it by, in the same order. */
  public static String toUris(String paths) {
    List<String> uris = new ArrayList<>();
    for (String path : paths.split("\n")) {
      if (!path.isEmpty()) {
        uris.add(new Path(path).toUri().toString());
      }
    }
    return String.join("\n", uris);
  }

  /**
   * Move each file {@code sources[i]} to {@code targets[i]} (one per line each), with
   * {@code threads} moves in flight: an object store's move is a copy and a delete, tens
   * of milliseconds each. A move a kill stopped after its copy (the target whole, of the
   * source's length) is finished by deleting the source. Any order is safe: recovery moves
   * whatever is still at its source.
   */
  public static void moveAll(SparkSession spark, String sources, String targets, int threads)
      throws Exception {
    String[] from = sources.split("\n");
    String[] to = targets.split("\n");
    if (from.length != to.length) {
      throw new IllegalArgumentException("zspark: " + from.length + " sources, "
          + to.length + " targets");
    }
    Configuration conf = spark.sessionState().newHadoopConf();
    List<java.util.concurrent.Callable<Void>> moves = new ArrayList<>();
    for (int i = 0; i < from.length; i++) {
      if (from[i].isEmpty()) {
        continue;
      }
      Path source = new Path(from[i]);
      Path target = new Path(to[i]);
      moves.add(() -> {
        move(source.getFileSystem(conf), source, target);
        return null;
      });
    }
    inParallel(moves, threads);
  }

  /** Delete each path (one per line; a folder with everything in it). */
  public static void deleteAll(SparkSession spark, String paths, int threads) throws Exception {
    Configuration conf = spark.sessionState().newHadoopConf();
    List<java.util.concurrent.Callable<Void>> deletes = new ArrayList<>();
    for (String path : paths.split("\n")) {
      if (!path.isEmpty()) {
        Path located = new Path(path);
        deletes.add(() -> {
          located.getFileSystem(conf).delete(located, true);
          return null;
        });
      }
    }
    inParallel(deletes, threads);
  }

  private static void move(FileSystem fs, Path source, Path target) throws IOException {
    fs.mkdirs(target.getParent());
    boolean renamed;
    try {
      renamed = fs.rename(source, target);
    } catch (org.apache.hadoop.fs.FileAlreadyExistsException exists) {
      renamed = false;  // S3A's answer where a local file system says false
    }
    if (renamed) {
      return;
    }
    if (fs.isFile(source) && fs.exists(target)
        && fs.getFileStatus(target).getLen() == fs.getFileStatus(source).getLen()) {
      fs.delete(source, false);
      return;
    }
    throw new IOException("could not move " + source + " to " + target);
  }

  private static void inParallel(List<java.util.concurrent.Callable<Void>> work, int threads)
      throws Exception {
    if (work.isEmpty()) {
      return;
    }
    ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, Math.min(threads,
        work.size())));
    try {
      for (Future<Void> done : pool.invokeAll(work)) {
        try {
          done.get();
        } catch (ExecutionException failed) {
          Throwable cause = failed.getCause();
          throw cause instanceof Exception ? (Exception) cause : failed;
        }
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /** A table's (a frame's) files, one per line: handed to Python in one call. */
  public static String inputFiles(Dataset<Row> frame) {
    return String.join("\n", frame.inputFiles());
  }

  /**
   * The size and modification time (ms) of each file of {@code paths} (one per line) that
   * exists, as {@link #SCHEMA}'s first three columns, from one listing of each folder.
   */
  public static Dataset<Row> identities(SparkSession spark, String paths) throws IOException {
    List<Row> rows = new ArrayList<>();
    for (Tuple2<String, FileStatus> file : statuses(spark.sessionState().newHadoopConf(), paths,
        false)) {
      rows.add(RowFactory.create(file._1(), file._2().getLen(),
          file._2().getModificationTime()));
    }
    return spark.createDataFrame(rows, new StructType(Arrays.copyOfRange(SCHEMA.fields(), 0, 3)));
  }

  /**
   * Each path with its status, from one listing of every folder the paths lie in (a few
   * files of a folder asked for by name); with {@code all}, a path that is not there fails
   * the call, named.
   */
  static List<Tuple2<String, FileStatus>> statuses(Configuration conf, String paths, boolean all)
      throws IOException {
    Map<String, Path> wanted = new LinkedHashMap<>();
    for (String path : paths.split("\n")) {
      if (!path.isEmpty()) {
        wanted.put(path, parse(path));
      }
    }
    Map<Path, List<String>> byFolder = new LinkedHashMap<>();
    for (Map.Entry<String, Path> entry : wanted.entrySet()) {
      byFolder.computeIfAbsent(entry.getValue().getParent(), k -> new ArrayList<>())
          .add(entry.getKey());
    }
    Map<String, FileStatus> found = new HashMap<>();
    for (Map.Entry<Path, List<String>> folder : byFolder.entrySet()) {
      FileSystem fs = folder.getKey().getFileSystem(conf);
      if (folder.getValue().size() <= STATUS_EACH_UP_TO) {
        // A few files of a folder that may hold thousands: asked for by name, one request
        // each, where a listing costs a request per thousand files.
        for (String path : folder.getValue()) {
          try {
            found.put(path, fs.getFileStatus(wanted.get(path)));
          } catch (FileNotFoundException gone) {
            // named below
          }
        }
        continue;
      }
      Map<Path, FileStatus> listed = new HashMap<>();
      try {
        for (FileStatus status : fs.listStatus(folder.getKey())) {
          listed.put(status.getPath(), status);
        }
      } catch (FileNotFoundException gone) {
        // every file of the folder is missing: named below
      }
      for (String path : folder.getValue()) {
        FileStatus status = listed.get(fs.makeQualified(wanted.get(path)));
        if (status != null) {
          found.put(path, status);
        }
      }
    }
    List<Tuple2<String, FileStatus>> files = new ArrayList<>();
    List<String> missing = new ArrayList<>();
    for (String path : wanted.keySet()) {
      FileStatus status = found.get(path);
      if (status == null) {
        missing.add(path);
      } else {
        files.add(new Tuple2<>(path, status));
      }
    }
    if (all && !missing.isEmpty()) {
      throw new FileNotFoundException(
          "zspark: " + missing.size() + " data files are gone, e.g. " + missing.get(0));
    }
    return files;
  }

  private static Path parse(String path) {
    try {
      return new Path(new URI(path));  // escaped already, as Spark lists files
    } catch (URISyntaxException error) {
      throw new IllegalArgumentException("zspark: not a file URI: " + path, error);
    }
  }

  /** A task's files: their tails, read with a few in flight, in the order given. */
  static final class ReadTails
      implements FlatMapFunction<Iterator<Tuple2<String, FileStatus>>, Row> {
    private final Broadcast<SerializableConfiguration> conf;
    private final int readers;
    private final int tailBytes;

    ReadTails(Broadcast<SerializableConfiguration> conf, int readers, int tailBytes) {
      this.conf = conf;
      this.readers = readers;
      this.tailBytes = tailBytes;
    }

    @Override
    public Iterator<Row> call(Iterator<Tuple2<String, FileStatus>> files) throws Exception {
      Configuration hadoop = conf.value().value();
      List<Future<Row>> pending = new ArrayList<>();
      ExecutorService pool = Executors.newFixedThreadPool(readers);
      try {
        while (files.hasNext()) {
          Tuple2<String, FileStatus> file = files.next();
          pending.add(pool.submit(() -> tail(hadoop, file._1(), file._2(), tailBytes)));
        }
        List<Row> rows = new ArrayList<>(pending.size());
        for (Future<Row> row : pending) {
          rows.add(row.get());
        }
        return rows.iterator();
      } catch (ExecutionException failed) {
        Throwable cause = failed.getCause();
        throw cause instanceof Exception ? (Exception) cause : failed;
      } finally {
        pool.shutdownNow();
      }
    }
  }

  /** One file's tail: its footer, the footer's length and the magic. */
  static Row tail(Configuration conf, String path, FileStatus status, int tailBytes)
      throws IOException {
    long size = status.getLen();
    FileSystem fs = status.getPath().getFileSystem(conf);
    byte[] tail;
    try (FSDataInputStream in = fs.openFile(status.getPath()).withFileStatus(status)
        .opt("fs.option.openfile.read.policy", "random").build().get()) {
      tail = readTail(in, size, (int) Math.min(size, tailBytes), path);
      int length = footerLength(tail, path);
      if (length + 8 > tail.length) {
        tail = readTail(in, size, length + 8, path);
      }
      tail = Arrays.copyOfRange(tail, tail.length - (length + 8), tail.length);
    } catch (InterruptedException | ExecutionException error) {
      throw new IOException("zspark: cannot read the Parquet footer of " + path + ": "
          + error, error);
    }
    return RowFactory.create(path, size, status.getModificationTime(), tail);
  }

  private static byte[] readTail(FSDataInputStream in, long size, int length, String path)
      throws IOException {
    if (length > size) {
      throw new IOException("zspark: cannot read the Parquet footer of " + path
          + ": a footer of " + length + " bytes in a file of " + size);
    }
    byte[] bytes = new byte[length];
    in.readFully(size - length, bytes);
    return bytes;
  }

  private static int footerLength(byte[] tail, String path) throws IOException {
    int n = tail.length;
    if (n < 8 || !Arrays.equals(Arrays.copyOfRange(tail, n - 4, n), MAGIC)) {
      throw new IOException("zspark: cannot read the Parquet footer of " + path
          + ": not a Parquet file (no magic at its end)");
    }
    return (tail[n - 8] & 0xff) | (tail[n - 7] & 0xff) << 8 | (tail[n - 6] & 0xff) << 16
        | (tail[n - 5] & 0xff) << 24;
  }
}
