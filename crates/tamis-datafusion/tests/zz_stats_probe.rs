use std::sync::Arc;
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show() {
    let q = std::fs::read_to_string("../../bench/tpch/queries/q21.sql").unwrap();
    let mut config = tamis_datafusion::sql::config(1, true);
    config.options_mut().explain.show_statistics = true;
    let ctx = tamis_datafusion::sql::session_with(config);
    for t in ["lineitem", "orders", "supplier", "nation"] {
        let table =
            tamis_datafusion::TamisTable::open(&format!("/work/data/sf1/{t}.parquet")).unwrap();
        ctx.register_table(t, Arc::new(table)).unwrap();
    }
    let df = ctx.sql(&format!("EXPLAIN VERBOSE {q}")).await.unwrap();
    let b = df.collect().await.unwrap();
    let fmt = arrow::util::pretty::pretty_format_batches(&b)
        .unwrap()
        .to_string();
    println!("{fmt}");
}
