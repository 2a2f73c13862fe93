//! The statistics a tamis scan reports to DataFusion's optimizer: rows, per-column min, max,
//! nulls and bytes from the footers, for the projected columns only. Join selection builds the
//! hash table on the side with fewer bytes, so a one-column dimension must not report the bytes
//! of its whole table (TPC-H Q13 built on 1.5 M orders instead of 150 K customers).

use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::common::stats::Precision;
use datafusion::common::{JoinType, ScalarValue, Statistics};
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::statistics::{StatisticsArgs, StatisticsContext};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use tamis_arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use tamis_arrow::datatypes::{DataType, Field, Schema};
use tamis_datafusion::TamisTable;

const ROWS: i64 = 30_000;

/// `wide(id, note)`: `note` a 200-byte string, nulls in `id` every 10th row; `narrow(id,
/// blob, kind)`: a tenth of the rows, with 2 000-byte strings the join below does not read and
/// three kinds.
fn write_tables(dir: &std::path::Path) {
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(10_000))
        .build();
    let write = |name: &str, batch: RecordBatch| {
        let file = std::fs::File::create(dir.join(name)).unwrap();
        let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props.clone())).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    };
    let ids = Int64Array::from_iter((0..ROWS).map(|i| (i % 10 != 0).then_some(i - 100)));
    let notes = StringArray::from_iter_values((0..ROWS).map(|i| format!("{i:0>200}")));
    write(
        "wide.parquet",
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("id", DataType::Int64, true),
                Field::new("note", DataType::Utf8, false),
            ])),
            vec![Arc::new(ids) as ArrayRef, Arc::new(notes)],
        )
        .unwrap(),
    );
    let blobs = StringArray::from_iter_values((0..ROWS / 10).map(|i| format!("{i:0>2000}")));
    let kinds = StringArray::from_iter_values((0..ROWS / 10).map(|i| format!("k{}", i % 3)));
    write(
        "narrow.parquet",
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("id", DataType::Int64, false),
                Field::new("blob", DataType::Utf8, false),
                Field::new("kind", DataType::Utf8, false),
            ])),
            vec![
                Arc::new(Int64Array::from_iter_values(0..ROWS / 10)) as ArrayRef,
                Arc::new(blobs),
                Arc::new(kinds),
            ],
        )
        .unwrap(),
    );
}

async fn context(dir: &std::path::Path) -> SessionContext {
    let ctx = SessionContext::new();
    for name in ["wide", "narrow"] {
        let path = dir.join(format!("{name}.parquet"));
        let table = TamisTable::open(path.to_str().unwrap()).unwrap();
        ctx.register_table(name, Arc::new(table)).unwrap();
    }
    ctx
}

async fn plan(ctx: &SessionContext, sql: &str) -> Arc<dyn ExecutionPlan> {
    ctx.sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap()
}

fn scans(p: &Arc<dyn ExecutionPlan>, out: &mut Vec<Arc<dyn ExecutionPlan>>) {
    if p.name() == "TamisExec" {
        out.push(p.clone());
    }
    for c in p.children() {
        scans(c, out);
    }
}

/// The one tamis scan of `sql`'s plan.
async fn scan(ctx: &SessionContext, sql: &str) -> Arc<dyn ExecutionPlan> {
    let mut found = Vec::new();
    scans(&plan(ctx, sql).await, &mut found);
    assert_eq!(found.len(), 1, "{sql}");
    found.pop().unwrap()
}

/// A plan's whole-table statistics, as DataFusion's optimizer asks for them.
trait Stats {
    fn stats(&self) -> Statistics;
}

impl Stats for Arc<dyn ExecutionPlan> {
    fn stats(&self) -> Statistics {
        let context = StatisticsContext::new();
        let s = context
            .compute(self.as_ref(), &StatisticsArgs::new())
            .unwrap();
        s.as_ref().clone()
    }
}

