package io.tamis.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;

/**
 * The planned scan: input partitions are runs of row groups of about
 * {@code maxPartitionBytes} compressed bytes, planned on the driver from the footers read
 * once; row groups the pushed filters rule out by partition values or statistics get no task.
 */
final class TamisScan implements Scan, Batch {
    private final TamisDataset dataset;
    private final StructType readSchema;
    private final List<Filters.Conjunct> pushed;
    private final List<String> leftToSpark;

    TamisScan(TamisDataset dataset, StructType readSchema, List<Filters.Conjunct> pushed,
              List<String> leftToSpark) {
        this.dataset = dataset;
        this.readSchema = readSchema;
        this.pushed = new ArrayList<>(pushed);
        this.leftToSpark = new ArrayList<>(leftToSpark);
    }

    @Override
    public StructType readSchema() {
        return readSchema;
    }

    @Override
    public String description() {
        String taken = pushed.stream().map(c -> c.text).collect(Collectors.joining(", "));
        return "tamis " + dataset.options.path + " PushedFilters: [" + taken + "]"
            + " LeftToSpark: [" + String.join(", ", leftToSpark) + "]";
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
        long maxBytes = dataset.options.maxPartitionBytes != null
            ? dataset.options.maxPartitionBytes : SQLConf.get().filesMaxPartitionBytes();
        int minSplits = dataset.options.minPartitions != null
            ? dataset.options.minPartitions : SparkContext.getOrCreate().defaultParallelism();
        JsonNode splits = Json.read(dataset.plan(where(pushed), maxBytes, minSplits));
        List<InputPartition> out = new ArrayList<>();
        for (JsonNode split : splits) {
            List<TamisPartition.Part> parts = new ArrayList<>();
            for (JsonNode p : split.path("parts")) {
                parts.add(new TamisPartition.Part(p.get(0).asText(), p.get(1).asLong(),
                    p.get(2).asInt(), p.get(3).asInt()));
            }
            List<String> columns = new ArrayList<>();
            split.path("columns").forEach(c -> columns.add(c.asText()));
            out.add(new TamisPartition(parts, columns));
        }
        return out.toArray(new InputPartition[0]);
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new TamisReaderFactory(new ScanSpec(dataset, readSchema, pushed));
    }
}
