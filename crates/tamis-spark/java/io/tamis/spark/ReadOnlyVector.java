package io.tamis.spark;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A column vector over Arrow buffers the reader owns, answering only the getters of its own
 * type; every other getter is an error naming what the column is. Nulls are read from the
 * Arrow validity bitmap's address (a column with no nulls never reads it).
 */
abstract class ReadOnlyVector extends ColumnVector {
    private final String what;
    private final long validity;
    private final int nulls;

    /** {@code validity}: the bitmap's address, from {@link ArrowAddresses#validity}. */
    ReadOnlyVector(DataType type, String what, long validity, int nulls) {
        super(type);
        this.what = what;
        this.validity = validity;
        this.nulls = nulls;
    }

    @Override
    public boolean hasNull() {
        return nulls > 0;
    }

    @Override
    public int numNulls() {
        return nulls;
    }

    @Override
    public boolean isNullAt(int rowId) {
        return ArrowAddresses.isNull(validity, rowId);
    }


    private UnsupportedOperationException other() {
        return new UnsupportedOperationException(what);
    }

    @Override
    public void close() {
        // The Arrow reader owns the buffers.
    }

    @Override
    public boolean getBoolean(int rowId) {
        throw other();
    }

    @Override
    public byte getByte(int rowId) {
        throw other();
    }

    @Override
    public short getShort(int rowId) {
        throw other();
    }

    @Override
    public int getInt(int rowId) {
        throw other();
    }

    @Override
    public long getLong(int rowId) {
        throw other();
    }

    @Override
    public float getFloat(int rowId) {
        throw other();
    }

    @Override
    public double getDouble(int rowId) {
        throw other();
    }

    @Override
    public Decimal getDecimal(int rowId, int precision, int scale) {
        throw other();
    }

    @Override
    public UTF8String getUTF8String(int rowId) {
        throw other();
    }

    @Override
    public byte[] getBinary(int rowId) {
        throw other();
    }

    @Override
    public ColumnarArray getArray(int rowId) {
        throw other();
    }

    @Override
    public ColumnarMap getMap(int rowId) {
        throw other();
    }

    @Override
    public ColumnVector getChild(int ordinal) {
        throw other();
    }
}
