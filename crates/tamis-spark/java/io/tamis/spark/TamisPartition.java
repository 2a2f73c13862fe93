package io.tamis.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.read.InputPartition;

/** Row groups of some files, and the dataset columns those files have. */
final class TamisPartition implements InputPartition {
    private static final long serialVersionUID = 1L;

    /** Row groups {@code [first, end)} of one file. */
    static final class Part implements Serializable {
        private static final long serialVersionUID = 1L;
        final String location;
        final long size;
        final int first;
        final int end;

        Part(String location, long size, int first, int end) {
            this.location = location;
            this.size = size;
            this.first = first;
            this.end = end;
        }
    }

    final List<Part> parts;
    /** Columns of these files (a column none of them has is NULL in their rows). */
    final List<String> columns;
    /** Rows in these row groups. */
    final long rows;
    /**
     * The runtime filters the scan had when it planned this partition. They travel with the
     * partitions, not the reader factory: Spark makes the factory before it hands the scan
     * its runtime filters.
     */
    final List<Filters.Conjunct> runtime;

    TamisPartition(List<Part> parts, List<String> columns, long rows,
                   List<Filters.Conjunct> runtime) {
        this.parts = new ArrayList<>(parts);
        this.columns = new ArrayList<>(columns);
        this.rows = rows;
        this.runtime = new ArrayList<>(runtime);
    }

    @Override
    public String toString() {
        StringBuilder s = new StringBuilder("TamisPartition(");
        for (Part p : parts) {
            s.append(p.location).append('[').append(p.first).append("..").append(p.end).append(") ");
        }
        return s.append(')').toString();
    }
}
