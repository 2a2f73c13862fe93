package io.tamis.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.Count;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.expressions.aggregate.Max;
import org.apache.spark.sql.connector.expressions.aggregate.Min;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Aggregate pushdown: {@code count(*)}, {@code count(c)}, {@code min(c)} and {@code max(c)}
 * with no GROUP BY and no filter, answered on the driver from the footers where every row
 * group's statistics make them exact (the Rust side decides; floats, strings and timestamps
 * are never answered so). The scan is then one row, read by one task.
 */
final class FooterAggregate {
    /** The answer's schema (one field per aggregate, as Spark types them) and values. */
    final StructType schema;
    final List<Long> values;

    private FooterAggregate(StructType schema, List<Long> values) {
        this.schema = schema;
        this.values = values;
    }

    /** The answer from the footers, or null when they cannot give it exactly. */
    static FooterAggregate answer(TamisDataset dataset, Aggregation aggregation,
                                  Map<String, DataType> types) {
        if (aggregation.groupByExpressions().length > 0) {
            return null;
        }
        List<Map<String, String>> request = new ArrayList<>();
        List<StructField> fields = new ArrayList<>();
        for (AggregateFunc f : aggregation.aggregateExpressions()) {
            Map<String, String> one = new LinkedHashMap<>();
            DataType type = DataTypes.LongType;
            if (f instanceof CountStar) {
                one.put("function", "count_star");
            } else if (f instanceof Count && !((Count) f).isDistinct()) {
                String column = column(((Count) f).column(), types);
                if (column == null) {
                    return null;
                }
                one.put("function", "count");
                one.put("column", column);
            } else if (f instanceof Min || f instanceof Max) {
                Expression e = f instanceof Min ? ((Min) f).column() : ((Max) f).column();
                String column = column(e, types);
                if (column == null) {
                    return null;
                }
                one.put("function", f instanceof Min ? "min" : "max");
                one.put("column", column);
                type = types.get(column);
            } else {
                return null;
            }
            request.add(one);
            // Spark maps the answer to the aggregates by position.
            fields.add(DataTypes.createStructField("agg" + fields.size(), type, true));
        }
        JsonNode values = Json.read(dataset.aggregate(Json.write(request)));
        if (!values.isArray()) {
            return null;
        }
        List<Long> out = new ArrayList<>();
        values.forEach(v -> out.add(v.isNull() ? null : v.asLong()));
        return new FooterAggregate(DataTypes.createStructType(fields), out);
    }

    private static String column(Expression e, Map<String, DataType> types) {
        if (!(e instanceof NamedReference) || ((NamedReference) e).fieldNames().length != 1) {
            return null;
        }
        String name = ((NamedReference) e).fieldNames()[0];
        return types.containsKey(name) ? name : null;
    }

    /** The one partition of an answered aggregate: the values themselves. */
    static final class Partition implements InputPartition {
        private static final long serialVersionUID = 1L;
        final StructType schema;
        final ArrayList<Long> values;

        Partition(FooterAggregate answer) {
            this.schema = answer.schema;
            this.values = new ArrayList<>(answer.values);
        }
    }

    /** Hands Spark the one row. */
    static final class Reader implements PartitionReader<ColumnarBatch> {
        private final Partition partition;
        private ColumnarBatch batch;
        private boolean done;

        Reader(Partition partition) {
            this.partition = partition;
        }

        @Override
        public boolean next() {
            if (done) {
                return false;
            }
            done = true;
            StructField[] fields = partition.schema.fields();
            ColumnVector[] vectors = new ColumnVector[fields.length];
            for (int i = 0; i < fields.length; i++) {
                OnHeapColumnVector v = new OnHeapColumnVector(1, fields[i].dataType());
                Long value = partition.values.get(i);
                DataType t = fields[i].dataType();
                if (value == null) {
                    v.putNull(0);
                } else if (t instanceof DecimalType) {
                    DecimalType d = (DecimalType) t;
                    v.putDecimal(0, Decimal.apply(new java.math.BigDecimal(BigInteger.valueOf(value),
                        d.scale()), d.precision(), d.scale()), d.precision());
                } else if (t == DataTypes.LongType) {
                    v.putLong(0, value);
                } else if (t == DataTypes.IntegerType || t == DataTypes.DateType) {
                    v.putInt(0, value.intValue());
                } else if (t == DataTypes.ShortType) {
                    v.putShort(0, value.shortValue());
                } else if (t == DataTypes.ByteType) {
                    v.putByte(0, value.byteValue());
                } else {
                    throw new TamisException("internal error: a footer aggregate of type " + t);
                }
                vectors[i] = v;
            }
            batch = new ColumnarBatch(vectors, 1);
            return true;
        }

        @Override
        public ColumnarBatch get() {
            return batch;
        }

        @Override
        public void close() {
            if (batch != null) {
                batch.close();
            }
        }
    }
}
