//! Data page headers, read where tamis reads a page's bytes itself rather than through the
//! `parquet` crate's page reader (sub-page reads, `sparse`).
//!
//! The Thrift structures are Parquet's own definitions as generated and kept by the Polars
//! project (`polars-parquet-format`, generated from `parquet.thrift`): nothing is decoded by
//! hand here, and the decoder refuses any string or list longer than the bytes it is given, so
//! a hostile header cannot size an allocation.

use polars_parquet_format::thrift::protocol::TCompactInputProtocol;
use polars_parquet_format::{Encoding, PageHeader, PageType};

/// What a data page header says about the bytes that follow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataPageHead {
    /// Bytes of the header itself; the page body follows.
    pub header_len: usize,
    /// Bytes of the body as stored.
    pub body_len: usize,
    /// Levels, including those of NULLs (one per row in a flat column).
    pub num_values: usize,
    /// Whether the values are PLAIN-encoded.
    pub plain: bool,
    pub levels: LevelLayout,
}

/// Where a data page's definition levels are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LevelLayout {
    /// Version 1: levels at the start of the body, RLE with a 4-byte length (`rle`), or the
    /// deprecated BIT_PACKED encoding.
    V1 { rle: bool },
    /// Version 2: repetition then definition levels, their lengths in the header, never
    /// compressed.
    V2 { rep_len: usize, def_len: usize },
}

/// The header at the start of `bytes` if it is a well-formed data page header (v1 or v2) with
/// non-negative sizes; `None` for anything else — another page type, a malformed or truncated
/// header — which the caller leaves to the `parquet` crate's page reader and its errors.
pub fn data_page_head(bytes: &[u8]) -> Option<DataPageHead> {
    let mut input = bytes;
    let mut protocol = TCompactInputProtocol::new(&mut input, bytes.len());
    let header = PageHeader::read_from_in_protocol(&mut protocol).ok()?;
    let header_len = bytes.len() - input.len();
    let body_len = usize::try_from(header.compressed_page_size).ok()?;
    let size = |n: i32| usize::try_from(n).ok();
    let (num_values, encoding, levels) = match header.type_ {
        PageType::DATA_PAGE => {
            let h = header.data_page_header?;
            let rle = match h.definition_level_encoding {
                Encoding::RLE => true,
                Encoding::BIT_PACKED => false,
                _ => return None,
            };
            (size(h.num_values)?, h.encoding, LevelLayout::V1 { rle })
        }
        PageType::DATA_PAGE_V2 => {
            let h = header.data_page_header_v2?;
            let levels = LevelLayout::V2 {
                rep_len: size(h.repetition_levels_byte_length)?,
                def_len: size(h.definition_levels_byte_length)?,
            };
            (size(h.num_values)?, h.encoding, levels)
        }
        _ => return None,
    };
    Some(DataPageHead {
        header_len,
        body_len,
        num_values,
        plain: encoding == Encoding::PLAIN,
        levels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::Arc;

    use arrow::array::{Int64Array, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema};
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
    use parquet::file::reader::{FileReader, SerializedFileReader};

    /// One uncompressed PLAIN column of 1 000 rows (every tenth NULL), in small pages.
    fn file(version: WriterVersion) -> bytes::Bytes {
        let values: Int64Array = (0..1000i64).map(|i| (i % 10 != 0).then_some(i)).collect();
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, true)]));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(values)]).unwrap();
        let props = WriterProperties::builder()
            .set_writer_version(version)
            .set_dictionary_enabled(false)
            .set_encoding(parquet::basic::Encoding::PLAIN)
            .set_data_page_row_count_limit(300)
            .set_write_batch_size(100)
            .set_statistics_enabled(EnabledStatistics::Page)
            .build();
        let mut out = Vec::new();
        let mut w = ArrowWriter::try_new(&mut out, schema, Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        out.into()
    }

    #[test]
    fn headers_agree_with_the_parquet_crates_page_reader() {
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            let bytes = file(version);
            let reader = SerializedFileReader::new(bytes.clone()).unwrap();
            let chunk = reader.metadata().row_group(0).column(0);
            let mut at = chunk.byte_range().0 as usize;
            let mut pages = reader
                .get_row_group(0)
                .unwrap()
                .get_column_page_reader(0)
                .unwrap();
            let mut rows = 0;
            while let Some(page) = pages.get_next_page().unwrap() {
                let head = data_page_head(&bytes[at..]).expect("a data page header");
                assert!(head.plain, "{version:?}");
                assert_eq!(head.num_values, page.num_values() as usize);
                assert_eq!(head.body_len, page.buffer().len(), "{version:?}");
                match (&head.levels, &page) {
                    (
                        LevelLayout::V1 { rle: true },
                        parquet::column::page::Page::DataPage { .. },
                    ) => {}
                    (
                        LevelLayout::V2 { rep_len, def_len },
                        parquet::column::page::Page::DataPageV2 {
                            rep_levels_byte_len,
                            def_levels_byte_len,
                            ..
                        },
                    ) => {
                        assert_eq!(*rep_len, *rep_levels_byte_len as usize);
                        assert_eq!(*def_len, *def_levels_byte_len as usize);
                    }
                    other => panic!("{version:?}: {other:?}"),
                }
                // Every shorter prefix is a truncated header or a page-less one: never a panic,
                // never the same header.
                for n in 0..head.header_len {
                    assert_eq!(data_page_head(&bytes[at..at + n]), None, "{n}");
                }
                rows += head.num_values;
                at += head.header_len + head.body_len;
            }
            assert_eq!(rows, 1000);
        }
    }

    #[test]
    fn garbage_is_none_not_a_panic() {
        assert_eq!(data_page_head(&[]), None);
        assert_eq!(data_page_head(&[0xff; 64]), None);
        // A binary field announcing 2 GiB in a few bytes: refused, not allocated.
        assert_eq!(
            data_page_head(&[0x15, 0x00, 0x18, 0xff, 0xff, 0xff, 0xff, 0x07]),
            None
        );
    }
}
