package io.tamis.spark;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The JNI entry points of the Rust core ({@code crates/tamis-spark/src/lib.rs}). Errors arrive
 * as exceptions naming the file and column: {@link IllegalArgumentException} for a bad request,
 * {@link UnsupportedOperationException} for what tamis does not read, {@link TamisException}
 * for the rest (a Rust panic included: it never unwinds into the JVM).
 */
final class Native {
    /** Where the jar keeps the library. */
    private static final String RESOURCE = "/native/linux-x86_64/libtamis_spark.so";

    static {
        load();
    }

    private Native() {}

    /**
     * Loads the library: from {@code -Dtamis.spark.native=PATH} or {@code TAMIS_SPARK_NATIVE}
     * when set (development), else from the jar, copied once per JVM to a temporary file.
     */
    private static void load() {
        String explicit = System.getProperty("tamis.spark.native", System.getenv("TAMIS_SPARK_NATIVE"));
        if (explicit != null && !explicit.isEmpty()) {
            System.load(explicit);
            return;
        }
        String os = System.getProperty("os.name", "").toLowerCase();
        String arch = System.getProperty("os.arch", "");
        if (!os.contains("linux") || !(arch.equals("amd64") || arch.equals("x86_64"))) {
            throw new UnsupportedOperationException(
                "unsupported: the tamis jar carries its native library for linux x86-64 only, not "
                    + os + " " + arch);
        }
        try (InputStream in = Native.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new TamisException("internal error: the tamis jar has no " + RESOURCE);
            }
            Path file = Files.createTempFile("libtamis_spark", ".so");
            file.toFile().deleteOnExit();
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            System.load(file.toString());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot unpack tamis's native library", e);
        }
    }

    /**
     * Opens a dataset, reading its footers; {@code storage}: object-store options as JSON;
     * {@code table}: which version of a table ({@code version}, {@code timestamp},
     * {@code format}) as JSON.
     */
    static native long openDataset(String path, String storage, String table);

    static native void closeDataset(long handle);

    /** Exports the Spark-facing schema into an {@code ArrowSchema}; returns the rest as JSON. */
    static native String describe(long handle, long schemaAddress);

    /** Whether tamis takes this SQL filter on the dataset. */
    static native boolean binds(long handle, String filter);

    /** Input partitions as JSON: row groups left under {@code filter} (or null), split by bytes. */
    static native String plan(long handle, String filter, long maxBytes, int minSplits);

    /** {"rows", "bytes"} of the row groups left under {@code filter}, bytes of {@code columns}. */
    static native String estimate(long handle, String filter, String columns);

    /**
     * Starts one task's scan into the {@code ArrowArrayStream} at {@code streamAddress}; returns
     * a handle to its metrics and canceller, freed by {@link #closeMetrics}.
     */
    static native long scan(String request, long streamAddress);

    /** The scan's counters so far, as JSON. */
    static native String metrics(long handle);

    /** Stops the scan from any thread: its next batch is a "cancelled" error. */
    static native void cancel(long handle);

    static native void closeMetrics(long handle);

    /** Aggregates answered from the footers: their values as JSON, or "null". */
    static native String aggregate(long handle, String request);

    /** Bytes the native library holds now. */
    static native long liveBytes();
}
