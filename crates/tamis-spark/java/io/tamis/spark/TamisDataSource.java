package io.tamis.spark;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.read.format("tamis").load(path)} and {@code CREATE TABLE t USING tamis LOCATION
 * '...'}: Parquet files, directories, globs, hive-partitioned datasets and object-store URLs
 * scanned by tamis in the executors' JVMs (see {@link Options} for the options).
 */
public final class TamisDataSource implements TableProvider, DataSourceRegister {
    @Override
    public String shortName() {
        return "tamis";
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        TamisDataset dataset = TamisDataset.open(new Options(options.asCaseSensitiveMap()));
        try {
            return dataset.columns(dataset.options.columns);
        } finally {
            dataset.close(); // getTable opens its own
        }
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new TamisTable(TamisDataset.open(new Options(properties)), schema);
    }

    /**
     * Bytes of native (Rust) buffers the connector's Arrow allocator holds now: the batches of
     * the scans running in this JVM; 0 when none runs (a leak check).
     */
    public static long allocatedBytes() {
        return TamisDataset.ROOT.getAllocatedMemory();
    }

    /**
     * Bytes the native library holds now (footers of open datasets, running scans): with
     * {@link #allocatedBytes}, a leak check that the JVM's own memory does not blur.
     */
    public static long nativeBytes() {
        return Native.liveBytes();
    }

    /** A user schema ({@code .schema("a BIGINT, b STRING")}) names a subset of the columns. */
    @Override
    public boolean supportsExternalMetadata() {
        return true;
    }
}
