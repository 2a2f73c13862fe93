package io.tamis.spark;

import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.IntVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A string or binary column as its row group's dictionary and a 32-bit code a row, read in
 * place: a row's value is its entry's bytes in the dictionary's buffer (Spark's
 * {@code ArrowColumnVector} reads no Arrow dictionary, so every value would otherwise be copied
 * out of the dictionary into a plain column first).
 */
final class DictionaryStringVector extends ColumnVector {
    private final IntVector codes;
    private final BaseVariableWidthVector entries;

    DictionaryStringVector(IntVector codes, BaseVariableWidthVector entries, DataType type) {
        super(type);
        this.codes = codes;
        this.entries = entries;
    }

    @Override
    public void close() {
        // The Arrow reader owns the buffers.
    }

    @Override
    public boolean hasNull() {
        return codes.getNullCount() > 0;
    }

    @Override
    public int numNulls() {
        return codes.getNullCount();
    }

    @Override
    public boolean isNullAt(int rowId) {
        return codes.isNull(rowId);
    }

    @Override
    public UTF8String getUTF8String(int rowId) {
        if (codes.isNull(rowId)) {
            return null;
        }
        int entry = codes.get(rowId);
        long start = entries.getStartOffset(entry);
        int length = (int) (entries.getEndOffset(entry) - start);
        return UTF8String.fromAddress(null, entries.getDataBuffer().memoryAddress() + start, length);
    }

    @Override
    public byte[] getBinary(int rowId) {
        if (codes.isNull(rowId)) {
            return null;
        }
        return entries.get(codes.get(rowId));
    }

    private static UnsupportedOperationException notString() {
        return new UnsupportedOperationException("a string or binary column");
    }

    @Override
    public boolean getBoolean(int rowId) {
        throw notString();
    }

    @Override
    public byte getByte(int rowId) {
        throw notString();
    }

    @Override
    public short getShort(int rowId) {
        throw notString();
    }

    @Override
    public int getInt(int rowId) {
        throw notString();
    }

    @Override
    public long getLong(int rowId) {
        throw notString();
    }

    @Override
    public float getFloat(int rowId) {
        throw notString();
    }

    @Override
    public double getDouble(int rowId) {
        throw notString();
    }

    @Override
    public Decimal getDecimal(int rowId, int precision, int scale) {
        throw notString();
    }

    @Override
    public ColumnarArray getArray(int rowId) {
        throw notString();
    }

    @Override
    public ColumnarMap getMap(int rowId) {
        throw notString();
    }

    @Override
    public ColumnVector getChild(int ordinal) {
        throw notString();
    }
}