/// The uncompressed bytes of `column`'s chunks, read from the footer by the parquet crate.
fn chunk_bytes(path: &std::path::Path, column: &str) -> usize {
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let meta = reader.metadata();
    meta.row_groups()
        .iter()
        .flat_map(|rg| rg.columns())
        .filter(|c| c.column_path().string() == column)
        .map(|c| c.uncompressed_size() as usize)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scans_report_rows_bounds_nulls_and_the_bytes_of_what_they_project() {
    let dir = tempfile::tempdir().unwrap();
    write_tables(dir.path());
    let ctx = context(dir.path()).await;
    let rows = ROWS as usize;

    let s = scan(&ctx, "SELECT id FROM wide").await.stats();
    assert_eq!(s.num_rows, Precision::Exact(rows));
    assert_eq!(s.total_byte_size, Precision::Inexact(rows * 8));
    let id = &s.column_statistics[0];
    assert_eq!(id.null_count, Precision::Exact(rows / 10));
    assert_eq!(
        id.min_value,
        Precision::Inexact(ScalarValue::Int64(Some(-99)))
    );
    assert_eq!(
        id.max_value,
        Precision::Inexact(ScalarValue::Int64(Some(ROWS - 101)))
    );
    // Bytes are the scan's total only, not per column (see `joins_above_a_semi_join_…`).
    assert_eq!(id.byte_size, Precision::Absent);

    // A string column: the bytes of its chunks as stored uncompressed.
    let note = chunk_bytes(&dir.path().join("wide.parquet"), "note");
    assert!(note > rows * 200, "{note}");
    let s = scan(&ctx, "SELECT note FROM wide").await.stats();
    assert_eq!(s.total_byte_size, Precision::Inexact(note));
    let s = scan(&ctx, "SELECT id, note FROM wide").await.stats();
    assert_eq!(s.total_byte_size, Precision::Inexact(rows * 8 + note));
    // String bounds in the type the table declares: `note` (unique values, so PLAIN pages)
    // keeps `Utf8`; `kind` (three values, dictionary-encoded) is a view, as DataFusion's reader
    // declares it, unless the table keeps the files' types.
    let Precision::Inexact(ScalarValue::Utf8(Some(min))) = &s.column_statistics[1].min_value else {
        panic!("{:?}", s.column_statistics[1].min_value);
    };
    // (A prefix of the first note: the writer truncates bounds.)
    assert!(!min.is_empty() && format!("{:0>200}", 0).starts_with(min.as_str()));
    let s = scan(&ctx, "SELECT kind FROM narrow").await.stats();
    let kind = |v: &str| Precision::Inexact(ScalarValue::Utf8View(Some(v.to_string())));
    assert_eq!(s.column_statistics[0].min_value, kind("k0"));
    assert_eq!(s.column_statistics[0].max_value, kind("k2"));
    let path = dir.path().join("narrow.parquet");
    let plain = TamisTable::open(path.to_str().unwrap())
        .unwrap()
        .with_string_views(false)
        .unwrap();
    let utf8 = &datafusion::arrow::datatypes::DataType::Utf8;
    assert_eq!(plain.schema().field(2).data_type(), utf8);
    let bound = &plain.statistics().unwrap().column_statistics[2].min_value;
    assert_eq!(
        bound,
        &Precision::Inexact(ScalarValue::Utf8(Some("k0".into())))
    );

    // A filter the scan evaluates: rows and bytes scaled by FilterExec's default selectivity.
    let s = scan(&ctx, "SELECT id FROM wide WHERE note LIKE '%7'")
        .await
        .stats();
    assert_eq!(s.num_rows, Precision::Inexact(rows / 5));
    assert_eq!(s.total_byte_size, Precision::Inexact(rows * 8 / 5));
    assert_eq!(s.column_statistics[0].byte_size, Precision::Absent);
}

/// TPC-H Q21's shape: an anti join above a semi join above an inner join. DataFusion's inner
/// joins pass their inputs' column sizes on unscaled and the semi join sums them, so with
/// per-column bytes the few joined rows (carrying `note`) weighed more than the filtered
/// scan of `wide` beside them, and the anti join built its hash table on that scan (Q21:
/// 3.8 M `lineitem` rows). The scans now give no per-column bytes: the joins are compared by
/// rows, and the anti join builds on the joined rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_above_a_semi_join_are_not_weighed_by_unscaled_column_bytes() {
    let dir = tempfile::tempdir().unwrap();
    write_tables(dir.path());
    let ctx = context(dir.path()).await;
    let p = plan(
        &ctx,
        "SELECT n.id, w1.note FROM narrow n JOIN wide w1 ON n.id = w1.id \
         WHERE EXISTS (SELECT 1 FROM wide w2 WHERE w2.id = n.id AND w2.note <> w1.note) \
         AND NOT EXISTS (SELECT 1 FROM wide w3 WHERE w3.id = n.id AND w3.note LIKE '%7')",
    )
    .await;
    let anti = |j: &HashJoinExec| matches!(j.join_type(), JoinType::LeftAnti | JoinType::RightAnti);
    let shown = datafusion::physical_plan::displayable(p.as_ref()).indent(false);
    let j = hash_join(&p, &anti).unwrap_or_else(|| panic!("an anti join:\n{shown}"));
    assert_eq!(
        *j.join_type(),
        JoinType::LeftAnti,
        "built on the scan:\n{shown}"
    );
}

