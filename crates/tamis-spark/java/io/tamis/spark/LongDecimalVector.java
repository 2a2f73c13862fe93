package io.tamis.spark;

import org.apache.arrow.vector.BigIntVector;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;

/**
 * A decimal column of at most 18 digits over the Rust core's 64-bit unscaled values: Spark's
 * own representation of such decimals, so no {@code BigDecimal} is built per value.
 */
final class LongDecimalVector extends ReadOnlyVector {
    private final BigIntVector values;

    LongDecimalVector(BigIntVector values, DecimalType type) {
        super(type, "a decimal column");
        this.values = values;
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
}
