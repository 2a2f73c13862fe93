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
    /** A table's location, format and version (see {@link TamisDataset#table}), or null. */
    final Map<String, Object> table;
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
    /**
     * The executors' page cache from the session's settings ({@code spark.tamis.pageCache},
     * {@code spark.tamis.cacheDir}, {@code spark.tamis.cacheDirBytes}; see README), or null when
     * none is set.
     */
    final Map<String, String> cache;

    ScanSpec(TamisDataset dataset, StructType readSchema, List<Filters.Conjunct> conjuncts,
             Integer limit) {
        this.limit = limit;
        this.root = dataset.root;
        this.table = dataset.table == null ? null : new TreeMap<>(dataset.table);
        this.readSchema = readSchema;
        this.conjuncts = new ArrayList<>(conjuncts);
        this.partitionTypes = new ArrayList<>(dataset.partitionTypes);
        this.int96 = new ArrayList<>(dataset.int96);
        this.storage = new TreeMap<>(dataset.options.storage);
        this.threads = dataset.options.threads;
        this.batchSize = dataset.options.batchSize;
        this.cache = cacheSettings();
        for (org.apache.spark.sql.types.StructField f : readSchema.fields()) {
            String t = dataset.targets.get(f.name());
            if (t != null) {
                targets.put(f.name(), t);
            }
        }
    }

    /** The session's {@code spark.tamis.*} cache settings (read on the driver), or null. */
    private static Map<String, String> cacheSettings() {
        org.apache.spark.sql.RuntimeConfig conf;
        try {
            conf = org.apache.spark.sql.SparkSession.active().conf();
        } catch (IllegalStateException noSession) {
            return null; // planned outside a session: the executors keep their defaults
        }
        Map<String, String> out = new TreeMap<>();
        String[][] keys = {{"page_cache", "spark.tamis.pageCache"}, {"dir", "spark.tamis.cacheDir"},
            {"dir_bytes", "spark.tamis.cacheDirBytes"}};
        for (String[] k : keys) {
            String v = conf.get(k[1], null);
            if (v != null) {
                out.put(k[0], v);
            }
        }
        return out.isEmpty() ? null : out;
    }
}
