package io.tamis.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.execution.vectorized.ConstantColumnVector;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * One task's scan: the Rust core scans the partition's row groups and fills an Arrow C stream;
 * each batch's buffers become Spark column vectors without a copy, and are released when the
 * next batch is loaded or the reader closes (which also stops the native scan).
 */
final class TamisColumnarReader implements PartitionReader<ColumnarBatch> {
    private final ScanSpec spec;
    private BufferAllocator allocator;
    private ArrowReader reader;
    private ColumnarBatch batch;
    private final List<ColumnVector> owned = new ArrayList<>();
    /** Rows still to count when no column and no filter is read ({@code count(*)}), or -1. */
    private long countOnly = -1;
    /** The native scan's handle, for its metrics and to cancel it (0: none, or closed). */
    private long metrics;
    /** The task reading (null outside one), whose kill stops the native scan. */
    private final TaskContext task = TaskContext.get();
    /** The values at close, for a last update after it. */
    private CustomTaskMetric[] closedMetrics = new CustomTaskMetric[0];

    TamisColumnarReader(ScanSpec spec, TamisPartition partition) {
        this.spec = spec;
        Set<String> present = new TreeSet<>(partition.columns);
        spec.partitionTypes.forEach(pair -> present.add(pair.get(0)));
        List<String> where = new ArrayList<>();
        List<Filters.Conjunct> conjuncts = new ArrayList<>(spec.conjuncts);
        conjuncts.addAll(partition.runtime);
        List<Map<String, Object>> keyLists = new ArrayList<>();
        for (Filters.Conjunct c : conjuncts) {
            if (present.containsAll(c.columns)) {
                where.add("(" + c.sql + ")");
                if (c.keys != null) {
                    Object keys = c.keys instanceof org.apache.spark.broadcast.Broadcast
                        ? ((org.apache.spark.broadcast.Broadcast<?>) c.keys).value() : c.keys;
                    keyLists.add(Map.of("column", c.keyColumn,
                        keys instanceof long[] ? "ints" : "strings", keys));
                }
            } else if (!Boolean.TRUE.equals(c.onNull)) {
                return; // the columns are NULL in all these files: no row passes
            }
        }
        List<String> columns = new ArrayList<>();
        for (StructField f : spec.readSchema.fields()) {
            if (present.contains(f.name())) {
                columns.add(f.name());
            }
        }
        if (columns.isEmpty() && where.isEmpty()) {
            if (spec.table == null) {
                countOnly = partition.rows; // the footers' row counts: nothing to read
                return;
            }
            // A table's footers count the rows its deletes removed: one column is read.
            columns.add(present.iterator().next());
        }
        if (columns.isEmpty()) {
            // For the row counts: a column the filter reads anyway.
            columns.add(conjuncts.stream().filter(c -> present.containsAll(c.columns))
                .findFirst().map(c -> c.columns.iterator().next()).orElseThrow());
        }
        List<Object> parts = new ArrayList<>();
        for (TamisPartition.Part p : partition.parts) {
            parts.add(List.of(p.location, p.size, p.first, p.end));
        }
        Map<String, Object> request = new LinkedHashMap<>();
        request.put("root", spec.root);
        request.put("table", spec.table);
        request.put("parts", parts);
        request.put("where", where.isEmpty() ? null : String.join(" AND ", where));
        request.put("keys", keyLists);
        request.put("columns", columns);
        request.put("int96", spec.int96);
        request.put("targets", spec.targets);
        request.put("partition_types", spec.partitionTypes);
        request.put("storage", spec.storage);
        request.put("threads", spec.threads);
        request.put("batch_size", spec.batchSize);
        request.put("limit", spec.limit);
        request.put("cache", spec.cache);
        allocator = TamisDataset.ROOT.newChildAllocator("tamis-scan", 0, Long.MAX_VALUE);
        try (ArrowArrayStream stream = ArrowArrayStream.allocateNew(allocator)) {
            metrics = Native.scan(Json.write(request), stream.memoryAddress());
            if (task != null) {
                TaskWatch.add(this);
            }
            try {
                reader = Data.importArrayStream(allocator, stream);
            } catch (RuntimeException e) {
                stream.release(); // the native scan, which the importer did not take
                throw e;
            }
            check(partition);
        } catch (RuntimeException | IOException e) {
            close();
            throw e instanceof RuntimeException ? (RuntimeException) e
                : new UncheckedIOException((IOException) e);
        }
    }

