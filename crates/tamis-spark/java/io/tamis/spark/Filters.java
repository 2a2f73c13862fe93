package io.tamis.spark;

import java.io.Serializable;
import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;

/**
 * Spark's V2 predicates as tamis SQL, only where tamis evaluates them exactly as Spark does
 * (the rules the Python source found: NaN equal to itself and above every number, -0.0 equal
 * to 0.0, {@code IN} with a NULL, LIKE escapes, time zones, nanosecond timestamps). A predicate
 * that does not translate stays with Spark.
 */
final class Filters {
    private static final DateTimeFormatter MICROS =
        DateTimeFormatter.ofPattern("uuuu-MM-dd HH:mm:ss.SSSSSS");

    private Filters() {}

    /** A pushed predicate: its SQL, its columns and its value where they are all NULL. */
    static final class Conjunct implements Serializable {
        private static final long serialVersionUID = 1L;
        final String sql;
        final Set<String> columns;
        /** TRUE, FALSE, or null (SQL NULL) where its columns are NULL (files lacking them). */
        final Boolean onNull;
        final String text;
        /**
         * A join's key list too long for {@code IN} text ({@code long[]}: integers and dates as
         * days; {@code String[]}; or a Spark {@code Broadcast} of one), which the scan probes as
         * a Bloom filter; {@link #sql} is then the keys' range (for pruning) and
         * {@link #keyColumn} their column. Null otherwise.
         */
        final Object keys;
        final String keyColumn;

        Conjunct(String sql, Set<String> columns, Boolean onNull, String text) {
            this(sql, columns, onNull, text, null, null);
        }

        Conjunct(String sql, Set<String> columns, Boolean onNull, String text, Object keys,
                 String keyColumn) {
            this.sql = sql;
            this.columns = columns;
            this.onNull = onNull;
            this.text = text;
            this.keys = keys;
            this.keyColumn = keyColumn;
        }
    }

    /**
     * A runtime filter {@code column IN (many keys)} as a key list the scan probes as a Bloom
     * filter, and its range as SQL (row groups and pages outside it are pruned): for integer,
     * date and string columns; null for other types, or when a key is not a literal.
     * NULL keys are dropped (they never join).
     */
    static Conjunct keyList(Predicate p, Map<String, DataType> types, Set<String> nanosecond) {
        Expression[] c = p.children();
        Set<String> columns = new TreeSet<>();
        String name = column(c[0], types, columns);
        if (name == null || nanosecond.contains(name)) {
            return null;
        }
        DataType t = types.get(name);
        boolean ints = t == DataTypes.ByteType || t == DataTypes.ShortType || t == DataTypes.IntegerType
            || t == DataTypes.LongType || t == DataTypes.DateType;
        if (!ints && t != DataTypes.StringType) {
            return null;
        }
        long[] longs = new long[c.length - 1];
        String[] strings = new String[c.length - 1];
        int n = 0;
        Literal<?> min = null;
        Literal<?> max = null;
        for (int i = 1; i < c.length; i++) {
            if (!(c[i] instanceof Literal)) {
                return null;
            }
            Literal<?> lit = (Literal<?>) c[i];
            Object v = lit.value();
            if (v == null) {
                continue;
            }
            if (ints) {
                long k = ((Number) v).longValue();
                longs[n] = k;
                if (min == null || k < ((Number) min.value()).longValue()) {
                    min = lit;
                }
                if (max == null || k > ((Number) max.value()).longValue()) {
                    max = lit;
                }
            } else {
                org.apache.spark.unsafe.types.UTF8String k = (org.apache.spark.unsafe.types.UTF8String) v;
                strings[n] = k.toString();
                if (min == null || k.binaryCompare((org.apache.spark.unsafe.types.UTF8String) min.value()) < 0) {
                    min = lit;
                }
                if (max == null || k.binaryCompare((org.apache.spark.unsafe.types.UTF8String) max.value()) > 0) {
                    max = lit;
                }
            }
            n++;
        }
        if (n == 0) {
            return null;
        }
        Expression ref = c[0];
        String range = sql(new Predicate("AND", new Expression[] {
            new Predicate(">=", new Expression[] {ref, min}),
            new Predicate("<=", new Expression[] {ref, max})}), types, nanosecond, columns);
        if (range == null) {
            return null;
        }
        Object keys = ints ? java.util.Arrays.copyOf(longs, n) : java.util.Arrays.copyOf(strings, n);
        return new Conjunct(range, columns, Boolean.FALSE, name + " IN (" + n + " keys)", keys, name);
    }

