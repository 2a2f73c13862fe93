"""Writes what pyarrow reads from the parquet-testing files that the `parquet` crate refuses or
reads differently (see `PYARROW_READ` in conformance.rs): one Arrow IPC file per Parquet file,
beside this script, which the conformance test compares tamis's scan with, names, types
and values.

INT96 is read in microseconds (`coerce_int96_timestamp_unit="us"`), the unit tamis gives it.
Schema metadata is dropped (tamis passes the file's own through; the test compares fields).

    python crates/tamis/tests/pyarrow/write_expected.py /path/to/parquet-testing

Written with pyarrow 26.0.1.
"""

import pathlib
import sys

import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq

FILES = [
    "dict-page-offset-zero.parquet",
    "int96_from_spark.parquet",
    "nation.dict-malformed.parquet",
    "repeated_no_annotation.parquet",
]


def main(corpus: str) -> None:
    out = pathlib.Path(__file__).parent
    for name in FILES:
        table = pq.read_table(
            pathlib.Path(corpus) / "data" / name, coerce_int96_timestamp_unit="us"
        ).replace_schema_metadata(None)
        target = out / (name.removesuffix(".parquet") + ".arrow")
        with pa.ipc.new_file(target, table.schema) as writer:
            writer.write_table(table)
        print(f"{target}: {table.num_rows} rows, {table.schema}".replace("\n", "; "))


if __name__ == "__main__":
    main(sys.argv[1])
