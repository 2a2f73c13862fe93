#!/usr/bin/env bash
# The tamis demo: build, generate TPC-H SF1 lineitem (once), run selective queries with their
# pruning funnels. Usage: bash scripts/demo.sh
set -euo pipefail

cd "$(dirname "$0")/.."

cargo build --release -p tamis-cli
tamis="${CARGO_TARGET_DIR:-target}/release/tamis"

data=data/tpch-sf1
file="$data/lineitem.parquet"
if [ ! -f "$file" ]; then
    echo "== generating TPC-H SF1 lineitem into $data (one time) =="
    "$tamis" gen tpch --scale-factor 1 --output "$data" --tables lineitem
fi

echo
echo "== tamis inspect $file (head) =="
"$tamis" inspect "$file" | head -n 50

run() {
    local title="$1"
    shift
    echo
    echo "================================================================"
    echo "== $title"
    echo "================================================================"
    "$tamis" query "$file" "$@" --limit 5
    echo "-- funnel:"
    # Without --limit: the funnel of the whole scan.
    local args=()
    while [ $# -gt 0 ]; do
        case "$1" in
            --where|--select) args+=("$1" "$2"); shift 2 ;;
            *) shift ;;
        esac
    done
    "$tamis" explain "$file" "${args[@]}"
}

run "TPC-H Q6 filter" \
    --where "l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24" \
    --select l_extendedprice,l_discount

run "point lookup" \
    --where "l_orderkey = 3000000" \
    --select l_orderkey,l_linenumber,l_partkey,l_quantity,l_shipdate

run "dictionary-friendly string predicate" \
    --where "l_shipmode = 'AIR' AND l_quantity < 5" \
    --select l_orderkey,l_shipmode,l_quantity

run "LIKE on a long string column" \
    --where "l_comment LIKE '%special%requests%'" \
    --select l_orderkey,l_comment