    /** The conjunct of {@code p}, or null when it stays with Spark. */
    static Conjunct translate(Predicate p, Map<String, DataType> types, Set<String> nanosecond) {
        Set<String> columns = new TreeSet<>();
        String sql = sql(p, types, nanosecond, columns);
        if (sql == null) {
            return null;
        }
        return new Conjunct(sql, columns, onNull(p), p.toString());
    }

    static String ident(String name) {
        return "\"" + name.replace("\"", "\"\"") + "\"";
    }

    private static String string(String s) {
        return "'" + s.replace("'", "''") + "'";
    }

    private static String column(Expression e, Map<String, DataType> types, Set<String> columns) {
        if (!(e instanceof NamedReference)) {
            return null;
        }
        String[] names = ((NamedReference) e).fieldNames();
        if (names.length != 1 || !types.containsKey(names[0])) {
            return null; // nested fields and unknown names stay with Spark
        }
        DataType t = types.get(names[0]);
        if (t instanceof org.apache.spark.sql.types.ArrayType
            || t instanceof org.apache.spark.sql.types.MapType
            || t instanceof org.apache.spark.sql.types.StructType
            || t == DataTypes.NullType || t == DataTypes.BinaryType) {
            return null; // tamis filters on atomic columns
        }
        columns.add(names[0]);
        return names[0];
    }

    private static String sql(Predicate p, Map<String, DataType> types, Set<String> nanosecond,
                              Set<String> columns) {
        Expression[] c = p.children();
        switch (p.name()) {
            case "AND":
            case "OR": {
                String a = sql((Predicate) c[0], types, nanosecond, columns);
                String b = a == null ? null : sql((Predicate) c[1], types, nanosecond, columns);
                return b == null ? null : "(" + a + ") " + p.name() + " (" + b + ")";
            }
            case "NOT": {
                String inner = c[0] instanceof Predicate
                    ? sql((Predicate) c[0], types, nanosecond, columns) : null;
                return inner == null ? null : "NOT (" + inner + ")";
            }
            case "IS_NULL":
            case "IS_NOT_NULL": {
                String name = column(c[0], types, columns);
                if (name == null) {
                    return null;
                }
                return ident(name) + (p.name().equals("IS_NULL") ? " IS NULL" : " IS NOT NULL");
            }
            default:
                break;
        }
        if (c.length == 0) {
            return null;
        }
        String name = column(c[0], types, columns);
        if (name == null && c.length == 2 && c[0] instanceof Literal && c[1] instanceof NamedReference
            && isComparison(p.name())) {
            // `5 < x` as `x > 5`.
            return sql(new Predicate(flip(p.name()), new Expression[] {c[1], c[0]}), types,
                nanosecond, columns);
        }
        if (name == null || nanosecond.contains(name)) {
            return null; // tamis would compare nanoseconds Spark's values no longer hold
        }
        DataType t = types.get(name);
        String col = ident(name);
        switch (p.name()) {
            case "=": case "<>": case "<": case "<=": case ">": case ">=": {
                String lit = literal(c[1], t);
                return lit == null ? null : col + " " + p.name() + " " + lit;
            }
            case "<=>": {
                if (c[1] instanceof Literal && ((Literal<?>) c[1]).value() == null) {
                    return col + " IS NULL";
                }
                String lit = literal(c[1], t);
                // Never NULL, as <=> is: false where the column is NULL.
                return lit == null ? null : "(" + col + " IS NOT NULL AND " + col + " = " + lit + ")";
            }
            case "IN": {
                List<String> lits = new ArrayList<>();
                boolean hasNull = false;
                for (int i = 1; i < c.length; i++) {
                    if (c[i] instanceof Literal && ((Literal<?>) c[i]).value() == null) {
                        hasNull = true;
                        continue;
                    }
                    String lit = literal(c[i], t);
                    if (lit == null) {
                        return null;
                    }
                    lits.add(lit);
                }
                if (lits.isEmpty()) {
                    return null;
                }
                String text = col + " IN (" + String.join(", ", lits) + ")";
                // `x IN (1, NULL)` is NULL, not FALSE, where x is not 1: it matters under NOT.
                return hasNull ? "(" + text + " OR NULL)" : text;
            }
            case "STARTS_WITH": case "ENDS_WITH": case "CONTAINS": {
                if (t != DataTypes.StringType || !(c[1] instanceof Literal)
                    || ((Literal<?>) c[1]).value() == null) {
                    return null;
                }
                String v = ((Literal<?>) c[1]).value().toString();
                String escaped = v.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_");
                String pattern = p.name().equals("STARTS_WITH") ? escaped + "%"
                    : p.name().equals("ENDS_WITH") ? "%" + escaped : "%" + escaped + "%";
                return col + " LIKE " + string(pattern) + " ESCAPE '\\'";
            }
            default:
                return null;
        }
    }