    /**
     * Every column the native scan returns has the type the driver gave Spark: a mismatch is a
     * clear error, never values read as the wrong type.
     */
    private void check(TamisPartition partition) throws IOException {
        Map<String, org.apache.spark.sql.types.DataType> expected = new java.util.HashMap<>();
        for (StructField f : spec.readSchema.fields()) {
            expected.put(f.name(), f.dataType());
        }
        for (org.apache.arrow.vector.types.pojo.Field f : reader.getVectorSchemaRoot().getSchema().getFields()) {
            org.apache.spark.sql.types.DataType want = expected.get(f.getName());
            if (want == null) {
                continue; // read for the row counts only
            }
            org.apache.arrow.vector.types.pojo.Field typed = f.getDictionary() == null ? f
                : reader.lookup(f.getDictionary().getId()).getVector().getField();
            org.apache.spark.sql.types.DataType got = TamisDataset.sparkType(typed, partition.toString());
            if (!got.equals(want)) {
                throw new TamisException("unsupported: " + partition + ": column '" + f.getName()
                    + "' has type " + got.simpleString() + " in these files where the dataset has "
                    + want.simpleString());
            }
        }
    }

    /** The task reading, or null. */
    TaskContext task() {
        return task;
    }

    /**
     * Stops the native scan (its thread may be inside a batch read, where Spark's interrupt does
     * not reach): called by {@link TaskWatch} when Spark kills the task.
     */
    synchronized void cancel() {
        if (metrics != 0) {
            Native.cancel(metrics);
        }
    }

    @Override
    public boolean next() throws IOException {
        if (task != null) {
            task.killTaskIfInterrupted();
        }
        closeOwned();
        if (countOnly > 0) {
            int rows = (int) Math.min(countOnly, spec.batchSize);
            countOnly -= rows;
            StructField[] fields = spec.readSchema.fields();
            ColumnVector[] nulls = new ColumnVector[fields.length];
            for (int i = 0; i < fields.length; i++) {
                nulls[i] = vector(null, fields[i], rows); // columns these files lack
            }
            batch = new ColumnarBatch(nulls, rows);
            return true;
        }
        if (reader == null || !reader.loadNextBatch()) {
            return false;
        }
        VectorSchemaRoot root = reader.getVectorSchemaRoot();
        int rows = root.getRowCount();
        StructField[] fields = spec.readSchema.fields();
        ColumnVector[] vectors = new ColumnVector[fields.length];
        for (int i = 0; i < fields.length; i++) {
            // Null where these files lack the column.
            vectors[i] = vector(root.getVector(fields[i].name()), fields[i], rows);
        }
        batch = new ColumnarBatch(vectors, rows);
        return true;
    }

    private ColumnVector vector(FieldVector v, StructField field, int rows) {
        if (v == null) {
            ConstantColumnVector nulls = new ConstantColumnVector(rows, field.dataType());
            nulls.setNull();
            owned.add(nulls);
            return nulls;
        }
        DictionaryEncoding encoding = v.getField().getDictionary();
        if (encoding != null) {
            // A row group's dictionary of strings or binaries and the rows' codes.
            FieldVector entries = reader.lookup(encoding.getId()).getVector();
            return new StringVector((IntVector) v, (BaseVariableWidthVector) entries,
                field.dataType());
        }
        if (v instanceof BaseVariableWidthVector) {
            return new StringVector((BaseVariableWidthVector) v, field.dataType());
        }
        if (v instanceof BaseFixedWidthVector && FixedWidthVector.fits((BaseFixedWidthVector) v, field.dataType())) {
            // Decimals of at most 18 digits arrive as their 64-bit unscaled values.
            return new FixedWidthVector((BaseFixedWidthVector) v, field.dataType());
        }
        return new ArrowColumnVector(v); // booleans, 16-byte decimals, nested columns
    }

    @Override
    public synchronized CustomTaskMetric[] currentMetricsValues() {
        if (metrics == 0) {
            return closedMetrics;
        }
        return TamisMetrics.values(Json.read(Native.metrics(metrics)));
    }

    @Override
    public ColumnarBatch get() {
        return batch;
    }

    private void closeOwned() {
        owned.forEach(ColumnVector::close);
        owned.clear();
    }

    @Override
    public void close() {
        TaskWatch.remove(this);
        closeOwned();
        try {
            if (reader != null) {
                reader.close(); // releases the C stream: the native scan stops
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            reader = null;
            synchronized (this) {
                if (metrics != 0) {
                    closedMetrics = currentMetricsValues();
                    Native.closeMetrics(metrics);
                    metrics = 0;
                }
            }
            if (allocator != null) {
                allocator.close();
                allocator = null;
            }
        }
    }
}
