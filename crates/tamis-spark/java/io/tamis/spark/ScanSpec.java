package io.tamis.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.sql.types.StructType;

/** What every task of one scan shares (sent to the executors with the reader factory). */
final class ScanSpec implements Serializable {
    private static final long serialVersionUID = 1L;
    final String root;
    final StructType readSchema;
    final List<Filters.Conjunct> conjuncts;
    final List<List<String>> partitionTypes;
    final List<String> int96;
    final Map<String, String> storage;
    /** The driver's Spark-facing type of each read atomic column (see types.rs). */
    final Map<String, String> targets = new TreeMap<>();
    final int threads;
    final int batchSize;
    /** Rows per task at most, or null. */
    final Integer limit;

    ScanSpec(TamisDataset dataset, StructType readSchema, List<Filters.Conjunct> conjuncts,
             Integer limit) {
        this.limit = limit;
        this.root = dataset.root;
        this.readSchema = readSchema;
        this.conjuncts = new ArrayList<>(conjuncts);
        this.partitionTypes = new ArrayList<>(dataset.partitionTypes);
        this.int96 = new ArrayList<>(dataset.int96);
        this.storage = new TreeMap<>(dataset.options.storage);
        this.threads = dataset.options.threads;
        this.batchSize = dataset.options.batchSize;
        for (org.apache.spark.sql.types.StructField f : readSchema.fields()) {
            String t = dataset.targets.get(f.name());
            if (t != null) {
                targets.put(f.name(), t);
            }
        }
    }
}