    private static boolean isComparison(String name) {
        return name.equals("=") || name.equals("<>") || name.equals("<") || name.equals("<=")
            || name.equals(">") || name.equals(">=") || name.equals("<=>");
    }

    private static String flip(String name) {
        switch (name) {
            case "<": return ">";
            case "<=": return ">=";
            case ">": return "<";
            case ">=": return "<=";
            default: return name;
        }
    }

    /** SQL text of a literal compared with a column of Spark type {@code t}, or null. */
    static String literal(Expression e, DataType t) {
        if (!(e instanceof Literal)) {
            return null;
        }
        Literal<?> lit = (Literal<?>) e;
        Object v = lit.value();
        DataType lt = lit.dataType();
        if (v == null) {
            return null;
        }
        if (t instanceof DecimalType) {
            if (!(lt instanceof DecimalType) || !(v instanceof Decimal)) {
                return null;
            }
            return ((Decimal) v).toJavaBigDecimal().toPlainString();
        }
        if (!lt.equals(t)) {
            return null; // Spark compares after a cast tamis would not make the same way
        }
        if (t == DataTypes.BooleanType) {
            return ((Boolean) v) ? "TRUE" : "FALSE";
        }
        if (t == DataTypes.ByteType || t == DataTypes.ShortType || t == DataTypes.IntegerType
            || t == DataTypes.LongType) {
            return v.toString();
        }
        if (t == DataTypes.FloatType || t == DataTypes.DoubleType) {
            double d = ((Number) v).doubleValue();
            if (Double.isNaN(d)) {
                return "CAST('NaN' AS DOUBLE)";
            }
            if (Double.isInfinite(d)) {
                return "CAST('" + (d > 0 ? "Infinity" : "-Infinity") + "' AS DOUBLE)";
            }
            return new BigDecimal(d).toPlainString().equals("0") && 1 / d < 0
                ? "-0.0" : Double.toString(d);
        }
        if (t == DataTypes.StringType) {
            return string(v.toString());
        }
        if (t == DataTypes.DateType) {
            return "DATE '" + LocalDate.ofEpochDay(((Number) v).longValue()) + "'";
        }
        if (t == DataTypes.TimestampType) {
            long micros = ((Number) v).longValue();
            Instant at = Instant.EPOCH.plusSeconds(Math.floorDiv(micros, 1_000_000L))
                .plusNanos(Math.floorMod(micros, 1_000_000L) * 1000L);
            return "TIMESTAMP '" + MICROS.format(LocalDateTime.ofInstant(at, ZoneOffset.UTC)) + "+00:00'";
        }
        if (t == DataTypes.TimestampNTZType) {
            long micros = ((Number) v).longValue();
            LocalDateTime at = LocalDateTime.ofEpochSecond(Math.floorDiv(micros, 1_000_000L),
                (int) (Math.floorMod(micros, 1_000_000L) * 1000L), ZoneOffset.UTC);
            return "TIMESTAMP '" + MICROS.format(at) + "'";
        }
        return null;
    }

    /** The value of {@code p} where all its columns are NULL: TRUE, FALSE or null (SQL NULL). */
    static Boolean onNull(Predicate p) {
        Expression[] c = p.children();
        switch (p.name()) {
            case "IS_NULL": return Boolean.TRUE;
            case "IS_NOT_NULL": return Boolean.FALSE;
            case "<=>":
                return c.length == 2 && c[1] instanceof Literal && ((Literal<?>) c[1]).value() == null;
            case "NOT": {
                Boolean inner = onNull((Predicate) c[0]);
                return inner == null ? null : !inner;
            }
            case "AND": {
                Boolean a = onNull((Predicate) c[0]);
                Boolean b = onNull((Predicate) c[1]);
                if (Boolean.FALSE.equals(a) || Boolean.FALSE.equals(b)) {
                    return Boolean.FALSE;
                }
                return a == null || b == null ? null : Boolean.TRUE;
            }
            case "OR": {
                Boolean a = onNull((Predicate) c[0]);
                Boolean b = onNull((Predicate) c[1]);
                if (Boolean.TRUE.equals(a) || Boolean.TRUE.equals(b)) {
                    return Boolean.TRUE;
                }
                return a == null || b == null ? null : Boolean.FALSE;
            }
            default:
                return null;
        }
    }
}
