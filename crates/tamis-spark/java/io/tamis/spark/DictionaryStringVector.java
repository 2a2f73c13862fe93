package io.tamis.spark;

import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.IntVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A string or binary column as its row group's dictionary and a 32-bit code a row, read in
 * place: a row's value is its entry's bytes in the dictionary's buffer (Spark's
 * {@code ArrowColumnVector} reads no Arrow dictionary, so every value would otherwise be copied
 * out of the dictionary into a plain column first).
 */
final class DictionaryStringVector extends ReadOnlyVector {
    private final IntVector codes;
    private final BaseVariableWidthVector entries;

    DictionaryStringVector(IntVector codes, BaseVariableWidthVector entries, DataType type) {
        super(type, "a string or binary column");
        this.codes = codes;
        this.entries = entries;
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
}
