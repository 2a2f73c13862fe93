//! Inputs `tamis-fuzz` found, rebuilt deterministically: each failed (a panic or a stack
//! overflow) before its fix.

use tamis::ErrorKind;
use tamis_fuzz::{corpus, Request};

/// A data page header whose type is flipped between DATA_PAGE (0) and DATA_PAGE_V2 (3) has the
/// other version's sub-header: the `parquet` crate's page reader unwrapped the missing one
/// (a panic, reported as an internal error). Now a corrupt-file error naming the file.
#[test]
fn flipped_page_type_is_a_corrupt_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for s in corpus::generate() {
        // A data page header starts with field 1 (type, i32): 0x15, then the zigzag varint.
        let Some(&at) = s
            .headers
            .iter()
            .find(|&&h| s.bytes[h] == 0x15 && matches!(s.bytes[h + 1], 0x00 | 0x06))
        else {
            continue;
        };
        let mut bytes = s.bytes.clone();
        bytes[at + 1] = if bytes[at + 1] == 0x00 { 0x06 } else { 0x00 };
        let path = dir.path().join(format!("{}.parquet", s.name));
        std::fs::write(&path, &bytes).unwrap();
        let (_, e) = tamis_fuzz::scan(path.to_str().unwrap(), &Request::default())
            .expect_err("a flipped page type is an error");
        assert_eq!(e.kind, ErrorKind::CorruptFile, "{}: {e}", s.name);
        assert!(e.to_string().contains(&s.name), "{e}");
        checked += 1;
    }
    assert!(
        checked >= 20,
        "only {checked} files had a data page header to flip"
    );
}

/// `a AND a AND …` 20 000 times overflowed the stack (sqlparser's tree is as deep as the chain;
/// binding and dropping it recursed): now an invalid-argument error. 1000 operators, the limit,
/// still bind on a 2 MiB thread stack.
#[test]
fn long_boolean_chains_are_refused_not_a_stack_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let s = &corpus::generate()[0];
    let path = dir.path().join("t.parquet");
    std::fs::write(&path, &s.bytes).unwrap();
    let p = path.to_str().unwrap().to_string();
    for op in [" AND ", " OR "] {
        let long = vec!["i64 > 5"; 20_000].join(op);
        let e = tamis::Scan::open(&p).unwrap().filter(&long).err().unwrap();
        assert_eq!(e.kind, ErrorKind::InvalidArgument, "{e}");
        assert!(e.to_string().contains("AND/OR operators"), "{e}");
        let limit = vec!["i64 > 5"; tamis::expr::MAX_BOOLEAN_OPERATORS + 1].join(op);
        let p = p.clone();
        let rows = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let scan = tamis::Scan::open(&p).unwrap().filter(&limit).unwrap();
                scan.batches()
                    .unwrap()
                    .map(|b| b.unwrap().num_rows())
                    .sum::<usize>()
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(rows > 0);
    }
}

/// An offset index whose first page lies before its column chunk (a mutated footer, kept as
/// `inputs/offset_index_before_chunk.parquet`): the `parquet` crate's page reader subtracted the
/// chunk start from it (an overflow panic). Now the offset index is not used and the chunk is
/// read in order, or refused cleanly.
#[test]
fn offset_index_before_its_chunk_is_not_used() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/inputs/offset_index_before_chunk.parquet"
    );
    let req = Request {
        filter: Some("i64 IN (5, 500)".into()),
        select: Some(vec!["i64".into(), "f32".into(), "fx".into()]),
        ..Request::default()
    };
    match tamis_fuzz::scan(path, &req) {
        Ok(_) => {}
        Err((_, e)) => {
            assert_ne!(e.kind, ErrorKind::Internal, "{e}");
            assert!(e.to_string().contains("offset_index_before_chunk"), "{e}");
        }
    }
}

/// A data page header with a negative value count (a mutated BYTE_STREAM_SPLIT file, kept as
/// `inputs/negative_page_row_count.parquet`): the count, cast to usize, overflowed the row
/// arithmetic of the page walk (a panic, reported as an internal error). Now a clean error.
#[test]
fn negative_page_row_count_is_a_clean_error() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/inputs/negative_page_row_count.parquet"
    );
    match tamis_fuzz::scan(path, &Request::default()) {
        Ok(_) => {}
        Err((_, e)) => {
            assert_ne!(e.kind, ErrorKind::Internal, "{e}");
            assert!(e.to_string().contains("negative_page_row_count"), "{e}");
        }
    }
}

/// A DATA_PAGE_V2 header whose definition and repetition level lengths sum past `i32::MAX` (a
/// mutated gzip file found with seed 7, kept as `inputs/v2_level_lengths_overflow.parquet`): the
/// `parquet` crate's page decoding adds them as `i32` and panicked with an overflow, outside the
/// guard around the page reader (reported as an internal error). Now a corrupt-file error.
#[test]
fn v2_level_lengths_overflow_is_a_clean_error() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/inputs/v2_level_lengths_overflow.parquet"
    );
    let request = Request {
        select: Some(vec!["i32".into(), "i64".into(), "f32".into(), "fx".into()]),
        memory_limit: Some(16 << 20),
        ..Request::default()
    };
    match tamis_fuzz::scan(path, &request) {
        Ok(_) => panic!("the damaged page was read"),
        Err((_, e)) => {
            assert_ne!(e.kind, ErrorKind::Internal, "{e}");
            assert!(e.to_string().contains("v2_level_lengths_overflow"), "{e}");
        }
    }
}
