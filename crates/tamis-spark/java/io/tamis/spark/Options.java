package io.tamis.spark;

import java.io.Serializable;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The source's options ({@code .option(key, value)}, case-insensitive):
 *
 * <ul>
 *   <li>{@code path}: a file, directory, glob or object-store URL (what {@code load(path)} and
 *       {@code LOCATION} give);
 *   <li>{@code maxPartitionBytes}: compressed bytes per input partition (default Spark's
 *       {@code spark.sql.files.maxPartitionBytes}); a row group is never split;
 *   <li>{@code minPartitions}: at least this many partitions where there are enough row groups
 *       (default: Spark's default parallelism);
 *   <li>{@code threads}: tamis scan threads per task (default 1: a task is one core);
 *   <li>{@code batchSize}: rows per batch handed to Spark (default 32768: fewer batches to
 *       import; 8% less time than 8192 on whole integer columns);
 *   <li>{@code columns}: comma-separated columns the table has (default: all; Spark prunes
 *       columns by itself, this names a subset as the Python source's option did);
 *   <li>{@code pushdown}: {@code false} leaves every filter to Spark (default true);
 *   <li>{@code storage.<key>}: object-store options ({@code storage.endpoint},
 *       {@code storage.region}, {@code storage.access_key_id}, ...), used by the executors too;
 *   <li>{@code versionAsOf}, {@code timestampAsOf}: a Delta table's version or an Iceberg
 *       table's snapshot id, or the time whose version to read (as Delta's and Iceberg's own
 *       Spark readers name them; {@code snapshot-id} and {@code as-of-timestamp}, Iceberg's
 *       names, are taken too, the latter in milliseconds since the epoch);
 *   <li>{@code tableFormat}: {@code delta} or {@code iceberg}, where a root holds both.
 * </ul>
 */
final class Options implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final Set<String> KNOWN =
        Set.of("path", "maxpartitionbytes", "minpartitions", "threads", "batchsize", "columns",
            "pushdown", "versionasof", "timestampasof", "snapshot-id", "as-of-timestamp",
            "tableformat");
    /** Keys Spark itself adds to a catalog table's options. */
    private static final Set<String> SPARK_KEYS = Set.of("provider", "location", "owner", "external",
        "__required_write_privileges__", "is_managed_location");

    final String path;
    final Map<String, String> storage = new TreeMap<>();
    final Long maxPartitionBytes;
    final Integer minPartitions;
    final int threads;
    final int batchSize;
    /** The columns named by the {@code columns} option, or null. */
    final java.util.List<String> columns;
    final boolean pushdown;
    /** Which version of a table to read: {@code version}, {@code timestamp}, {@code format}. */
    final Map<String, String> table = new TreeMap<>();

    Options(Map<String, String> options) {
        Map<String, String> rest = new TreeMap<>();
        String location = null;
        for (Map.Entry<String, String> e : options.entrySet()) {
            String key = e.getKey().toLowerCase(Locale.ROOT);
            if (key.startsWith("storage.")) {
                storage.put(e.getKey().substring("storage.".length()), e.getValue());
            } else if (key.equals("location")) {
                location = e.getValue();
            } else if (!SPARK_KEYS.contains(key)) {
                rest.put(key, e.getValue());
            }
        }
        for (String key : rest.keySet()) {
            if (!KNOWN.contains(key)) {
                throw new IllegalArgumentException("invalid argument: unknown tamis source option '"
                    + key + "' (maxPartitionBytes, minPartitions, threads, batchSize, columns, pushdown, "
                    + "versionAsOf, timestampAsOf, tableFormat, storage.<key>)");
            }
        }
        String p = rest.getOrDefault("path", location);
        if (p == null || p.isEmpty()) {
            throw new IllegalArgumentException(
                "invalid argument: the tamis source needs a path: spark.read.format(\"tamis\").load(path)");
        }
        path = localPath(p);
        Long bytes = positive(rest, "maxPartitionBytes");
        maxPartitionBytes = bytes;
        Long min = positive(rest, "minPartitions");
        minPartitions = min == null ? null : (int) Math.min(min, Integer.MAX_VALUE);
        Long t = positive(rest, "threads");
        threads = t == null ? 1 : (int) Math.min(t, 1024);
        Long b = positive(rest, "batchSize");
        batchSize = b == null ? 32768 : (int) Math.min(b, Integer.MAX_VALUE);
        String names = rest.get("columns");
        columns = names == null ? null : java.util.Arrays.stream(names.split(","))
            .map(String::trim).filter(n -> !n.isEmpty()).collect(java.util.stream.Collectors.toList());
        String push = rest.getOrDefault("pushdown", "true").trim().toLowerCase(Locale.ROOT);
        if (!push.equals("true") && !push.equals("false")) {
            throw new IllegalArgumentException(
                "invalid argument: option pushdown must be true or false, not '" + push + "'");
        }
        pushdown = push.equals("true");
        String version = rest.getOrDefault("versionasof", rest.get("snapshot-id"));
        if (version != null) {
            table.put("version", version.trim());
        }
        String time = rest.get("timestampasof");
        if (time != null) {
            table.put("timestamp", time.trim());
        }
        String millis = rest.get("as-of-timestamp");
        if (millis != null) {
            try {
                table.put("timestamp", java.time.Instant.ofEpochMilli(Long.parseLong(millis.trim())).toString());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("invalid argument: option as-of-timestamp must be "
                    + "milliseconds since the epoch, not '" + millis + "'");
            }
        }
        String format = rest.get("tableformat");
        if (format != null) {
            table.put("format", format.trim());
        }
    }

    /** A {@code file:} URI (what a catalog table's LOCATION becomes) as a local path. */
    static String localPath(String path) {
        if (!path.regionMatches(true, 0, "file:", 0, 5)) {
            return path;
        }
        try {
            return java.nio.file.Paths.get(new java.net.URI(path)).toString();
        } catch (java.net.URISyntaxException | IllegalArgumentException e) {
            throw new IllegalArgumentException("invalid argument: path '" + path + "': " + e.getMessage());
        }
    }

    private static Long positive(Map<String, String> rest, String key) {
        String text = rest.get(key.toLowerCase(Locale.ROOT));
        if (text == null) {
            return null;
        }
        long n;
        try {
            n = Long.parseLong(text.trim());
        } catch (NumberFormatException e) {
            n = 0;
        }
        if (n <= 0) {
            throw new IllegalArgumentException("invalid argument: option " + key
                + " must be a positive integer, not '" + text + "'");
        }
        return n;
    }
}
