package io.tamis.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Columnar readers only: batches cross from Rust as Arrow, never as rows. */
final class TamisReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;
    private final ScanSpec spec;

    TamisReaderFactory(ScanSpec spec) {
        this.spec = spec;
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
        return true;
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
        if (partition instanceof FooterAggregate.Partition) {
            return new FooterAggregate.Reader((FooterAggregate.Partition) partition);
        }
        return new TamisColumnarReader(spec, (TamisPartition) partition);
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        throw new UnsupportedOperationException("tamis reads columnar batches only");
    }
}
