//! `tamis inspect`: what is in a Parquet file, straight from its metadata.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use parquet::column::page::PageReader;
use parquet::file::metadata::{
    ColumnChunkMetaData, PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader,
};
use parquet::file::serialized_reader::SerializedPageReader;

use crate::{CliError, CliResult};

pub fn run(path: &Path) -> CliResult<()> {
    let file = File::open(path)
        .map_err(|e| CliError::msg(format!("cannot open {}: {e}", path.display())))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let unreadable = |e: parquet::errors::ParquetError| {
        CliError::msg(format!(
            "{}: not a readable Parquet file: {e}",
            path.display()
        ))
    };
    let in_file = |e: tamis::Error| CliError::from(e.in_file(path.display()));
    // The footer's and page indexes' counts are checked before the parquet crate sizes
    // vectors by them; negative offsets or sizes would reach its page reader, which asserts.
    tamis::file::thrift_guard::check_file_footer(&file).map_err(in_file)?;
    let metadata = ParquetMetaDataReader::new()
        .with_page_index_policy(PageIndexPolicy::Skip)
        .parse_and_finish(&file)
        .map_err(unreadable)?;
    let leaves = metadata.file_metadata().schema_descr().num_columns();
    tamis::file::validate_footer(&metadata, leaves).map_err(in_file)?;
    check_page_indexes(&file, len, &metadata).map_err(in_file)?;
    let mut reader = ParquetMetaDataReader::new_with_metadata(metadata)
        .with_page_index_policy(PageIndexPolicy::Optional);
    reader.read_page_indexes(&file).map_err(unreadable)?;
    let metadata = reader.finish().map_err(unreadable)?;
    let file = Arc::new(file);

    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let fm = metadata.file_metadata();
    writeln!(out, "file: {} ({len} bytes)", path.display())?;
    writeln!(
        out,
        "created by: {}",
        fm.created_by().unwrap_or("(unknown)")
    )?;
    writeln!(out, "format version: {}", fm.version())?;
    writeln!(out, "rows: {}", fm.num_rows())?;
    writeln!(out, "row groups: {}", metadata.num_row_groups())?;
    writeln!(out)?;
    writeln!(out, "parquet schema:")?;
    parquet::schema::printer::print_schema(&mut out, fm.schema());
    writeln!(out)?;
    match parquet::arrow::parquet_to_arrow_schema(fm.schema_descr(), fm.key_value_metadata()) {
        Ok(schema) => {
            writeln!(out, "arrow schema:")?;
            for field in schema.fields() {
                let null = if field.is_nullable() { "" } else { " not null" };
                writeln!(out, "  {}: {}{null}", field.name(), field.data_type())?;
            }
        }
        Err(e) => writeln!(
            out,
            "arrow schema: n/a ({})",
            e.to_string().replace('\n', " ")
        )?,
    }
    writeln!(out)?;
    match fm.key_value_metadata() {
        Some(kvs) if !kvs.is_empty() => {
            let keys: Vec<&str> = kvs.iter().map(|kv| kv.key.as_str()).collect();
            writeln!(out, "key-value metadata keys: {}", keys.join(", "))?;
        }
        _ => writeln!(out, "key-value metadata keys: (none)")?,
    }

    for (rg_idx, rg) in metadata.row_groups().iter().enumerate() {
        writeln!(out)?;
        writeln!(
            out,
            "row group {rg_idx}: {} rows, {} bytes uncompressed, {} bytes compressed",
            rg.num_rows(),
            rg.total_byte_size(),
            rg.compressed_size()
        )?;
        for (col_idx, col) in rg.columns().iter().enumerate() {
            let pages = data_pages(&metadata, &file, rg_idx, col_idx, col, rg.num_rows());
            write_column(&mut out, &metadata, rg_idx, col_idx, col, &pages)?;
        }
    }
    out.flush()?;
    Ok(())
}

