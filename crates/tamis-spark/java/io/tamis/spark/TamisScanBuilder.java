package io.tamis.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.connector.read.SupportsPushDownLimit;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsPushDownV2Filters;
import org.apache.spark.sql.types.StructType;

/**
 * Takes the columns Spark needs and every predicate tamis evaluates exactly as Spark does;
 * the rest stay with Spark (EXPLAIN lists both).
 */
final class TamisScanBuilder
    implements SupportsPushDownRequiredColumns, SupportsPushDownV2Filters, SupportsPushDownLimit,
        SupportsPushDownAggregates {
    /**
     * The predicates also left above the scan, where Spark's dynamic pruning looks for a
     * selective side (`isLikelySelective`): equality, IN and string matches, which keep few
     * rows for Spark to check again. Ranges, which often keep most (Q1's ship date: 98%), are
     * not; {@link TamisRuntimeFilters} covers a side filtered by ranges only.
     */
    static final java.util.Set<String> LIKELY_SELECTIVE =
        java.util.Set.of("=", "<=>", "IN", "STARTS_WITH", "ENDS_WITH", "CONTAINS");
    private final TamisDataset dataset;
    private StructType required;
    private final List<Filters.Conjunct> pushed = new ArrayList<>();
    private final List<Predicate> pushedPredicates = new ArrayList<>();
    private final List<String> leftToSpark = new ArrayList<>();
    /** The pushed LIMIT, or null. */
    private Integer limit;
    /** An aggregate answered from the footers, or null. */
    private FooterAggregate aggregate;
    /** The last aggregation asked about, and the footers' answer to it. */
    private Aggregation answered;
    private FooterAggregate answer;

    TamisScanBuilder(TamisDataset dataset, StructType schema) {
        this.dataset = dataset;
        this.required = schema;
    }

    @Override
    public void pruneColumns(StructType requiredSchema) {
        this.required = requiredSchema;
    }

    @Override
    public Predicate[] pushPredicates(Predicate[] predicates) {
        List<Predicate> rest = new ArrayList<>();
        for (Predicate p : predicates) {
            Filters.Conjunct c = dataset.options.pushdown
                ? Filters.translate(p, dataset.types, dataset.nanosecond) : null;
            // Over several columns only where none can be missing from a task's files.
            if (c != null && c.columns.size() > 1 && !dataset.everywhere.containsAll(c.columns)) {
                c = null;
            }
            if (c != null && !dataset.binds(c.sql)) {
                c = null;
            }
            if (c == null) {
                rest.add(p);
                leftToSpark.add(p.toString());
            } else {
                pushed.add(c);
                pushedPredicates.add(p);
                if (LIKELY_SELECTIVE.contains(p.name())) {
                    // Also returned, so that Spark's plan keeps a filter its dynamic pruning
                    // recognizes as selective (it looks for one above the scan); rows reaching
                    // it have passed tamis already.
                    rest.add(p);
                }
            }
        }
        return rest.toArray(new Predicate[0]);
    }

    @Override
    public Predicate[] pushedPredicates() {
        return pushedPredicates.toArray(new Predicate[0]);
    }

    /**
     * Each task stops after {@code limit} rows. Spark pushes a LIMIT only when no filter is
     * left above the scan, and still limits the whole result ({@code isPartiallyPushed}).
     */
    @Override
    public boolean pushLimit(int limit) {
        this.limit = limit;
        return true;
    }

    /** Only without filters: footers' statistics count every row. */
    @Override
    public boolean supportCompletePushDown(Aggregation aggregation) {
        return answer(aggregation) != null;
    }

    @Override
    public boolean pushAggregation(Aggregation aggregation) {
        aggregate = answer(aggregation);
        return aggregate != null;
    }

    /** The footers' answer to {@code aggregation}, computed once (Spark asks twice). */
    private FooterAggregate answer(Aggregation aggregation) {
        if (!pushed.isEmpty() || !leftToSpark.isEmpty() || !dataset.options.pushdown) {
            return null;
        }
        if (!aggregation.equals(answered)) {
            answered = aggregation;
            answer = FooterAggregate.answer(dataset, aggregation, dataset.types);
        }
        return answer;
    }

    @Override
    public Scan build() {
        if (aggregate != null) {
            return new TamisScan(dataset, aggregate.schema, List.of(), List.of(), null, aggregate);
        }
        return new TamisScan(dataset, required, pushed, leftToSpark, limit, null);
    }
}
