package io.tamis.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.connector.read.SupportsRuntimeV2Filtering;
import java.util.OptionalLong;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The planned scan: input partitions are runs of row groups of about
 * {@code maxPartitionBytes} compressed bytes, planned on the driver from the footers read
 * once; row groups the pushed filters rule out by partition values or statistics get no task.
 *
 * <p>Runtime filters: Spark's dynamic pruning hands the probe side of a join the build side's
 * keys ({@link #filter}, an {@code IN} list), which become conjuncts of the scan like the pushed
 * ones: row groups and pages pruned by their statistics, the list evaluated on encoded values.
 */
final class TamisScan implements Scan, Batch, SupportsRuntimeV2Filtering, SupportsReportStatistics {
    /** The longest key list taken as a runtime filter (DataFusion's default is the same). */
    static final int RUNTIME_MAX_KEYS = 16384;
    /**
     * The longest key list probed as a Bloom filter instead: the keys (8 bytes each for
     * integers) are broadcast to the executors, and each task builds a filter of 2 bytes a key.
     */
    static final int RUNTIME_MAX_BLOOM_KEYS = 1 << 22;
    private final TamisDataset dataset;
    private final StructType readSchema;
    private final List<Filters.Conjunct> pushed;
    private final List<String> leftToSpark;
    private final List<Filters.Conjunct> runtime = new ArrayList<>();
    /** Row groups the last planning ruled out (no task reads them). */
    private long prunedPlanning;

    private final Integer limit;
    /** An aggregate answered from the footers: the scan is its one row. */
    private final FooterAggregate aggregate;

    TamisScan(TamisDataset dataset, StructType readSchema, List<Filters.Conjunct> pushed,
              List<String> leftToSpark, Integer limit, FooterAggregate aggregate) {
        this.dataset = dataset;
        this.aggregate = aggregate;
        this.limit = limit;
        this.readSchema = readSchema;
        this.pushed = new ArrayList<>(pushed);
        this.leftToSpark = new ArrayList<>(leftToSpark);
    }

    @Override
    public StructType readSchema() {
        return readSchema;
    }

    /**
     * Scans of one loaded dataset with the same columns, pushed filters, limit and aggregate
     * are equal, so that Spark reuses one's exchange or broadcast for the other (a table read
     * twice in a query; a runtime filter's build side that is also a broadcast join's). Runtime
     * filters are not compared here: Spark compares its scan nodes' runtime filters itself.
     */
    @Override
    public boolean equals(Object other) {
        if (!(other instanceof TamisScan)) {
            return false;
        }
        TamisScan o = (TamisScan) other;
        return dataset == o.dataset && readSchema.equals(o.readSchema)
            && sqlOf(pushed).equals(sqlOf(o.pushed)) && java.util.Objects.equals(limit, o.limit)
            && aggregate == o.aggregate;
    }

    @Override
    public int hashCode() {
        return java.util.Objects.hash(System.identityHashCode(dataset), readSchema, sqlOf(pushed), limit);
    }

    private static List<String> sqlOf(List<Filters.Conjunct> conjuncts) {
        return conjuncts.stream().map(c -> c.sql).collect(Collectors.toList());
    }

    @Override
    public String description() {
        String taken = pushed.stream().map(c -> c.text).collect(Collectors.joining(", "));
        return "tamis " + dataset.options.path + " PushedFilters: [" + taken + "]"
            + " LeftToSpark: [" + String.join(", ", leftToSpark) + "]"
            + (limit == null ? "" : " Limit: " + limit)
            + (aggregate == null ? "" : " PushedAggregates (from footers): " + aggregate.schema.simpleString());
    }

    /** Columns of atomic type: those a runtime key list can filter. */
    @Override
    public NamedReference[] filterAttributes() {
        List<NamedReference> out = new ArrayList<>();
        for (StructField f : readSchema.fields()) {
            DataType t = f.dataType();
            if (!(t instanceof ArrayType || t instanceof MapType || t instanceof StructType
                || t == DataTypes.BinaryType || t == DataTypes.NullType)) {
                out.add(Expressions.column(f.name()));
            }
        }
        return out.toArray(new NamedReference[0]);
    }

    /** Takes the runtime filters tamis evaluates exactly; the rest are dropped (Spark's join
     * still applies them). Called before the partitions are planned again. */
    @Override
    public void filter(Predicate[] predicates) {
        if (!dataset.options.pushdown) {
            return;
        }
        runtime.clear(); // each call hands over the scan's runtime filters anew
        for (Predicate p : predicates) {
            if (p.name().equals("IN") && p.children().length - 1 > RUNTIME_MAX_KEYS) {
                if (p.children().length - 1 <= RUNTIME_MAX_BLOOM_KEYS) {
                    Filters.Conjunct keys = Filters.keyList(p, dataset.types, dataset.nanosecond);
                    if (keys != null && dataset.binds(keys.sql) && !taken(keys)) {
                        // Broadcast: each executor fetches the keys once, not every task.
                        Object shared = org.apache.spark.api.java.JavaSparkContext
                            .fromSparkContext(SparkContext.getOrCreate()).broadcast(keys.keys);
                        runtime.add(new Filters.Conjunct(keys.sql, keys.columns, keys.onNull,
                            keys.text, shared, keys.keyColumn));
                    }
                }
                continue;
            }
            Filters.Conjunct c = Filters.translate(p, dataset.types, dataset.nanosecond);
            if (c != null && c.columns.size() == 1 && dataset.binds(c.sql) && !taken(c)) {
                runtime.add(c);
            }
        }
    }

    /**
     * Whether an equal runtime filter was taken already (Spark's dynamic pruning and the
     * session extension's may hand over the same keys).
     */
    private boolean taken(Filters.Conjunct c) {
        return runtime.stream().anyMatch(r -> r.text.equals(c.text) && r.sql.equals(c.sql));
    }

    /** The pushed and the runtime conjuncts. */
    private List<Filters.Conjunct> conjuncts() {
        List<Filters.Conjunct> all = new ArrayList<>(pushed);
        all.addAll(runtime);
        return all;
    }

    /**
     * Rows and uncompressed bytes of the read columns in the row groups left after pruning:
     * what Spark's planner sizes joins by (a small filtered side is broadcast, and only a
     * broadcast side's keys become runtime filters of the other side).
     */
    @Override
    public Statistics estimateStatistics() {
        if (aggregate != null) {
            return statistics(1, 8L * Math.max(1, readSchema.fields().length));
        }
        List<String> names = new ArrayList<>();
        for (StructField f : readSchema.fields()) {
            names.add(f.name());
        }
        long[] e = dataset.estimate(where(conjuncts()), names);
        // At least 8 bytes a row: a scan of no column (count(*)) still produces rows.
        return statistics(e[0], Math.max(e[1], e[0] * 8));
    }

    private static Statistics statistics(long rows, long bytes) {
        return new Statistics() {
            @Override
            public OptionalLong sizeInBytes() {
                return OptionalLong.of(bytes);
            }

            @Override
            public OptionalLong numRows() {
                return OptionalLong.of(rows);
            }
        };
    }

    @Override
    public org.apache.spark.sql.connector.metric.CustomMetric[] supportedCustomMetrics() {
        return TamisMetrics.all();
    }

    @Override
    public org.apache.spark.sql.connector.metric.CustomTaskMetric[] reportDriverMetrics() {
        return TamisMetrics.driver(prunedPlanning);
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    /** The SQL conjunction of the pushed filters, or null. */
    static String where(List<Filters.Conjunct> conjuncts) {
        if (conjuncts.isEmpty()) {
            return null;
        }
        return conjuncts.stream().map(c -> "(" + c.sql + ")").collect(Collectors.joining(" AND "));
    }

    @Override
    public InputPartition[] planInputPartitions() {
        if (aggregate != null) {
            return new InputPartition[] {new FooterAggregate.Partition(aggregate)};
        }
        long maxBytes = dataset.options.maxPartitionBytes != null
            ? dataset.options.maxPartitionBytes : SQLConf.get().filesMaxPartitionBytes();
        int minSplits = dataset.options.minPartitions != null
            ? dataset.options.minPartitions : SparkContext.getOrCreate().defaultParallelism();
        JsonNode planned = Json.read(dataset.plan(where(conjuncts()), maxBytes, minSplits));
        prunedPlanning = planned.path("row_groups").asLong() - planned.path("row_groups_left").asLong();
        List<InputPartition> out = new ArrayList<>();
        for (JsonNode split : planned.path("splits")) {
            List<TamisPartition.Part> parts = new ArrayList<>();
            for (JsonNode p : split.path("parts")) {
                parts.add(new TamisPartition.Part(p.get(0).asText(), p.get(1).asLong(),
                    p.get(2).asInt(), p.get(3).asInt()));
            }
            List<String> columns = new ArrayList<>();
            split.path("columns").forEach(c -> columns.add(c.asText()));
            out.add(new TamisPartition(parts, columns, split.path("rows").asLong(), runtime));
        }
        return out.toArray(new InputPartition[0]);
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        // The runtime filters go with the partitions (planned after Spark hands them over).
        return new TamisReaderFactory(new ScanSpec(dataset, readSchema, pushed, limit));
    }
}