fn codec_name(c: parquet::basic::Compression) -> String {
    use parquet::basic::Compression as C;
    match c {
        C::ZSTD(l) => format!("ZSTD({})", l.compression_level()),
        C::GZIP(l) => format!("GZIP({})", l.compression_level()),
        C::BROTLI(l) => format!("BROTLI({})", l.compression_level()),
        other => other.to_string(),
    }
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn write_column(
    out: &mut impl Write,
    metadata: &ParquetMetaData,
    rg_idx: usize,
    col_idx: usize,
    col: &ColumnChunkMetaData,
    pages: &str,
) -> std::io::Result<()> {
    let encodings: Vec<String> = col.encodings().map(|e| format!("{e}")).collect();
    let dict = match col.dictionary_page_offset() {
        Some(dict_offset) => dictionary_size(col.data_page_offset(), dict_offset),
        None => "none".to_string(),
    };
    let page_index = metadata.page_index_for_row_group(rg_idx);
    let column_index =
        page_index.column_index(col_idx).is_some() || col.column_index_offset().is_some();
    let offset_index =
        page_index.offset_index(col_idx).is_some() || col.offset_index_offset().is_some();
    writeln!(
        out,
        "  column {}: {} [{}] codec {}, {} compressed / {} uncompressed bytes, {} values",
        col.column_path().string(),
        col.column_type(),
        encodings.join(","),
        codec_name(col.compression()),
        col.compressed_size(),
        col.uncompressed_size(),
        col.num_values()
    )?;
    writeln!(
        out,
        "    data pages: {pages}, dictionary page: {dict}, statistics: {}, column index: {}, offset index: {}, bloom filter: {}",
        yes_no(col.statistics().is_some()),
        yes_no(column_index),
        yes_no(offset_index),
        match col.bloom_filter_length() {
            Some(n) => format!("yes ({n} bytes)"),
            None => yes_no(col.bloom_filter_offset().is_some()).to_string(),
        }
    )
}

/// The dictionary page's size as the footer's offsets give it (the data pages follow it); a
/// footer whose offsets are out of order says so instead of overflowing.
fn dictionary_size(data_page_offset: i64, dictionary_page_offset: i64) -> String {
    match data_page_offset.checked_sub(dictionary_page_offset) {
        Some(n) if n >= 0 => format!("{n} bytes"),
        _ => format!("n/a (offset {dictionary_page_offset}, data pages at {data_page_offset})"),
    }
}

/// Checks the bytes of every page index in the file (see `tamis::file::thrift_guard`); a range
/// outside the file is left to the parquet crate's reader, which reports it.
fn check_page_indexes(file: &File, len: u64, metadata: &ParquetMetaData) -> tamis::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = file;
    for (i, rg) in metadata.row_groups().iter().enumerate() {
        for col in rg.columns() {
            let ranges = [col.column_index_range(), col.offset_index_range()];
            for r in ranges.into_iter().flatten() {
                if r.start >= r.end || r.end > len {
                    continue;
                }
                let mut bytes = vec![0u8; (r.end - r.start) as usize];
                f.seek(SeekFrom::Start(r.start))?;
                f.read_exact(&mut bytes)?;
                tamis::file::thrift_guard::check_page_index(&bytes).map_err(|e| {
                    let mut e = e.in_row_group(i).in_column(col.column_path().string());
                    e.message = format!("reading the page index: {}", e.message);
                    e
                })?;
            }
        }
    }
    Ok(())
}

/// The number of data pages: from the offset index, else by walking the page headers.
fn data_pages(
    metadata: &ParquetMetaData,
    file: &Arc<File>,
    rg_idx: usize,
    col_idx: usize,
    col: &ColumnChunkMetaData,
    num_rows: i64,
) -> String {
    if let Some(locations) = metadata
        .page_index_for_row_group(rg_idx)
        .page_locations(col_idx)
    {
        return locations.len().to_string();
    }
    let count = || -> parquet::errors::Result<usize> {
        let mut reader =
            SerializedPageReader::new(Arc::clone(file), col, num_rows.max(0) as usize, None)?;
        let mut n = 0;
        while let Some(page) = reader.peek_next_page()? {
            if !page.is_dict {
                n += 1;
            }
            reader.skip_next_page()?;
        }
        Ok(n)
    };
    match count() {
        Ok(n) => n.to_string(),
        Err(_) => "n/a".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::dictionary_size;

    #[test]
    fn dictionary_size_never_overflows() {
        assert_eq!(dictionary_size(120, 4), "116 bytes");
        assert_eq!(
            dictionary_size(i64::MIN, 1),
            format!("n/a (offset 1, data pages at {})", i64::MIN)
        );
        assert_eq!(dictionary_size(4, 120), "n/a (offset 120, data pages at 4)");
    }
}
