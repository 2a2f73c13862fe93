package io.tamis.spark;

import org.apache.arrow.vector.BigIntVector;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A decimal column of at most 18 digits over the Rust core's 64-bit unscaled values: Spark's
 * own representation of such decimals, so no {@code BigDecimal} is built per value.
 */
final class LongDecimalVector extends ColumnVector {
    private final BigIntVector values;

    LongDecimalVector(BigIntVector values, DecimalType type) {
        super(type);
        this.values = values;
    }

    @Override
    public void close() {
        // The Arrow reader owns the buffers.
    }

    @Override
    public boolean hasNull() {
        return values.getNullCount() > 0;
    }

    @Override
    public int numNulls() {
        return values.getNullCount();
    }

    @Override
    public boolean isNullAt(int rowId) {
        return values.isNull(rowId);
    }

    @Override
    public long getLong(int rowId) {
        return values.get(rowId);
    }

    @Override
    public Decimal getDecimal(int rowId, int precision, int scale) {
        if (values.isNull(rowId)) {
            return null;
        }
        return Decimal.createUnsafe(values.get(rowId), precision, scale);
    }

    private static UnsupportedOperationException notDecimal() {
        return new UnsupportedOperationException("a decimal column");
    }

    @Override
    public boolean getBoolean(int rowId) {
        throw notDecimal();
    }

    @Override
    public byte getByte(int rowId) {
        throw notDecimal();
    }

    @Override
    public short getShort(int rowId) {
        throw notDecimal();
    }

    @Override
    public int getInt(int rowId) {
        throw notDecimal();
    }

    @Override
    public float getFloat(int rowId) {
        throw notDecimal();
    }

    @Override
    public double getDouble(int rowId) {
        throw notDecimal();
    }

    @Override
    public ColumnarArray getArray(int rowId) {
        throw notDecimal();
    }

    @Override
    public ColumnarMap getMap(int rowId) {
        throw notDecimal();
    }

    @Override
    public UTF8String getUTF8String(int rowId) {
        throw notDecimal();
    }

    @Override
    public byte[] getBinary(int rowId) {
        throw notDecimal();
    }

    @Override
    public ColumnVector getChild(int ordinal) {
        throw notDecimal();
    }
}
