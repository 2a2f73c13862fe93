package io.tamis.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.DynamicPruningSubquery;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.InSet;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.catalyst.expressions.StringPredicate;
import org.apache.spark.sql.catalyst.expressions.StringRegexExpression;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Subquery;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import org.apache.spark.sql.execution.dynamicpruning.PartitionPruning$;
import org.apache.spark.sql.types.AtomicType;
import org.apache.spark.sql.types.BinaryType;
import scala.Option;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Hands a tamis scan the join keys of a selective filter on the other side of a join, where
 * Spark's own dynamic pruning gives up.
 *
 * <p>Spark's {@code PartitionPruning} uses the whole other side of the join as the build side
 * of its runtime filter. When that side is itself a join or an aggregate (TPC-H Q17: the lineitem
 * scan under the {@code avg} aggregate is joined with {@code lineitem ⨝ part}), re-running it
 * costs more than the filter saves, so Spark keeps the filter only if a broadcast can be reused
 * (usually none) and its runtime Bloom filter stays above the scan. This rule narrows the build
 * side instead: the key's values come from the one selective filter over a scan that they
 * descend from ({@code σ(part)} in Q17), which every row of the other side passes, so the
 * scan's rows that cannot join are dropped inside the scan. The filter is a
 * {@link DynamicPruningSubquery} that Spark plans as usual (reusing a broadcast of the same
 * plan where there is one) and hands to {@link TamisScan#filter} as an {@code IN} list. It also
 * covers a join whose other side is a tamis scan filtered by ranges only: tamis takes those
 * filters, and Spark's pruning, finding no {@code Filter} above the scan, plans nothing.
 *
 * <p>It runs before the scans are built (Spark's pre-CBO batch); Spark's own predicate push-down
 * moves the filter through projections and aggregates to the scan afterwards. It does nothing
 * when {@code spark.sql.optimizer.dynamicPartitionPruning.enabled} or
 * {@code spark.tamis.runtimeFilters.enabled} is false.
 */
public final class TamisRuntimeFilters extends Rule<LogicalPlan> {
    /** Turns this rule off (default on). */
    public static final String ENABLED = "spark.tamis.runtimeFilters.enabled";
    private static final PartitionPruning$ SPARK = PartitionPruning$.MODULE$;

    private final SparkSession session;

    public TamisRuntimeFilters(SparkSession session) {
        this.session = session;
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        if (!session.sessionState().conf().dynamicPartitionPruningEnabled()
            || !Boolean.parseBoolean(session.sessionState().conf().getConfString(ENABLED, "true"))) {
            return plan;
        }
        if (plan instanceof Subquery && ((Subquery) plan).correlated()) {
            return plan; // its outer references are not bound here (as Spark's own pruning)
        }
        return rewrite(plan);
    }

    private LogicalPlan rewrite(LogicalPlan plan) {
        List<LogicalPlan> children = new ArrayList<>();
        boolean changed = false;
        for (LogicalPlan child : CollectionConverters.asJava(plan.children())) {
            LogicalPlan rewritten = rewrite(child);
            changed |= rewritten != child;
            children.add(rewritten);
        }
        if (changed) {
            plan = plan.withNewChildren(seq(children));
        }
        return plan instanceof Join ? filterSides((Join) plan) : plan;
    }

    /** The join with a runtime filter over each side that a conjunct {@code a = b} can prune. */
    private LogicalPlan filterSides(Join join) {
        if (join.condition().isEmpty()) {
            return join;
        }
        LogicalPlan left = join.left();
        LogicalPlan right = join.right();
        for (Expression c : CollectionConverters.asJava(SPARK.splitConjunctivePredicates(join.condition().get()))) {
            if (!(c instanceof EqualTo)) {
                continue;
            }
            Expression a = ((EqualTo) c).left();
            Expression b = ((EqualTo) c).right();
            if (a.references().subsetOf(right.outputSet()) && b.references().subsetOf(left.outputSet())) {
                Expression t = a;
                a = b;
                b = t;
            }
            if (!a.references().subsetOf(left.outputSet()) || !b.references().subsetOf(right.outputSet())
                || a.references().isEmpty() || b.references().isEmpty()) {
                continue;
            }
            if (SPARK.canPruneLeft(join.joinType())) {
                left = filtered(left, a, right, b);
            }
            if (SPARK.canPruneRight(join.joinType())) {
                right = filtered(right, b, left, a);
            }
        }
        if (left == join.left() && right == join.right()) {
            return join;
        }
        return join.withNewChildren(seq(List.of(left, right)));
    }

    /**
     * {@code side} with a runtime filter {@code key IN (keys of the selective filter over a
     * scan that otherKey descends from)} directly over its tamis scan, or {@code side} as it is
     * when there is none to give, Spark's own dynamic pruning gives it, it would cost more than
     * it saves, or planning it fails (the query then runs without it).
     */
    private LogicalPlan filtered(LogicalPlan side, Expression key, LogicalPlan other, Expression otherKey) {
        try {
            return tryFiltered(side, key, other, otherKey);
        } catch (RuntimeException e) {
            return side;
        }
    }

    private LogicalPlan tryFiltered(LogicalPlan side, Expression key, LogicalPlan other, Expression otherKey) {
        Option<Tuple2<Expression, LogicalPlan>> source = SPARK.findExpressionAndTrackLineageDown(key, side);
        if (source.isEmpty() || !(otherKey instanceof Attribute)) {
            return side;
        }
        Expression atScan = source.get()._1();
        LogicalPlan leaf = source.get()._2();
        OptionalLong scanned = tamisBytes(leaf);
        if (scanned == null || !(atScan instanceof AttributeReference)
            || !(atScan.dataType() instanceof AtomicType) || atScan.dataType() instanceof BinaryType) {
            return side;
        }
        if (side.exists(n -> n instanceof Filter && ((Filter) n).condition().exists(
            e -> e instanceof DynamicPruningSubquery && ((DynamicPruningSubquery) e).pruningKey().semanticEquals(atScan)))) {
            return side;
        }
        LogicalPlan build = narrow(other, (Attribute) otherKey);
        // The build side runs again as a subquery: only where it gives the same keys again.
        if (build == null || build.exists(n -> n.expressions().exists(e -> !e.deterministic()))) {
            return side;
        }
        // Where the other side is the filtered scan itself and Spark will see its filter as
        // selective, Spark's dynamic pruning covers it (reusing the broadcast of that side).
        if (!other.exists(n -> n instanceof Join || n instanceof Aggregate)
            && sparkSeesSelective((Filter) build)) {
            return side;
        }
        List<NamedExpression> keys = List.of((Attribute) otherKey);
        // The build side optimized as a subquery would be: scans built, filters pushed into them.
        LogicalPlan query = session.sessionState().optimizer().execute(new Project(seq(keys), build));
        if (!worthIt(query, scanned)) {
            return side;
        }
        // Planned whatever `reuseBroadcastOnly` says: the narrowed build side is one filtered
        // scan, cheap to run again where no broadcast of it can be reused.
        DynamicPruningSubquery keysOf = new DynamicPruningSubquery(atScan, query, seq(List.of((Expression) otherKey)),
            seq(List.of((Object) 0)), false, NamedExpression$.MODULE$.newExprId(), Option.empty(), Option.empty());
        // Directly over the scan, not over the join's child: Spark's own pruning skips a join
        // whose child is a filter of dynamic pruning, and would then prune its other side no more.
        return over(side, leaf, new Filter(keysOf, leaf));
    }

    /** {@code plan} with the node {@code leaf} (this very instance) replaced by {@code with}. */
    private static LogicalPlan over(LogicalPlan plan, LogicalPlan leaf, LogicalPlan with) {
        if (plan == leaf) {
            return with;
        }
        List<LogicalPlan> children = new ArrayList<>();
        boolean changed = false;
        for (LogicalPlan child : CollectionConverters.asJava(plan.children())) {
            LogicalPlan replaced = over(child, leaf, with);
            changed |= replaced != child;
            children.add(replaced);
        }
        return changed ? plan.withNewChildren(seq(children)) : plan;
    }

    /**
     * The lowest plan under {@code plan} that produces every value of {@code key} the plan does
     * and is a selective filter over a scan: through projections that keep the attribute,
     * aggregates that group by it and either side of a join (a join's keys are a subset of its
     * side's). {@code null} if there is none.
     */
    private static LogicalPlan narrow(LogicalPlan plan, Attribute key) {
        if (!plan.outputSet().contains(key)) {
            return null;
        }
        if (plan instanceof Filter) {
            Filter f = (Filter) plan;
            if (SPARK.isLikelySelective(f.condition()) && overScan(f.child())) {
                return f;
            }
            return narrow(f.child(), key);
        }
        if (plan instanceof Project) {
            return narrow(((Project) plan).child(), key);
        }
        if (plan instanceof Aggregate) {
            return narrow(((Aggregate) plan).child(), key);
        }
        if (plan instanceof Join) {
            Join j = (Join) plan;
            return narrow(j.left().outputSet().contains(key) ? j.left() : j.right(), key);
        }
        return null;
    }

    /**
     * Whether Spark's dynamic pruning will find {@code filter} selective above its scan: a scan
     * of another source keeps its filters above it; a tamis scan keeps equality, IN and string
     * matches ({@link TamisScanBuilder#LIKELY_SELECTIVE}) and takes ranges away.
     */
    private static boolean sparkSeesSelective(Filter filter) {
        LogicalPlan leaf = filter.collectLeaves().head();
        if (tamisBytes(leaf) == null) {
            return true;
        }
        return filter.condition().exists(e -> e instanceof EqualTo || e instanceof EqualNullSafe
            || e instanceof In || e instanceof InSet || e instanceof StringPredicate
            || e instanceof StringRegexExpression);
    }

    /** A table's scan under projections and filters only (not a CTE's reference, nor rows). */
    private static boolean overScan(LogicalPlan plan) {
        while (plan instanceof Project || plan instanceof Filter) {
            plan = plan.children().head();
        }
        return plan instanceof DataSourceV2Relation || plan instanceof DataSourceV2ScanRelation
            || plan instanceof org.apache.spark.sql.execution.datasources.LogicalRelation
            || plan instanceof org.apache.spark.sql.catalyst.catalog.HiveTableRelation;
    }

    /**
     * The bytes a tamis scan of {@code leaf} reads by its own estimate (empty if unknown), or
     * {@code null} if {@code leaf} is no tamis scan. Before Spark's push-down a scan is a
     * relation; a subquery optimized on its own (Q17's) already holds a built scan.
     */
    private static OptionalLong tamisBytes(LogicalPlan leaf) {
        if (leaf instanceof DataSourceV2ScanRelation) {
            DataSourceV2ScanRelation r = (DataSourceV2ScanRelation) leaf;
            return r.scan() instanceof TamisScan ? estimate(r.scan()) : null;
        }
        if (leaf instanceof DataSourceV2Relation && ((DataSourceV2Relation) leaf).table() instanceof TamisTable) {
            DataSourceV2Relation r = (DataSourceV2Relation) leaf;
            return estimate(((TamisTable) r.table()).newScanBuilder(r.options()).build());
        }
        return null;
    }

    private static OptionalLong estimate(Scan scan) {
        return scan instanceof SupportsReportStatistics
            ? ((SupportsReportStatistics) scan).estimateStatistics().sizeInBytes() : OptionalLong.empty();
    }

    /**
     * Spark's own test of a runtime filter's benefit, with the narrowed build side: the build
     * side's scans read fewer bytes than the fallback filter ratio (0.5) of the pruned scan's.
     */
    private boolean worthIt(LogicalPlan query, OptionalLong scanned) {
        double build = 0;
        for (LogicalPlan leaf : CollectionConverters.asJava(query.collectLeaves())) {
            build += leaf.stats().sizeInBytes().doubleValue();
        }
        double ratio = session.sessionState().conf().dynamicPartitionPruningFallbackFilterRatio();
        return scanned.isPresent() && build < ratio * scanned.getAsLong();
    }

    private static <T> scala.collection.immutable.Seq<T> seq(List<T> list) {
        return CollectionConverters.asScala(list).toSeq();
    }
}