/// A join of the filtered wide table with the narrow one: an estimated 6 000 rows of `id` on
/// one side, 3 000 rows of `id` on the other. The hash table is built on the narrow side; with
/// the whole tables' bytes (a fifth of 6 MB against 6 MB of blobs), the wide side looked
/// smaller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_build_on_the_side_with_fewer_projected_bytes() {
    let dir = tempfile::tempdir().unwrap();
    write_tables(dir.path());
    let ctx = context(dir.path()).await;
    let p = plan(
        &ctx,
        "SELECT n.id, count(w.id) FROM narrow n LEFT JOIN wide w \
         ON n.id = w.id AND w.note NOT LIKE '%7' GROUP BY n.id",
    )
    .await;
    let j = hash_join(&p, &|_| true).expect("a hash join");
    let mut build = Vec::new();
    scans(j.left(), &mut build);
    assert_eq!(build.len(), 1);
    assert!(
        build[0].schema().field_with_name("note").is_err(),
        "built on the wide table:\n{}",
        datafusion::physical_plan::displayable(p.as_ref()).indent(false)
    );
    assert_eq!(*j.join_type(), JoinType::Left);
}

/// The first hash join of `p`, top down, that `keep` accepts.
fn hash_join<'a>(
    p: &'a Arc<dyn ExecutionPlan>,
    keep: &dyn Fn(&HashJoinExec) -> bool,
) -> Option<&'a HashJoinExec> {
    p.downcast_ref::<HashJoinExec>()
        .filter(|j| keep(j))
        .or_else(|| p.children().into_iter().find_map(|c| hash_join(c, keep)))
}

