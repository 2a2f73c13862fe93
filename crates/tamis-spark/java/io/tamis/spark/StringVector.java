package io.tamis.spark;

import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.IntVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A string or binary column read in place from its Arrow buffers: either plain (32-bit offsets
 * into the values' bytes) or dictionary-encoded (a row group's entries once and a 32-bit code a
 * row; Spark's {@code ArrowColumnVector} reads no Arrow dictionary, so every value would
 * otherwise be copied out of the dictionary first). A row's {@code UTF8String} points into the
 * buffer; nothing is copied a value.
 */
final class StringVector extends ReadOnlyVector {
    /** The rows' dictionary codes, or 0 when the rows are the entries themselves. */
    private final long codes;
    private final long offsets;
    private final long bytes;
    /**
     * Dictionary entries as on-heap strings, made on first use and returned for every row with
     * that code (null when plain, or when the dictionary has more entries than the batch rows).
     * Spark's own dictionary vectors make a {@code UTF8String} a row; one an entry saves that
     * allocation, and an on-heap string's {@code getBytes()} (which aggregations call) is its
     * array, where an off-heap one copies.
     */
    private final UTF8String[] entries;

    /** A plain column: row i is entry i. */
    StringVector(BaseVariableWidthVector values, DataType type) {
        this(values, 0, values.getNullCount(), ArrowAddresses.validity(values), 0, type);
    }

    /** A dictionary-encoded column: row i is entry {@code codes[i]} of {@code entries}. */
    StringVector(IntVector codes, BaseVariableWidthVector entries, DataType type) {
        this(entries, codes.getDataBuffer().memoryAddress(), codes.getNullCount(),
            ArrowAddresses.validity(codes),
            entries.getValueCount() <= codes.getValueCount() ? entries.getValueCount() : 0, type);
    }

    private StringVector(BaseVariableWidthVector entries, long codes, int nulls, long validity,
                         int heapEntries, DataType type) {
        super(type, "a string or binary column", validity, nulls);
        this.codes = codes;
        this.offsets = entries.getOffsetBuffer().memoryAddress();
        this.bytes = entries.getDataBuffer().memoryAddress();
        this.entries = heapEntries > 0 ? new UTF8String[heapEntries] : null;
    }

    // SAFETY (memory), for entry() and the getters: Spark reads only rows below the batch's row
    // count; each has a code (when encoded) naming an entry of the dictionary, which the core
    // checked when it decoded the page, and offsets i and i + 1 for entry i; the reader keeps
    // the buffers until the next batch, when Spark no longer reads this one.

    private int entry(int rowId) {
        return codes == 0 ? rowId : Platform.getInt(null, codes + 4L * rowId);
    }

    @Override
    public UTF8String getUTF8String(int rowId) {
        if (isNullAt(rowId)) {
            return null;
        }
        int entry = entry(rowId);
        if (entries == null) {
            long at = offsets + 4L * entry;
            int start = Platform.getInt(null, at);
            return UTF8String.fromAddress(null, bytes + start, Platform.getInt(null, at + 4) - start);
        }
        UTF8String s = entries[entry];
        if (s == null) {
            s = UTF8String.fromBytes(getBinaryOfEntry(entry));
            entries[entry] = s;
        }
        return s;
    }

    @Override
    public byte[] getBinary(int rowId) {
        if (isNullAt(rowId)) {
            return null;
        }
        return getBinaryOfEntry(entry(rowId));
    }

    /** A copy of entry {@code entry}'s bytes. */
    private byte[] getBinaryOfEntry(int entry) {
        long at = offsets + 4L * entry;
        int start = Platform.getInt(null, at);
        byte[] out = new byte[Platform.getInt(null, at + 4) - start];
        Platform.copyMemory(null, bytes + start, out, Platform.BYTE_ARRAY_OFFSET, out.length);
        return out;
    }
}
