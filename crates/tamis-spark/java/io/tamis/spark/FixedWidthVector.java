package io.tamis.spark;

import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BitVector;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.Platform;

/**
 * A column of 1-, 2-, 4- or 8-byte values (integers, floats, dates, timestamps, and decimals of
 * at most 18 digits as their 64-bit unscaled values, Spark's own representation of them) read
 * from the Arrow buffer's address: no bounds or null check a value, no {@code BigDecimal}.
 */
final class FixedWidthVector extends ReadOnlyVector {
    private final int rows;
    private final long values;

    /**
     * Whether {@code v} holds Spark's {@code type} as numbers of that type's own width (the
     * driver checked the column's type; a vector of any other width keeps Arrow's getters).
     */
    static boolean fits(BaseFixedWidthVector v, DataType type) {
        boolean numeric = type instanceof ByteType || type instanceof ShortType
            || type instanceof IntegerType || type instanceof LongType || type instanceof FloatType
            || type instanceof DoubleType || type instanceof DateType
            || type instanceof TimestampType || type instanceof TimestampNTZType
            || type instanceof DecimalType && ((DecimalType) type).precision() <= 18;
        return numeric && !(v instanceof BitVector) && v.getTypeWidth() == type.defaultSize();
    }

    FixedWidthVector(BaseFixedWidthVector v, DataType type) {
        super(type, "a " + type.simpleString() + " column", ArrowAddresses.validity(v),
            v.getNullCount());
        this.rows = v.getValueCount();
        this.values = v.getDataBuffer().memoryAddress();
    }

    // SAFETY (memory), for each getter below: Spark reads only rows below the batch's row
    // count, whose values the data buffer holds at the type's width; the reader keeps the
    // buffers until the next batch, when Spark no longer reads this one.

    @Override
    public byte getByte(int rowId) {
        return Platform.getByte(null, values + rowId);
    }

    @Override
    public short getShort(int rowId) {
        return Platform.getShort(null, values + 2L * rowId);
    }

    @Override
    public int getInt(int rowId) {
        return Platform.getInt(null, values + 4L * rowId);
    }

    @Override
    public long getLong(int rowId) {
        return Platform.getLong(null, values + 8L * rowId);
    }

    @Override
    public float getFloat(int rowId) {
        return Platform.getFloat(null, values + 4L * rowId);
    }

    @Override
    public double getDouble(int rowId) {
        return Platform.getDouble(null, values + 8L * rowId);
    }

    @Override
    public Decimal getDecimal(int rowId, int precision, int scale) {
        if (isNullAt(rowId)) {
            return null;
        }
        return Decimal.createUnsafe(getLong(rowId), precision, scale);
    }

    @Override
    public String toString() {
        return "FixedWidthVector(" + dataType().simpleString() + ", " + rows + " rows)";
    }
}
