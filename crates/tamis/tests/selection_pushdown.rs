//! Selection pushdown engaged: later filters and projections decode only the values of rows
//! still alive (paper §4), proven by `values_decoded`, with the exact rows checked against the
//! oracle (the `parquet` crate's reader plus Arrow kernels).

mod common;

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow::array::*;
use arrow::compute::kernels::cmp::eq;
use arrow::compute::{and, filter_record_batch};
use arrow::datatypes::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Encoding;
use parquet::file::properties::{EnabledStatistics, WriterProperties};

use common::{diff_batches, oracle_read, project, tamis_scan, Req};
use tamis::Evaluation;

/// 64 Ki rows; `a = i % 4` and `b = (i / 4) % 4` are independent and each value selects exactly a
/// quarter of the rows, so the rows decoded do not depend on which filter runs first.
const ROWS: usize = 1 << 16;

fn write_file(path: &Path, b_dictionary: bool) {
    let a: Int64Array = (0..ROWS).map(|i| (i % 4) as i64).collect();
    let b: Int32Array = (0..ROWS).map(|i| ((i / 4) % 4) as i32).collect();
    // Nullable payload: every third row is null; 1000 distinct values, dictionary-encoded.
    let c: Int64Array = (0..ROWS)
        .map(|i| (i % 3 != 0).then_some((i * 7 % 1000) as i64))
        .collect();
    let s: StringArray = (0..ROWS)
        .map(|i| (i % 5 != 0).then(|| format!("s{}", i % 97)))
        .collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, false),
        Field::new("b", DataType::Int32, false),
        Field::new("c", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(a), Arc::new(b), Arc::new(c), Arc::new(s)],
    )
    .unwrap();
    let mut props = WriterProperties::builder()
        .set_statistics_enabled(EnabledStatistics::None)
        .set_data_page_row_count_limit(5000)
        .set_write_batch_size(1000);
    if !b_dictionary {
        props = props
            .set_column_dictionary_enabled("b".into(), false)
            .set_column_encoding("b".into(), Encoding::PLAIN);
    }
    let mut w =
        ArrowWriter::try_new(File::create(path).unwrap(), schema, Some(props.build())).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

fn check(path: &Path, select: &[&str], evaluation: Evaluation) -> tamis::ScanMetrics {
    let sql = "a = 1 AND b = 2";
    let data = oracle_read(path).unwrap();
    let mask = and(
        &eq(
            data.column_by_name("a").unwrap(),
            &Int64Array::new_scalar(1),
        )
        .unwrap(),
        &eq(
            data.column_by_name("b").unwrap(),
            &Int32Array::new_scalar(2),
        )
        .unwrap(),
    )
    .unwrap();
    let names: Vec<String> = select.iter().map(|s| s.to_string()).collect();
    let want = project(&filter_record_batch(&data, &mask).unwrap(), &names);
    let req = Req {
        filter: Some(sql),
        select: Some(names),
        threads: Some(1),
        evaluation: Some(evaluation),
        ..Req::default()
    };
    let (got, m) = tamis_scan(path.to_str().unwrap(), &req).unwrap();
    if let Some(d) = diff_batches(&got, &want) {
        panic!("{}: {d}", path.display());
    }
    assert_eq!(m.rows_selected, (ROWS / 16) as u64);
    m
}

#[test]
fn later_filters_and_projections_decode_only_alive_values() {
    let dir = tempfile::tempdir().unwrap();
    for b_dictionary in [true, false] {
        let path = dir.path().join(format!("sel_{b_dictionary}.parquet"));
        write_file(&path, b_dictionary);
        // The first filter tests every value in place (dictionary codes or PLAIN bytes) and
        // decodes none; the second selects and decodes only the quarter still alive.
        let filters = (ROWS / 4) as u64;
        let m = check(&path, &["a"], Evaluation::Selected);
        assert_eq!(m.values_in_place, ROWS as u64, "{m:?}");
        // `a = 1` pins `a`: its projection decodes nothing (every selected row holds 1).
        assert_eq!(m.values_decoded, filters, "{m:?}");
        // Payload with nulls: only the selected non-null values are decoded.
        let selected_non_null = (0..ROWS)
            .filter(|&i| i % 4 == 1 && (i / 4) % 4 == 2 && i % 3 != 0)
            .count() as u64;
        let m = check(&path, &["c"], Evaluation::Selected);
        assert_eq!(m.values_decoded, filters + selected_non_null, "{m:?}");
        let selected_strings = (0..ROWS)
            .filter(|&i| i % 4 == 1 && (i / 4) % 4 == 2 && i % 5 != 0)
            .count() as u64;
        let m = check(&path, &["s", "c"], Evaluation::Selected);
        assert_eq!(
            m.values_decoded,
            filters + selected_non_null + selected_strings,
            "{m:?}"
        );
        assert_eq!(m.pages_evaluated_whole, 0, "{m:?}");
    }
}

