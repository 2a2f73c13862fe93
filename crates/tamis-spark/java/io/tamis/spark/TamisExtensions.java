package io.tamis.spark;

import org.apache.spark.sql.SparkSessionExtensions;
import scala.Function1;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * tamis's session extension ({@code spark.sql.extensions=io.tamis.spark.TamisExtensions}):
 * adds {@link TamisRuntimeFilters}, which gives tamis scans the join keys Spark's own dynamic
 * pruning leaves out. The data source works without it.
 */
public final class TamisExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        Function1<org.apache.spark.sql.SparkSession, org.apache.spark.sql.catalyst.rules.Rule<
            org.apache.spark.sql.catalyst.plans.logical.LogicalPlan>> rule = TamisRuntimeFilters::new;
        extensions.injectPreCBORule(rule);
        return BoxedUnit.UNIT;
    }
}
