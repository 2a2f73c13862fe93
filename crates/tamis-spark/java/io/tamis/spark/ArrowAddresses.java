package io.tamis.spark;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.FieldVector;
import org.apache.spark.unsafe.Platform;

/**
 * Where one batch's Arrow array keeps its validity bits: the column vectors below read values
 * straight from the buffers' addresses, as Spark's own off-heap vectors do, instead of through
 * Arrow's getters, which check bounds and nulls on every value.
 */
final class ArrowAddresses {
    private ArrowAddresses() {}

    /** The validity bitmap's address, or 0 when the array has no null (every row valid). */
    static long validity(FieldVector v) {
        if (v.getNullCount() == 0) {
            return 0;
        }
        ArrowBuf bits = v.getValidityBuffer();
        return bits == null ? 0 : bits.memoryAddress();
    }

    /** Whether row {@code rowId} is null under the bitmap at {@code validity} (0: none is). */
    static boolean isNull(long validity, int rowId) {
        // SAFETY (memory): Spark asks only for rows below the batch's row count, and the
        // bitmap holds a bit for each of them; the reader keeps the buffers until the next batch.
        return validity != 0
            && (Platform.getByte(null, validity + (rowId >>> 3)) & (1 << (rowId & 7))) == 0;
    }
}