/// `t(x)` of `ROWS` nullable Int64s (NULL every 7th row) in three row groups, written by the
/// parquet crate with chunk statistics, then its footer rewritten so that the row groups in
/// `without` carry min/max but no null count, as older writers left them. Returns the path and
/// the rows where `x` is NULL and not NULL, counted by the parquet crate's reader.
fn write_without_null_counts(dir: &std::path::Path, without: &[usize]) -> (String, usize, usize) {
    use parquet::file::metadata::{ParquetMetaDataReader, ParquetMetaDataWriter};
    use parquet::file::properties::EnabledStatistics;
    use parquet::file::statistics::Statistics as ChunkStats;

    let x = Int64Array::from_iter((0..ROWS).map(|i| (i % 7 != 0).then_some(i)));
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)])),
        vec![Arc::new(x) as ArrayRef],
    )
    .unwrap();
    // No page index: the footer is then all the metadata there is to rewrite.
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(10_000))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .build();
    let mut bytes = Vec::new();
    let mut w = ArrowWriter::try_new(&mut bytes, batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let written = dir.join("written.parquet");
    std::fs::write(&written, &bytes).unwrap();
    let meta = ParquetMetaDataReader::new()
        .parse_and_finish(&std::fs::File::open(&written).unwrap())
        .unwrap();
    assert_eq!(meta.num_row_groups(), 3);
    let row_groups = (meta.row_groups().iter().enumerate())
        .map(|(ri, rg)| {
            let columns = (rg.columns().iter())
                .map(|c| {
                    let Some(ChunkStats::Int64(s)) = c.statistics() else {
                        panic!("no Int64 statistics: {:?}", c.statistics());
                    };
                    assert!(s.null_count_opt().is_some());
                    let nulls = (!without.contains(&ri)).then(|| s.null_count_opt().unwrap());
                    let stats = ChunkStats::int64(
                        s.min_opt().copied(),
                        s.max_opt().copied(),
                        None,
                        nulls,
                        false,
                    );
                    c.clone()
                        .into_builder()
                        .set_statistics(stats)
                        .build()
                        .unwrap()
                })
                .collect();
            rg.clone()
                .into_builder()
                .set_column_metadata(columns)
                .build()
                .unwrap()
        })
        .collect();
    let meta = meta.into_builder().set_row_groups(row_groups).build();
    // The data pages as written, then the new footer (metadata, its length, `PAR1`).
    let footer_len =
        u32::from_le_bytes(bytes[bytes.len() - 8..bytes.len() - 4].try_into().unwrap());
    let mut file = bytes[..bytes.len() - 8 - footer_len as usize].to_vec();
    ParquetMetaDataWriter::new(&mut file, &meta)
        .finish()
        .unwrap();
    let path = dir.join("t.parquet");
    std::fs::write(&path, &file).unwrap();

    // The oracle: the parquet crate's reader, which reads the footer back without null counts.
    let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
    for (ri, rg) in reader.metadata().row_groups().iter().enumerate() {
        let s = rg.column(0).statistics().unwrap();
        assert_eq!(s.null_count_opt().is_none(), without.contains(&ri));
        assert!(s.min_bytes_opt().is_some() && s.max_bytes_opt().is_some());
    }
    let rows = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(&path).unwrap(),
    )
    .unwrap()
    .build()
    .unwrap();
    let (mut nulls, mut valid) = (0, 0);
    for b in rows {
        let b = b.unwrap();
        nulls += b.column(0).null_count();
        valid += b.num_rows() - b.column(0).null_count();
    }
    assert!(nulls > 0 && valid > 0);
    (path.to_str().unwrap().to_string(), nulls, valid)
}

/// A column chunk without a null count has unknown nulls, not none: DataFusion answers
/// `count(x)` from exact statistics as rows − nulls, so an exact 0 counted the NULLs too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_null_counts_are_absent_not_zero() {
    for without in [&[0, 1, 2][..], &[1][..]] {
        let dir = tempfile::tempdir().unwrap();
        let (path, nulls, valid) = write_without_null_counts(dir.path(), without);
        let table = TamisTable::open(&path).unwrap();
        let s = table.statistics().unwrap();
        assert_eq!(s.num_rows, Precision::Exact(ROWS as usize));
        let x = &s.column_statistics[0];
        assert_eq!(x.null_count, Precision::Absent, "{without:?}");
        // Min/max stay what the footer says, as bounds only.
        assert!(
            matches!(x.min_value, Precision::Inexact(_) | Precision::Absent),
            "{:?}",
            x.min_value
        );
        assert!(
            matches!(x.max_value, Precision::Inexact(_) | Precision::Absent),
            "{:?}",
            x.max_value
        );

        let ctx = tamis_datafusion::sql::session(2, true);
        ctx.register_table("t", Arc::new(table)).unwrap();
        let count = |sql: &'static str| {
            let ctx = ctx.clone();
            async move {
                let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
                let col = batches[0]
                    .column(0)
                    .as_any()
                    .downcast_ref::<datafusion::arrow::array::Int64Array>()
                    .unwrap()
                    .value(0);
                col as usize
            }
        };
        assert_eq!(count("SELECT count(x) FROM t").await, valid, "{without:?}");
        assert_eq!(count("SELECT count(*) FROM t").await, ROWS as usize);
        // The scan's own pruning: a chunk without a null count may hold NULLs, and may not.
        let q = "SELECT count(*) FROM t WHERE x IS NULL";
        assert_eq!(count(q).await, nulls, "{without:?}");
        let q = "SELECT count(*) FROM t WHERE x IS NOT NULL";
        assert_eq!(count(q).await, valid, "{without:?}");
    }
}
