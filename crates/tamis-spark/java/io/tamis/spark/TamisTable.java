package io.tamis.spark;

import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** A tamis dataset as a Spark table (read-only). */
final class TamisTable implements SupportsRead {
    private final TamisDataset dataset;
    private final StructType schema;

    /** {@code schema}: the dataset's, or a user schema naming some of its columns. */
    TamisTable(TamisDataset dataset, StructType schema) {
        this.dataset = dataset;
        Map<String, DataType> types = new TreeMap<>();
        for (StructField f : dataset.schema.fields()) {
            types.put(f.name(), f.dataType());
        }
        for (StructField f : schema.fields()) {
            DataType t = types.get(f.name());
            if (t == null) {
                throw new IllegalArgumentException("invalid argument: " + dataset.options.path
                    + ": the schema names column '" + f.name() + "', which the dataset does not have");
            }
            if (!t.equals(f.dataType())) {
                throw new IllegalArgumentException("invalid argument: " + dataset.options.path
                    + ": the schema gives column '" + f.name() + "' type " + f.dataType().simpleString()
                    + "; the dataset has " + t.simpleString());
            }
        }
        this.schema = schema;
    }

    @Override
    public String name() {
        return "tamis " + dataset.options.path;
    }

    @Override
    public StructType schema() {
        return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
        return Set.of(TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        return new TamisScanBuilder(dataset, schema);
    }
}
