//! Counts in metadata that the `parquet` crate sizes vectors by, checked before it decodes them
//! (`tamis::file::thrift_guard`). Each input below made it reserve gigabytes from a few bytes;
//! each is now a corrupt-file error naming the file, with at most 64 MiB live at the peak
//! (measured by the counting global allocator).

use std::path::{Path, PathBuf};

use tamis::ErrorKind;
use tamis_fuzz::{alloc::Counting, check_scan, Request};

#[global_allocator]
static GLOBAL: Counting = Counting;

const BUDGET: usize = 64 << 20;

/// A kept fuzzer input, `tests/inputs/<name>`.
fn input(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/inputs")
        .join(name)
}

/// Scans `path` with `req`: a clean corrupt-file error naming the file, containing `expected`,
/// within the budget.
fn assert_refused(path: &Path, req: &Request, expected: &str) {
    let verdict = check_scan(path, req, BUDGET).unwrap_or_else(|e| panic!("{e}"));
    let name = path.file_name().unwrap().to_str().unwrap();
    let (_, e) = tamis_fuzz::scan(path.to_str().unwrap(), req).expect_err("refused");
    assert_eq!(e.kind, ErrorKind::CorruptFile, "{e}");
    assert!(
        verdict.contains(name) && verdict.contains(expected),
        "{verdict}"
    );
}

/// An OffsetIndex whose page-location list announces 67 108 863 entries in 27 bytes (found by a
/// timed `tamis-fuzz` run, seed 1795596516, target `file`, kept as
/// `inputs/offset_index_list_length.parquet`): the `parquet` crate's offset index decoder
/// reserved 1.6 GB before reading an entry. Any filtered scan loads the page index.
#[test]
fn offset_index_list_length_is_checked_against_its_bytes() {
    let path = input("offset_index_list_length.parquet");
    let req = Request {
        filter: Some("i32 = 5".into()),
        ..Request::default()
    };
    assert_refused(&path, &req, "announces 67108863 elements");
}

/// A schema root announcing `i32::MAX` children with one leaf after it: the `parquet` crate's
/// schema builder reserved 16 GiB (`num_children` × 8) before finding the children missing.
#[test]
fn schema_num_children_is_checked_against_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    for (children, expected) in [
        (i32::MAX, "more children than the schema's 2 elements hold"),
        (3, "more children"),
    ] {
        let path = dir.path().join(format!("root_children_{children}.parquet"));
        std::fs::write(&path, file_with_root_children(children)).unwrap();
        assert_refused(&path, &Request::default(), expected);
    }
    // The same file with the true count opens and reads its zero rows.
    let path = dir.path().join("root_children_1.parquet");
    std::fs::write(&path, file_with_root_children(1)).unwrap();
    assert_eq!(
        tamis_fuzz::scan(path.to_str().unwrap(), &Request::default()).unwrap(),
        0
    );
}

/// A file with no row groups whose schema is a root with `children` declared children and one
/// required INT32 leaf `x`, its footer hand-encoded in the Thrift compact protocol.
fn file_with_root_children(children: i32) -> Vec<u8> {
    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    let zigzag = |v: i64| ((v << 1) ^ (v >> 63)) as u64;
    let mut f = Vec::new();
    // FileMetaData.version (1, i32) = 2
    f.push(0x15);
    varint(&mut f, zigzag(2));
    // FileMetaData.schema (2, list of 2 structs)
    f.extend([0x19, 0x2c]);
    // root: name (4, binary) = "schema", num_children (5, i32)
    f.push(0x48);
    varint(&mut f, 6);
    f.extend(b"schema");
    f.push(0x15);
    varint(&mut f, zigzag(children.into()));
    f.push(0);
    // leaf: type (1) = INT32 (1), repetition_type (3) = REQUIRED (0), name (4) = "x"
    f.extend([0x15, 0x02, 0x25, 0x00, 0x18, 0x01, b'x', 0x00]);
    // FileMetaData.num_rows (3, i64) = 0; row_groups (4, empty list of structs); stop
    f.extend([0x16, 0x00, 0x19, 0x0c, 0x00]);
    let mut file = b"PAR1".to_vec();
    file.extend(&f);
    file.extend((f.len() as u32).to_le_bytes());
    file.extend(b"PAR1");
    file
}

/// An LZ4_RAW page whose header announces `i32::MAX` bytes uncompressed from 164 compressed
/// (found by a timed `tamis-fuzz` run, seed 171842430, target `file`, kept as
/// `inputs/page_uncompressed_size.parquet`): the `parquet` crate allocated the 2 GiB
/// decompression buffer before finding the data short. No codec but Zstandard and Brotli
/// expands that far, and the memory limit bounds those.
#[test]
fn page_uncompressed_size_is_checked_before_decompression() {
    let path = input("page_uncompressed_size.parquet");
    let req = Request {
        select: Some(vec!["fx".into()]),
        ..Request::default()
    };
    assert_refused(&path, &req, "more than LZ4_RAW can expand to");
}

/// A Snappy page whose uncompressed size is written as -2147483649, beyond the i32 range
/// (found by a timed `tamis-fuzz` run, seed 1795621685609072527, target `file`, kept as
/// `inputs/page_size_beyond_i32.parquet`): the header check read the negative value and let it
/// pass, and the `parquet` crate, truncating it to 32 bits, allocated 2 GiB. The check now reads
/// the size as the crate does.
#[test]
fn page_size_beyond_the_i32_range_is_checked_as_the_crate_reads_it() {
    let path = input("page_size_beyond_i32.parquet");
    let req = Request {
        select: Some(vec!["i32".into()]),
        ..Request::default()
    };
    assert_refused(
        &path,
        &req,
        "2147483647 bytes uncompressed from 67 compressed",
    );
}

/// A Zstandard page larger than the memory limit has left is refused before its buffer is
/// allocated: a resource-limit error naming the page.
#[test]
fn page_over_the_memory_limit_is_refused_before_decompression() {
    let dir = tempfile::tempdir().unwrap();
    let mut refused = 0;
    for s in tamis_fuzz::corpus::generate() {
        if !s.name.contains("zstd") {
            continue;
        }
        let largest = s
            .headers
            .iter()
            .filter_map(|&h| tamis::file::thrift_guard::page_sizes(&s.bytes[h..]))
            .map(|p| p.uncompressed)
            .max()
            .unwrap();
        let path = dir.path().join(format!("{}.parquet", s.name));
        std::fs::write(&path, &s.bytes).unwrap();
        let req = Request {
            memory_limit: Some(largest as usize - 1),
            ..Request::default()
        };
        let (_, e) = tamis_fuzz::scan(path.to_str().unwrap(), &req).expect_err("over the limit");
        assert_eq!(e.kind, ErrorKind::ResourceLimit, "{}: {e}", s.name);
        refused += e.to_string().contains("the page header announces") as usize;
    }
    assert!(refused > 0, "no zstd file was refused at a page header");
}
