package io.tamis.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A dataset opened on the driver: its footers read once by the Rust core, its Spark schema,
 * and what planning needs. The native handle is freed when nothing refers to this any more.
 */
final class TamisDataset {
    /** One allocator for the JVM: imported buffers are the Rust core's, counted but not copied. */
    static final BufferAllocator ROOT = new RootAllocator(Long.MAX_VALUE);
    private static final Cleaner CLEANER = Cleaner.create();
    /** The field metadata key of a decimal crossing as its unscaled longs (see types.rs). */
    static final String DECIMAL_KEY = "tamis.decimal";

    final Options options;
    final StructType schema;
    /** The schema's types by column name. */
    final java.util.Map<String, DataType> types = new java.util.TreeMap<>();
    final String root;
    /** [name, Arrow type] of the hive partition columns. */
    final List<List<String>> partitionTypes = new ArrayList<>();
    final List<String> int96 = new ArrayList<>();
    final Set<String> nanosecond = new HashSet<>();
    /** Columns every file has. */
    final Set<String> everywhere = new HashSet<>();
    /** The Spark-facing Arrow type of each atomic column, as text the tasks convert to. */
    final java.util.Map<String, String> targets = new java.util.TreeMap<>();
    /**
     * A table's {@code location}, {@code format} and {@code version}: the snapshot every task
     * opens again (its deletes, column mapping and partition values); null for files.
     */
    final java.util.Map<String, Object> table;
    private final long[] handle;

    private TamisDataset(Options options) {
        this.options = options;
        long h = Native.openDataset(options.path, Json.write(options.storage), Json.write(options.table));
        this.handle = new long[] {h};
        long[] cell = this.handle;
        CLEANER.register(this, () -> {
            synchronized (cell) {
                if (cell[0] != 0) {
                    Native.closeDataset(cell[0]);
                    cell[0] = 0;
                }
            }
        });
        JsonNode described;
        Schema arrow;
        try (BufferAllocator allocator = ROOT.newChildAllocator("schema", 0, Long.MAX_VALUE);
             ArrowSchema exported = ArrowSchema.allocateNew(allocator)) {
            described = Json.read(Native.describe(h, exported.memoryAddress()));
            arrow = Data.importSchema(allocator, exported, null);
        }
        this.root = described.path("root").isNull() ? null : described.path("root").asText();
        JsonNode table = described.path("table");
        this.table = table.isObject() ? new java.util.TreeMap<>(Json.MAPPER.convertValue(table,
            new com.fasterxml.jackson.core.type.TypeReference<java.util.Map<String, Object>>() {})) : null;
        for (JsonNode pair : described.path("partition_types")) {
            partitionTypes.add(List.of(pair.get(0).asText(), pair.get(1).asText()));
        }
        described.path("int96").forEach(n -> int96.add(n.asText()));
        described.path("nanosecond").forEach(n -> nanosecond.add(n.asText()));
        described.path("everywhere").forEach(n -> everywhere.add(n.asText()));
        described.path("targets").fields().forEachRemaining(e -> targets.put(e.getKey(), e.getValue().asText()));
        List<StructField> fields = new ArrayList<>();
        for (Field f : arrow.getFields()) {
            fields.add(DataTypes.createStructField(f.getName(), sparkType(f, options.path), true));
        }
        this.schema = DataTypes.createStructType(fields);
        fields.forEach(f -> types.put(f.name(), f.dataType()));
    }

    static TamisDataset open(Options options) {
        return new TamisDataset(options);
    }

    /** The dataset's schema, or the named columns of it in that order. */
    StructType columns(List<String> names) {
        if (names == null) {
            return schema;
        }
        List<StructField> fields = new ArrayList<>();
        List<String> missing = new ArrayList<>();
        for (String name : names) {
            StructField f = java.util.Arrays.stream(schema.fields())
                .filter(x -> x.name().equals(name)).findFirst().orElse(null);
            if (f == null) {
                missing.add(name);
            } else {
                fields.add(f);
            }
        }
        if (!missing.isEmpty() || fields.isEmpty()) {
            throw new IllegalArgumentException("invalid argument: " + options.path
                + ": option columns names no column of the dataset: "
                + (missing.isEmpty() ? "''" : String.join(", ", missing)));
        }
        return DataTypes.createStructType(fields);
    }

