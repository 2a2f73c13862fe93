#!/usr/bin/env bash
# The scaling benchmark on a many-core machine, as one prepared run (issue 42): TPC-H at SF
# ${SF:-10} from tpchgen-cli, then the SQL queries and the lineitem scans at several thread
# counts, tamis (runtime filters on and off) against DuckDB, each thread count in a process
# confined to that many CPUs. Results (JSON and Markdown) go to $OUT; the scaling tables
# (bench/scaling.py) are printed last.
#
#   OUT=/tmp/out bash bench/scaling.sh            # packages already installed
#   KIT=.dev OUT=/tmp/out bash bench/scaling.sh   # a machine without network: unpack KIT first
#
# KIT (optional) holds xz-compressed tarballs of installed Python packages (*.tar.xz: the tamis
# wheel's contents, stripped; duckdb) and tpchgen-cli.xz; they are unpacked into /tmp/site.
# Knobs: SF, THREADS (the key queries' counts, default 1,4,16), ALL_THREADS (all 22 queries,
# default 16,4: the first, then the rest), KEY (the key queries), RUNS,
# DEADLINE (seconds for the whole run), STEPS (a comma-separated subset of key,all,scans,all-more).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/scaling-out}
SF=${SF:-10}
THREADS=${THREADS:-1,4,16}
ALL_THREADS=${ALL_THREADS:-16,4}
KEY=${KEY:-q01,q06,q17}
RUNS=${RUNS:-2}
DATA=${DATA:-/tmp/tpch}
RES=/tmp/scaling-results
mkdir -p "$OUT" "$RES" "$DATA"
tpchgen=tpchgen-cli
if [ -n "${KIT:-}" ]; then
    mkdir -p /tmp/site
    for t in "$KIT"/*.tar.xz; do xz -dc "$t" | tar xf - -C /tmp/site || exit 1; done
    xz -dc "$KIT/tpchgen-cli.xz" > /tmp/tpchgen-cli && chmod +x /tmp/tpchgen-cli
    tpchgen=/tmp/tpchgen-cli
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1
{ nproc; grep -m1 "model name" /proc/cpuinfo; free -g | head -2; python3 -c "import tamis, duckdb, pyarrow; print('tamis', tamis.__file__, 'duckdb', duckdb.__version__, 'pyarrow', pyarrow.__version__)"; } 2>&1 | tee "$OUT/machine.txt"

tables="$DATA/tpch-sf$SF"
if [ ! -f "$tables/lineitem.parquet" ]; then
    start=$(date +%s)
    "$tpchgen" parquet -s "$SF" -o "$tables" || exit 1
    echo "generated SF $SF in $(( $(date +%s) - start )) s: $(du -sh "$tables" | cut -f1)"
fi

# Copies what exists so far to $OUT (a run cut short still returns its results).
save() { cp "$RES"/*.json "$OUT"/ 2>/dev/null; true; }

# step NAME CAP_SECONDS COMMAND…: runs the command for at most CAP seconds and never past the
# DEADLINE (seconds since the script started; default: none), then keeps its JSON.
step() {
    local name=$1 cap=$2; shift 2
    case ",${STEPS:-key,all,scans,all-more}," in *",$name,"*) ;; *) return ;; esac
    if [ -n "${DEADLINE:-}" ] && [ $(( DEADLINE - SECONDS )) -lt "$cap" ]; then
        cap=$(( DEADLINE - SECONDS ))
    fi
    if [ "$cap" -lt 20 ]; then echo "=== $name: skipped, no time left"; return; fi
    echo "=== $name (at most $cap s): $*"
    local start=$SECONDS
    timeout "$cap" "$@" > "$RES/$name.log" 2>&1
    local rc=$?
    grep -E "WRONG|FAILED|Error" "$RES/$name.log" | head -5
    echo "=== $name: rc=$rc in $(( SECONDS - start )) s"
    cp "$RES/$name/"*.json "$RES/$name.json" 2>/dev/null
    save
}

sql=(python3 bench/tpch_sql.py --data-dir "$tables" --experiments tpch)
# 1. The key queries at every count: tamis with runtime filters on and off, and DuckDB.
step key 240 "${sql[@]}" --queries "$KEY" --threads "$THREADS" --runs "$RUNS" \
    --engines tamis,tamis-no-rf,duckdb --results-dir "$RES/key"
# 2. All 22 queries at the most threads, one timed run each.
step all 150 "${sql[@]}" --threads "${ALL_THREADS%%,*}" --runs 1 --engines tamis,tamis-no-rf,duckdb \
    --results-dir "$RES/all"
# 3. The lineitem scans (bench/run.py's tpch suite), warm.
step scans 120 python3 bench/run.py --suite tpch --data-dir "$DATA" --sf "$SF" \
    --threads "${SCAN_THREADS:-$THREADS}" --cache warm --runs "$RUNS" --engines tamis,duckdb --results-dir "$RES/scans" --tamis-cli "$(command -v false)"
# 4. All 22 queries at the other counts.
if [ "${ALL_THREADS#*,}" != "$ALL_THREADS" ]; then
    step all-more 600 "${sql[@]}" --threads "${ALL_THREADS#*,}" --runs 1 --engines tamis,tamis-no-rf,duckdb \
        --results-dir "$RES/all-more"
fi

for f in key all scans all-more; do
    [ -f "$RES/$f.json" ] || continue
    echo "##### $f"
    python3 bench/scaling.py "$RES/$f.json"
done | tee "$OUT/scaling.md"
