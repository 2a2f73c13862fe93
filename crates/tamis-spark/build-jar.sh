#!/usr/bin/env bash
# Builds tamis's Spark connector jar: the Java DataSource V2 classes (java/), compiled against
# the Spark jars of the installed `pyspark` package, Arrow's C Data Interface classes (Spark
# ships Arrow's vectors but not these; fetched once from Maven Central and checked against its
# SHA-1), and the Rust core's JNI library for linux x86-64.
#
# Usage: bash crates/tamis-spark/build-jar.sh [OUT.jar]
#   PROFILE=release|dev (default release), PYTHON=python with pyspark (default python3).
#   TAMIS_SPARK_LIB=a libtamis_spark.so already built, to carry instead of building one (CI
#   passes its workspace build's: `-p tamis-spark` alone resolves shared dependencies' features
#   for this crate only, so Cargo would compile most of the workspace's dependencies again).
#   OUT defaults to $CARGO_TARGET_DIR/tamis-spark.jar.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
profile="${PROFILE:-release}"
python="${PYTHON:-python3}"
out="${1:-$CARGO_TARGET_DIR/tamis-spark.jar}"

if [ -n "${TAMIS_SPARK_LIB:-}" ]; then
    lib="$TAMIS_SPARK_LIB"
    if [ ! -s "$lib" ]; then
        echo "build-jar: TAMIS_SPARK_LIB=$lib is not a built library" >&2
        exit 1
    fi
else
    cargo build -q -p tamis-spark --profile "$profile" --manifest-path "$root/Cargo.toml"
    dir="$([ "$profile" = dev ] && echo debug || echo "$profile")"
    lib="$CARGO_TARGET_DIR/$dir/libtamis_spark.so"
fi

jars="$("$python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
# Arrow's C Data classes of the same version as Spark's Arrow vectors.
vector="$(ls "$jars" | sed -n 's/^arrow-vector-\(.*\)\.jar$/\1/p' | head -n 1)"
if [ -z "$vector" ]; then
    echo "build-jar: no arrow-vector jar in $jars" >&2
    exit 1
fi
cache="${TAMIS_JAR_CACHE:-$HOME/.cache/tamis-spark}"
cdata="$cache/arrow-c-data-$vector.jar"
if [ ! -s "$cdata" ]; then
    mkdir -p "$cache"
    url="https://repo1.maven.org/maven2/org/apache/arrow/arrow-c-data/$vector/arrow-c-data-$vector.jar"
    curl -sSfL --retry 3 -o "$cdata.part" "$url"
    sha1="$(curl -sSfL --retry 3 "$url.sha1" | cut -c1-40)"
    if [ "$(sha1sum "$cdata.part" | cut -c1-40)" != "$sha1" ]; then
        echo "build-jar: $url does not match its SHA-1" >&2
        rm -f "$cdata.part"
        exit 1
    fi
    mv "$cdata.part" "$cdata"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/classes/native/linux-x86_64"
javac -nowarn --release 17 -cp "$jars/*:$cdata" -d "$work/classes" \
    $(find "$here/java" -name '*.java')
cp -r "$here/java/META-INF" "$work/classes/"
# Arrow's C Data classes and their own JNI library (x86-64 Linux), without its manifest.
(cd "$work/classes" && unzip -q -o "$cdata" 'org/*' 'arrow_cdata_jni/x86_64/*.so')
cp "$lib" "$work/classes/native/linux-x86_64/libtamis_spark.so"
mkdir -p "$(dirname "$out")"
rm -f "$out"
jar --create --file "$out" -C "$work/classes" .
echo "$out"