/// Whole-page evaluation of partly alive pages (what the never-slower policy switches to when
/// selecting does not pay): in place on dictionary codes and PLAIN bytes, nothing decoded by
/// the filters; the adaptive default gives the same rows.
#[test]
fn whole_page_evaluation_is_in_place() {
    let dir = tempfile::tempdir().unwrap();
    for b_dictionary in [true, false] {
        let path = dir.path().join(format!("whole_{b_dictionary}.parquet"));
        write_file(&path, b_dictionary);
        let m = check(&path, &["c"], Evaluation::Whole);
        let selected_non_null = (0..ROWS)
            .filter(|&i| i % 4 == 1 && (i / 4) % 4 == 2 && i % 3 != 0)
            .count() as u64;
        assert_eq!(m.values_decoded, selected_non_null, "{m:?}");
        assert_eq!(m.values_in_place, 2 * ROWS as u64, "{m:?}");
        assert!(m.pages_evaluated_whole > 0, "{m:?}");
        let m = check(&path, &["c"], Evaluation::Auto);
        assert!(m.values_in_place + m.values_decoded >= ROWS as u64, "{m:?}");
    }
}

/// A dense projection of a dictionary column is one Arrow `take` from the dictionary built as
/// an array. A dictionary entry that is not UTF-8 must not fail a scan that never selects it
/// (the values are then looked up and checked one by one, as on every other path), and must
/// fail, naming the column, a scan that does.
#[test]
fn an_invalid_dictionary_entry_fails_only_the_scans_that_select_it() {
    use parquet::data_type::{ByteArray, ByteArrayType, Int32Type};
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad_entry.parquet");
    let schema =
        parse_message_type("message m { required int32 k; optional binary s (STRING); }").unwrap();
    let n = 20_000usize;
    // Row 7 holds the only invalid entry; every fifth row is NULL.
    let text = |i: usize| -> Vec<u8> {
        if i == 7 {
            vec![b'x', 0xff]
        } else {
            format!("v{}", i % 13).into_bytes()
        }
    };
    let props = WriterProperties::builder()
        .set_data_page_row_count_limit(4000)
        .set_write_batch_size(1000)
        .build();
    let mut w =
        SerializedFileWriter::new(File::create(&path).unwrap(), Arc::new(schema), props.into())
            .unwrap();
    let mut rg = w.next_row_group().unwrap();
    let mut col = rg.next_column().unwrap().unwrap();
    let k: Vec<i32> = (0..n as i32).collect();
    col.typed::<Int32Type>()
        .write_batch(&k, None, None)
        .unwrap();
    col.close().unwrap();
    let mut col = rg.next_column().unwrap().unwrap();
    let defs: Vec<i16> = (0..n).map(|i| i16::from(i % 5 != 0)).collect();
    let values: Vec<ByteArray> = (0..n)
        .filter(|i| i % 5 != 0)
        .map(|i| ByteArray::from(text(i)))
        .collect();
    col.typed::<ByteArrayType>()
        .write_batch(&values, Some(&defs), None)
        .unwrap();
    col.close().unwrap();
    rg.close().unwrap();
    w.close().unwrap();

    let p = path.to_str().unwrap();
    let scan = |filter: &str| {
        let req = Req {
            filter: Some(filter),
            select: Some(vec!["s".into()]),
            threads: Some(1),
            ..Req::default()
        };
        tamis_scan(p, &req)
    };
    let (got, _) = scan("k <> 7").unwrap();
    let want: StringArray = (0..n)
        .filter(|&i| i != 7)
        .map(|i| (i % 5 != 0).then(|| String::from_utf8(text(i)).unwrap()))
        .collect();
    let got = got
        .column(0)
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap();
    assert_eq!(got, &want);
    for filter in ["k >= 0", "k = 7"] {
        let e = scan(filter).unwrap_err().to_string();
        assert!(e.contains("UTF-8") && e.contains("'s'"), "{filter}: {e}");
    }
}

/// A column selected twice, with the row group handed on in several ranges: each range frees
/// the pages it passed, and the second copy reads them again.
#[test]
fn a_column_selected_twice_in_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("twice.parquet");
    write_file(&path, true);
    let data = oracle_read(&path).unwrap();
    let mask = eq(
        data.column_by_name("b").unwrap(),
        &Int32Array::new_scalar(2),
    )
    .unwrap();
    let kept = filter_record_batch(&data, &mask).unwrap();
    for range_rows in [None, Some(1000), Some(4099)] {
        let req = Req {
            filter: Some("b = 2"),
            select: Some(vec!["s".into(), "c".into(), "s".into()]),
            threads: Some(1),
            range_rows,
            ..Req::default()
        };
        let (got, _) = tamis_scan(path.to_str().unwrap(), &req).unwrap();
        let s = kept.column_by_name("s").unwrap();
        let c = kept.column_by_name("c").unwrap();
        assert_eq!(got.num_columns(), 3);
        assert_eq!(got.column(0), s, "{range_rows:?}");
        assert_eq!(got.column(1), c, "{range_rows:?}");
        assert_eq!(got.column(2), s, "{range_rows:?}");
    }
}
