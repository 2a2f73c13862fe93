package io.tamis.spark;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomSumMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;

/**
 * The scan's funnel in Spark's UI (the SQL tab's scan node): what tamis pruned, read and
 * decoded, summed over the tasks. Spark instantiates each metric class by name on the driver,
 * so each is a public class with a no-argument constructor.
 */
public final class TamisMetrics {
    private TamisMetrics() {}

    /** The metrics a scan reports. */
    static CustomMetric[] all() {
        return new CustomMetric[] {new RowGroupsPrunedPlanning(), new RowGroupsPruned(),
            new PagesPruned(), new BytesRead(),
            new ValuesInPlace(), new ValuesDecoded(), new RowsDropped()};
    }

    /** This task's values, from the scan's counters (the JSON of tamis's ScanMetrics). */
    static CustomTaskMetric[] values(JsonNode m) {
        long rowGroups = m.path("row_groups_pruned_statistics").asLong()
            + m.path("row_groups_pruned_bloom").asLong()
            + m.path("row_groups_pruned_dictionary").asLong()
            + m.path("row_groups_pruned_index").asLong();
        return new CustomTaskMetric[] {
            task("rowGroupsPruned", rowGroups),
            task("pagesPruned", m.path("pages_pruned").asLong()),
            task("bytesRead", m.path("bytes_read").asLong()),
            task("valuesInPlace", m.path("values_in_place").asLong()),
            task("valuesDecoded", m.path("values_decoded").asLong()),
            task("rowsDropped", m.path("rows_total").asLong() - m.path("rows_selected").asLong()),
        };
    }

    /** The driver's values: row groups planning ruled out. */
    static CustomTaskMetric[] driver(long rowGroupsPrunedPlanning) {
        return new CustomTaskMetric[] {task("rowGroupsPrunedPlanning", rowGroupsPrunedPlanning)};
    }

    private static CustomTaskMetric task(String name, long value) {
        return new CustomTaskMetric() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public long value() {
                return value;
            }
        };
    }

    public static final class RowGroupsPrunedPlanning extends CustomSumMetric {
        @Override
        public String name() {
            return "rowGroupsPrunedPlanning";
        }

        @Override
        public String description() {
            return "tamis: row groups pruned on the driver (partition values, statistics): no task";
        }
    }

    public static final class RowGroupsPruned extends CustomSumMetric {
        @Override
        public String name() {
            return "rowGroupsPruned";
        }

        @Override
        public String description() {
            return "tamis: row groups pruned (statistics, Bloom filters, dictionaries, indexes)";
        }
    }

    public static final class PagesPruned extends CustomSumMetric {
        @Override
        public String name() {
            return "pagesPruned";
        }

        @Override
        public String description() {
            return "tamis: pages pruned by the page index";
        }
    }

    public static final class BytesRead extends CustomSumMetric {
        @Override
        public String name() {
            return "bytesRead";
        }

        @Override
        public String description() {
            return "tamis: bytes read";
        }
    }

    public static final class ValuesInPlace extends CustomSumMetric {
        @Override
        public String name() {
            return "valuesInPlace";
        }

        @Override
        public String description() {
            return "tamis: values filtered where they lie (encoded, never decoded)";
        }
    }

    public static final class ValuesDecoded extends CustomSumMetric {
        @Override
        public String name() {
            return "valuesDecoded";
        }

        @Override
        public String description() {
            return "tamis: values decoded";
        }
    }

    public static final class RowsDropped extends CustomSumMetric {
        @Override
        public String name() {
            return "rowsDropped";
        }

        @Override
        public String description() {
            return "tamis: rows dropped by pruning and filters (runtime filters included)";
        }
    }
}