    long handle() {
        synchronized (handle) {
            return handle[0];
        }
    }

    /** Frees the native dataset now (its footers), rather than when the JVM collects this. */
    void close() {
        synchronized (handle) {
            if (handle[0] != 0) {
                Native.closeDataset(handle[0]);
                handle[0] = 0;
            }
        }
    }

    // Each native call is followed by a reachability fence: until it returns, this object (and
    // so the handle its Cleaner would free) stays reachable.

    boolean binds(String sql) {
        try {
            return Native.binds(handle(), sql);
        } finally {
            java.lang.ref.Reference.reachabilityFence(this);
        }
    }

    String plan(String filter, long maxBytes, int minSplits) {
        try {
            return Native.plan(handle(), filter, maxBytes, minSplits);
        } finally {
            java.lang.ref.Reference.reachabilityFence(this);
        }
    }

    String aggregate(String request) {
        try {
            return Native.aggregate(handle(), request);
        } finally {
            java.lang.ref.Reference.reachabilityFence(this);
        }
    }

    /** [rows, uncompressed bytes of {@code columns}] left under {@code filter}. */
    long[] estimate(String filter, List<String> columns) {
        try {
            JsonNode e = Json.read(Native.estimate(handle(), filter, Json.write(columns)));
            return new long[] {e.path("rows").asLong(), e.path("bytes").asLong()};
        } finally {
            java.lang.ref.Reference.reachabilityFence(this);
        }
    }

    /** Spark's type for a field of the Spark-facing Arrow schema the Rust core exported. */
    static DataType sparkType(Field field, String path) {
        String decimal = field.getMetadata() == null ? null : field.getMetadata().get(DECIMAL_KEY);
        if (decimal != null) {
            String[] ps = decimal.split(",");
            return DataTypes.createDecimalType(Integer.parseInt(ps[0]), Integer.parseInt(ps[1]));
        }
        ArrowType t = field.getType();
        if (t instanceof ArrowType.Bool) {
            return DataTypes.BooleanType;
        }
        if (t instanceof ArrowType.Int) {
            switch (((ArrowType.Int) t).getBitWidth()) {
                case 8: return DataTypes.ByteType;
                case 16: return DataTypes.ShortType;
                case 32: return DataTypes.IntegerType;
                default: return DataTypes.LongType;
            }
        }
        if (t instanceof ArrowType.FloatingPoint) {
            return ((ArrowType.FloatingPoint) t).getPrecision() == FloatingPointPrecision.DOUBLE
                ? DataTypes.DoubleType : DataTypes.FloatType;
        }
        if (t instanceof ArrowType.Decimal) {
            ArrowType.Decimal d = (ArrowType.Decimal) t;
            return DataTypes.createDecimalType(d.getPrecision(), d.getScale());
        }
        if (t instanceof ArrowType.Utf8) {
            return DataTypes.StringType;
        }
        if (t instanceof ArrowType.Binary) {
            return DataTypes.BinaryType;
        }
        if (t instanceof ArrowType.Date && ((ArrowType.Date) t).getUnit() == DateUnit.DAY) {
            return DataTypes.DateType;
        }
        if (t instanceof ArrowType.Timestamp
            && ((ArrowType.Timestamp) t).getUnit() == TimeUnit.MICROSECOND) {
            return ((ArrowType.Timestamp) t).getTimezone() != null
                ? DataTypes.TimestampType : DataTypes.TimestampNTZType;
        }
        if (t instanceof ArrowType.Null) {
            return DataTypes.NullType;
        }
        if (t instanceof ArrowType.List) {
            return DataTypes.createArrayType(sparkType(field.getChildren().get(0), path), true);
        }
        if (t instanceof ArrowType.Map) {
            List<Field> kv = field.getChildren().get(0).getChildren();
            return DataTypes.createMapType(sparkType(kv.get(0), path), sparkType(kv.get(1), path), true);
        }
        if (t instanceof ArrowType.Struct) {
            List<StructField> children = new ArrayList<>();
            for (Field c : field.getChildren()) {
                children.add(DataTypes.createStructField(c.getName(), sparkType(c, path), true));
            }
            return DataTypes.createStructType(children);
        }
        throw new UnsupportedOperationException("unsupported: " + path + ": column '"
            + field.getName() + "': Arrow type " + t + " has no Spark type");
    }
}
