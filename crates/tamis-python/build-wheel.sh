#!/usr/bin/env bash
# Builds the release wheel of the Python package with the Spark connector's jar inside (the
# jar is built first into python/tamis/jars/, which the wheel includes; see pyproject.toml).
#
# Usage: bash crates/tamis-python/build-wheel.sh [OUT_DIR]
#   PYTHON=python with pyspark and maturin (default python3); PROFILE=release|dev (default
#   release) for both the jar's native library and the Python extension.
#   OUT_DIR defaults to $CARGO_TARGET_DIR/wheels.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
python="${PYTHON:-python3}"
profile="${PROFILE:-release}"
out="${1:-$CARGO_TARGET_DIR/wheels}"

PROFILE="$profile" PYTHON="$python" bash "$root/crates/tamis-spark/build-jar.sh" \
    "$here/python/tamis/jars/tamis-spark.jar"
"$python" -m maturin build --profile "$profile" -m "$here/Cargo.toml" -o "$out"
wheel="$(ls -t "$out"/tamis-*.whl | head -n 1)"
if ! "$python" -m zipfile -l "$wheel" | grep -q "tamis/jars/tamis-spark.jar"; then
    echo "build-wheel: $wheel has no Spark jar" >&2
    exit 1
fi
echo "$wheel"
