//! Checks the counts in Thrift-encoded metadata before the `parquet` crate decodes it.
//!
//! The `parquet` crate reserves vectors from counts it reads: the OffsetIndex's page-location
//! list length (`OffsetIndexMetaData`'s fast path does not compare it with the bytes left) and a
//! schema element's `num_children`. A few kilobytes can then ask for gigabytes. This module walks
//! the Thrift compact encoding without building anything and rejects any list that announces more
//! elements than it has bytes left (every element takes at least one byte), a schema whose
//! groups announce children the list does not hold, and nesting deeper than a scan can take.
//! Everything else (types, required fields, values) is left to the `parquet` crate's decoder.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use crate::error::{Error, Result};

/// Deepest struct/list nesting walked in Thrift bytes (Parquet's metadata nests about 6 deep).
const MAX_THRIFT_DEPTH: u32 = 64;

/// Deepest schema (groups inside groups) a file may declare: the `parquet` crate and tamis's
/// level handling recurse once per level. Real schemas nest a handful of levels.
pub const MAX_SCHEMA_DEPTH: usize = 256;

// Thrift compact protocol type ids.
const BOOL_TRUE: u8 = 1;
const BOOL_FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;
const UUID: u8 = 13;

/// The footer (`FileMetaData` bytes) at the end of `tail` when `tail` holds all of it and it
/// is a plain (unencrypted) footer.
pub fn footer_in_tail(tail: &[u8]) -> Option<&[u8]> {
    let n = tail.len();
    if n < 8 || &tail[n - 4..] != b"PAR1" {
        return None;
    }
    let len = u32::from_le_bytes(tail[n - 8..n - 4].try_into().expect("4 bytes")) as usize;
    let start = (n - 8).checked_sub(len)?;
    Some(&tail[start..n - 8])
}

/// The footer without the fields whose Thrift type is not the one parquet.thrift declares for
/// their id, in `FileMetaData`, `RowGroup`, `ColumnChunk` and `ColumnMetaData`; `None` when
/// there is none (or the bytes do not walk: the `parquet` crate's decoder then says why).
///
/// The Thrift readers of pyarrow (C++) and parquet-mr (Java) skip such a field, as Thrift's
/// generated code does; the `parquet` crate reads the bytes as the declared type instead and
/// goes astray (Dremio writes a list of page headers as `ColumnMetaData` field 15, declared
/// `i32 bloom_filter_length`). Integer fields of another width are kept: their compact encoding
/// is the same varint, which the crate reads correctly.
pub fn drop_mistyped_fields(footer: &[u8]) -> Option<Vec<u8>> {
    let walked = walk_footer(footer).ok()?;
    walked.mistyped.then(|| rewrite(footer)).flatten()
}

/// The footer rewritten without its mistyped fields (`None`: the bytes do not walk).
fn rewrite(footer: &[u8]) -> Option<Vec<u8>> {
    let mut c = Compact::new(footer);
    let mut out = Vec::with_capacity(footer.len());
    let mut dropped = 0;
    c.rewrite_struct(Footer::FileMetaData, &mut out, &mut dropped)
        .ok()?;
    (dropped > 0).then_some(out)
}

/// What one walk of a footer found.
struct Walked {
    /// `num_children` of each schema element, in order (`None`: no schema list).
    schema_children: Option<Vec<i32>>,
    /// Whether a checked struct holds a field of another type than parquet.thrift's.
    mistyped: bool,
}

/// Walks a footer once: list counts, nesting, the schema's `num_children` and mistyped fields.
fn walk_footer(bytes: &[u8]) -> Result<Walked> {
    let mut c = Compact::new(bytes);
    let mut walked = Walked {
        schema_children: None,
        mistyped: false,
    };
    c.check_struct(Footer::FileMetaData, &mut walked)
        .map_err(|Stop| footer(c.fault()))?;
    Ok(walked)
}

/// Classes of Thrift compact types that read alike (the integer widths share one varint
/// encoding; a set's header is a list's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Bool,
    Byte,
    Int,
    Double,
    Binary,
    List,
    Map,
    Struct,
    Uuid,
}

fn class(ty: u8) -> Option<Class> {
    Some(match ty {
        BOOL_TRUE | BOOL_FALSE => Class::Bool,
        BYTE => Class::Byte,
        I16 | I32 | I64 => Class::Int,
        DOUBLE => Class::Double,
        BINARY => Class::Binary,
        LIST | SET => Class::List,
        MAP => Class::Map,
        STRUCT => Class::Struct,
        UUID => Class::Uuid,
        _ => return None,
    })
}

/// The footer structs [`drop_mistyped_fields`] checks.
#[derive(Debug, Clone, Copy)]
enum Footer {
    FileMetaData,
    RowGroup,
    ColumnChunk,
    ColumnMetaData,
}

impl Footer {
    /// The class parquet.thrift declares for field `id` (`None`: a field it does not know,
    /// which every reader skips by its own type).
    fn declared(self, id: i64) -> Option<Class> {
        use Class::*;
        Some(match (self, id) {
            (Footer::FileMetaData, 1 | 3) => Int,
            (Footer::FileMetaData, 2 | 4 | 5 | 7) => List,
            (Footer::FileMetaData, 6 | 9) => Binary,
            (Footer::FileMetaData, 8) => Struct,
            (Footer::RowGroup, 1 | 4) => List,
            (Footer::RowGroup, 2 | 3 | 5 | 6 | 7) => Int,
            (Footer::ColumnChunk, 1 | 9) => Binary,
            (Footer::ColumnChunk, 2 | 4 | 5 | 6 | 7) => Int,
            (Footer::ColumnChunk, 3 | 8) => Struct,
            (Footer::ColumnMetaData, 1 | 4 | 5 | 6 | 7 | 9 | 10 | 11 | 14 | 15) => Int,
            (Footer::ColumnMetaData, 2 | 3 | 8 | 13) => List,
            (Footer::ColumnMetaData, 12 | 16 | 17) => Struct,
            _ => return None,
        })
    }

    /// The checked struct that field `id` holds (itself, or as the elements of a list).
    fn inner(self, id: i64) -> Option<Footer> {
        match (self, id) {
            (Footer::FileMetaData, 4) => Some(Footer::RowGroup),
            (Footer::RowGroup, 1) => Some(Footer::ColumnChunk),
            (Footer::ColumnChunk, 3) => Some(Footer::ColumnMetaData),
            _ => None,
        }
    }
}

/// Checks a serialized `FileMetaData` (the footer, without its length and magic).
pub fn check_file_metadata(bytes: &[u8]) -> Result<()> {
    check_footer(bytes).map(drop)
}

/// Checks a serialized `FileMetaData` and returns it without its mistyped fields when it has
/// any ([`drop_mistyped_fields`]), in one walk of the bytes when it has none.
pub fn check_footer(bytes: &[u8]) -> Result<Option<Vec<u8>>> {
    let walked = walk_footer(bytes)?;
    if let Some(children) = &walked.schema_children {
        check_schema_tree(children).map_err(footer)?;
    }
    Ok(if walked.mistyped {
        rewrite(bytes)
    } else {
        None
    })
}

/// Checks the footer at the end of `tail` (the last bytes of a file) when `tail` holds all of
/// it, and returns it without its mistyped fields when it has any; a shorter tail or an
/// encrypted footer is left to the `parquet` crate's reader.
pub fn check_footer_in_tail(tail: &[u8]) -> Result<Option<Vec<u8>>> {
    footer_in_tail(tail).map_or(Ok(None), check_footer)
}

/// Reads the footer of a local file and checks it (for readers that hand the file to the
/// `parquet` crate directly). The read is bounded by the file's length.
pub fn check_file_footer(file: &File) -> Result<()> {
    let mut f = file;
    let len = f.metadata()?.len();
    if len < 12 {
        return Ok(()); // too short: the parquet crate's own error says so
    }
    let mut end = [0u8; 8];
    f.seek(SeekFrom::Start(len - 8))?;
    f.read_exact(&mut end)?;
    let footer = u32::from_le_bytes(end[..4].try_into().expect("4 bytes")) as u64;
    if &end[4..] != b"PAR1" || footer > len - 8 {
        return Ok(());
    }
    let mut bytes = vec![0u8; footer as usize];
    f.seek(SeekFrom::Start(len - 8 - footer))?;
    f.read_exact(&mut bytes)?;
    check_file_metadata(&bytes)
}

/// Checks the bytes of a page index structure (ColumnIndex or OffsetIndex): every list's count
/// fits in the bytes that follow it.
pub fn check_page_index(bytes: &[u8]) -> Result<()> {
    let mut c = Compact::new(bytes);
    c.skip(STRUCT, 0).map_err(|Stop| Error::corrupt(c.fault()))
}

/// The sizes a page header announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageSizes {
    /// Bytes of the header itself.
    pub header: usize,
    pub uncompressed: i64,
    pub compressed: i64,
}

/// Reads the sizes from the page header at the start of `bytes`; `None` when the bytes are
/// not a well-formed header (the `parquet` crate's page reader then reports why).
pub fn page_sizes(bytes: &[u8]) -> Option<PageSizes> {
    let mut c = Compact::new(bytes);
    let (mut uncompressed, mut compressed) = (None, None);
    let mut last = 0;
    while let Some((id, ty)) = c.field(&mut last).ok()? {
        match (id, ty) {
            (2, I32) => uncompressed = Some(i64::from(c.i32().ok()?)),
            (3, I32) => compressed = Some(i64::from(c.i32().ok()?)),
            _ => c.skip(ty, 1).ok()?,
        }
    }
    Some(PageSizes {
        header: c.pos,
        uncompressed: uncompressed?,
        compressed: compressed?,
    })
}

fn footer(message: String) -> Error {
    Error::corrupt(format!("footer: {message}"))
}

/// `num_children` of each schema element, in order: checks that every group's children are in
/// the list (so the reservations they cause add up to the list's length) and the depth.
fn check_schema_tree(children: &[i32]) -> std::result::Result<(), String> {
    // Children still expected by each open group, innermost last.
    let mut open: Vec<i32> = Vec::new();
    for (i, &n) in children.iter().enumerate() {
        if i > 0 {
            match open.last_mut() {
                Some(left) => *left -= 1,
                None => break, // elements after a complete tree: the parquet crate decides
            }
        }
        if n > 0 {
            open.push(n);
            if open.len() > MAX_SCHEMA_DEPTH {
                return Err(format!(
                    "schema nests more than {MAX_SCHEMA_DEPTH} levels deep"
                ));
            }
        }
        while open.last() == Some(&0) {
            open.pop();
        }
    }
    match open.last() {
        None => Ok(()),
        Some(left) => Err(format!(
            "a schema group announces {left} more children than the schema's {} elements hold",
            children.len()
        )),
    }
}

/// A cursor over Thrift compact bytes that only validates and skips.
struct Compact<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Why the walk stopped, once it has.
    fault: String,
}

/// The walk stopped at malformed bytes; the cursor's `fault` says why. The error carries
/// nothing so that every step returns in registers: a `String` error made the walk of a
/// 1.9 MB footer (1 001 row groups) take longer than the `parquet` crate's decoding of it.
#[derive(Debug)]
struct Stop;

type Walk<T> = std::result::Result<T, Stop>;

impl<'a> Compact<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Compact {
            bytes,
            pos: 0,
            fault: String::new(),
        }
    }

    /// Stops the walk, saying why.
    #[cold]
    #[inline(never)]
    fn fail<T>(&mut self, why: String) -> Walk<T> {
        self.fault = why;
        Err(Stop)
    }

    /// Why the walk stopped.
    fn fault(&mut self) -> String {
        std::mem::take(&mut self.fault)
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    #[inline]
    fn byte(&mut self) -> Walk<u8> {
        match self.bytes.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => self.fail(format!("Thrift data ends early, at byte {}", self.pos)),
        }
    }

    #[inline]
    fn advance(&mut self, n: usize) -> Walk<()> {
        if n > self.remaining() {
            return self.fail(format!(
                "a value of {n} bytes at byte {} runs past the end ({} bytes)",
                self.pos,
                self.bytes.len()
            ));
        }
        self.pos += n;
        Ok(())
    }

    #[inline]
    fn varint(&mut self) -> Walk<u64> {
        // Most of a footer's varints (field values, lengths, counts) are one byte.
        let b = self.byte()?;
        if b & 0x80 == 0 {
            return Ok(u64::from(b));
        }
        let mut v = u64::from(b & 0x7f);
        for shift in (7..70).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        self.fail(format!(
            "a varint longer than 10 bytes at byte {}",
            self.pos
        ))
    }

    fn zigzag(&mut self) -> Walk<i64> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// An `i32` field as the `parquet` crate reads it: the zigzag value truncated to 32 bits.
    /// A varint beyond the i32 range (-2147483649 becomes 2147483647) must be judged by the
    /// value the crate will size its buffers by, not by the one written (found by `tamis-fuzz`).
    fn i32(&mut self) -> Walk<i32> {
        Ok(self.zigzag()? as i32)
    }

    /// The next field of a struct as (id, type), or `None` at its stop byte.
    #[inline]
    fn field(&mut self, last: &mut i64) -> Walk<Option<(i64, u8)>> {
        let b = self.byte()?;
        if b == 0 {
            return Ok(None);
        }
        let delta = i64::from(b >> 4);
        *last = if delta == 0 {
            self.zigzag()?
        } else {
            *last + delta
        };
        Ok(Some((*last, b & 0x0f)))
    }

    /// A list or set header: (count, element type), the count checked against the bytes left.
    fn list_header(&mut self) -> Walk<(usize, u8)> {
        let at = self.pos;
        let b = self.byte()?;
        let count = match b >> 4 {
            0x0f => self.varint()?,
            n => u64::from(n),
        };
        if count > self.remaining() as u64 {
            return self.fail(format!(
                "a list at byte {at} announces {count} elements with {} bytes left",
                self.remaining()
            ));
        }
        Ok((count as usize, b & 0x0f))
    }

    /// Walks the struct at the cursor as a `kind`: the schema list of a `FileMetaData` is
    /// read into `walked`, a field of another type than declared is noted there and skipped.
    fn check_struct(&mut self, kind: Footer, walked: &mut Walked) -> Walk<()> {
        let mut last = 0;
        while let Some((id, ty)) = self.field(&mut last)? {
            if kind.declared(id).is_some_and(|c| class(ty) != Some(c)) {
                walked.mistyped = true;
                self.skip(ty, 1)?;
                continue;
            }
            match (kind, kind.inner(id), ty) {
                (Footer::FileMetaData, _, LIST) if id == 2 => {
                    walked.schema_children = Some(self.schema_list()?);
                }
                (_, Some(inner), STRUCT) => self.check_struct(inner, walked)?,
                (_, Some(inner), LIST) => {
                    let (count, elem) = self.list_header()?;
                    for _ in 0..count {
                        if elem == STRUCT {
                            self.check_struct(inner, walked)?;
                        } else {
                            self.skip_value(elem, 2)?;
                        }
                    }
                }
                _ => self.skip(ty, 1)?,
            }
        }
        Ok(())
    }

    /// Skips one value of compact type `ty` (a struct field's type: booleans carry no byte).
    fn skip(&mut self, ty: u8, depth: u32) -> Walk<()> {
        match ty {
            BOOL_TRUE | BOOL_FALSE => Ok(()),
            _ => self.skip_value(ty, depth),
        }
    }

    /// Skips one value of type `ty` as it appears in a list, set or map (booleans are a byte).
    fn skip_value(&mut self, ty: u8, depth: u32) -> Walk<()> {
        if depth > MAX_THRIFT_DEPTH {
            return self.fail(format!("Thrift data nests deeper than {MAX_THRIFT_DEPTH}"));
        }
        match ty {
            BOOL_TRUE | BOOL_FALSE | BYTE => self.advance(1),
            I16 | I32 | I64 => self.varint().map(drop),
            DOUBLE => self.advance(8),
            UUID => self.advance(16),
            BINARY => {
                let n = self.varint()?;
                self.advance(usize::try_from(n).unwrap_or(usize::MAX))
            }
            LIST | SET => {
                let (count, elem) = self.list_header()?;
                (0..count).try_for_each(|_| self.skip_value(elem, depth + 1))
            }
            MAP => {
                let count = self.varint()?;
                if count == 0 {
                    return Ok(());
                }
                if count > (self.remaining() / 2) as u64 {
                    return self.fail(format!(
                        "a map announces {count} entries with {} bytes left",
                        self.remaining()
                    ));
                }
                let types = self.byte()?;
                (0..count).try_for_each(|_| {
                    self.skip_value(types >> 4, depth + 1)?;
                    self.skip_value(types & 0x0f, depth + 1)
                })
            }
            STRUCT => {
                let mut last = 0;
                while let Some((_, ty)) = self.field(&mut last)? {
                    self.skip(ty, depth + 1)?;
                }
                Ok(())
            }
            other => self.fail(format!("unknown Thrift type {other} at byte {}", self.pos)),
        }
    }

    /// Copies the struct at the cursor to `out` as a `kind`, leaving out its mistyped fields
    /// (counted in `dropped`) and those of the checked structs inside it.
    fn rewrite_struct(&mut self, kind: Footer, out: &mut Vec<u8>, dropped: &mut usize) -> Walk<()> {
        let mut last = 0;
        let mut last_written = 0;
        while let Some((id, ty)) = self.field(&mut last)? {
            if kind.declared(id).is_some_and(|c| class(ty) != Some(c)) {
                self.skip(ty, 1)?;
                *dropped += 1;
                continue;
            }
            // Field ids are deltas from the previous field written, short or long form.
            match id.checked_sub(last_written) {
                Some(delta @ 1..=15) => out.push(((delta as u8) << 4) | ty),
                _ => {
                    let Ok(id16) = i16::try_from(id) else {
                        return self.fail(format!("field id {id}"));
                    };
                    out.push(ty);
                    let mut v = ((id16 << 1) ^ (id16 >> 15)) as u16;
                    while v >= 0x80 {
                        out.push((v as u8) | 0x80);
                        v >>= 7;
                    }
                    out.push(v as u8);
                }
            }
            last_written = id;
            let start = self.pos;
            match (kind.inner(id), ty) {
                (Some(inner), STRUCT) => self.rewrite_struct(inner, out, dropped)?,
                (Some(inner), LIST) => {
                    let (count, elem) = self.list_header()?;
                    out.extend_from_slice(&self.bytes[start..self.pos]);
                    for _ in 0..count {
                        if elem == STRUCT {
                            self.rewrite_struct(inner, out, dropped)?;
                        } else {
                            let at = self.pos;
                            self.skip_value(elem, 2)?;
                            out.extend_from_slice(&self.bytes[at..self.pos]);
                        }
                    }
                }
                _ => {
                    self.skip(ty, 1)?;
                    out.extend_from_slice(&self.bytes[start..self.pos]);
                }
            }
        }
        out.push(0);
        Ok(())
    }

    /// The footer's schema list: skips each `SchemaElement`, keeping its `num_children`
    /// (field 5, 0 when absent).
    fn schema_list(&mut self) -> Walk<Vec<i32>> {
        let (count, elem) = self.list_header()?;
        if elem != STRUCT {
            return self.fail(format!(
                "the schema is a list of type {elem}, not of structs"
            ));
        }
        let mut children = Vec::with_capacity(count);
        for _ in 0..count {
            let mut n = 0;
            let mut last = 0;
            while let Some((id, ty)) = self.field(&mut last)? {
                if id == 5 && ty == I32 {
                    n = self.i32()?;
                } else {
                    self.skip(ty, 2)?;
                }
            }
            children.push(n);
        }
        Ok(children)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal Thrift compact encoder for the tests.
    #[derive(Default)]
    pub(crate) struct Enc(pub Vec<u8>);

    impl Enc {
        fn varint(&mut self, mut v: u64) -> &mut Self {
            while v >= 0x80 {
                self.0.push((v as u8) | 0x80);
                v >>= 7;
            }
            self.0.push(v as u8);
            self
        }
        fn field(&mut self, delta: u8, ty: u8) -> &mut Self {
            self.0.push((delta << 4) | ty);
            self
        }
        fn i32(&mut self, delta: u8, v: i32) -> &mut Self {
            self.field(delta, I32)
                .varint(((v << 1) ^ (v >> 31)) as u32 as u64)
        }
        fn string(&mut self, delta: u8, s: &str) -> &mut Self {
            self.field(delta, BINARY).varint(s.len() as u64);
            self.0.extend_from_slice(s.as_bytes());
            self
        }
        fn list(&mut self, delta: u8, count: u64, elem: u8) -> &mut Self {
            self.field(delta, LIST);
            if count < 15 {
                self.0.push(((count as u8) << 4) | elem);
                self
            } else {
                self.0.push(0xf0 | elem);
                self.varint(count)
            }
        }
        fn stop(&mut self) -> &mut Self {
            self.0.push(0);
            self
        }
    }

    /// A footer whose schema's elements have these `num_children` (leaves are INT32 required).
    fn footer(children: &[i32]) -> Vec<u8> {
        let mut e = Enc::default();
        e.i32(1, 2).list(1, children.len() as u64, STRUCT);
        for (i, &n) in children.iter().enumerate() {
            if n > 0 {
                // name (4), num_children (5)
                e.string(4, &format!("g{i}")).i32(1, n).stop();
            } else {
                // type (1), repetition (3), name (4)
                e.i32(1, 1).i32(2, 0).string(1, &format!("c{i}")).stop();
            }
        }
        e.field(1, I64).varint(0).list(1, 0, STRUCT).stop();
        e.0
    }

    #[test]
    fn well_formed_schemas_pass() {
        for children in [
            &[0][..],
            &[1, 0],
            &[2, 0, 0],
            &[2, 1, 0, 0],
            &[3, 0, 2, 0, 1, 0, 0],
        ] {
            check_file_metadata(&footer(children)).unwrap();
        }
    }

    #[test]
    fn children_missing_from_the_list_are_rejected() {
        for children in [&[2, 0][..], &[1, 1], &[i32::MAX, 0], &[2, 0, 1]] {
            let e = check_file_metadata(&footer(children)).unwrap_err();
            assert!(e.to_string().contains("more children"), "{children:?}: {e}");
        }
    }

    #[test]
    fn schema_depth_is_bounded() {
        let deep = |levels: usize| {
            let mut children = vec![1; levels];
            children.push(0);
            footer(&children)
        };
        check_file_metadata(&deep(MAX_SCHEMA_DEPTH)).unwrap();
        let e = check_file_metadata(&deep(MAX_SCHEMA_DEPTH + 1)).unwrap_err();
        assert!(e.to_string().contains("levels deep"), "{e}");
    }

    #[test]
    fn list_counts_beyond_the_bytes_are_rejected() {
        // OffsetIndex { 1: list<PageLocation> } announcing 2^31 locations in 12 bytes.
        let mut e = Enc::default();
        e.list(1, 1 << 31, STRUCT);
        e.0.extend_from_slice(&[0; 5]);
        let err = check_page_index(&e.0).unwrap_err();
        assert!(err.to_string().contains("announces 2147483648"), "{err}");
        // The same list with its one location is fine.
        let mut ok = Enc::default();
        ok.list(1, 1, STRUCT);
        ok.field(1, I64)
            .varint(8)
            .i32(1, 100)
            .field(1, I64)
            .varint(0)
            .stop();
        ok.stop();
        check_page_index(&ok.0).unwrap();
    }

    #[test]
    fn page_sizes_are_read_from_a_header() {
        // type DATA_PAGE (0), uncompressed 1000, compressed 400, data_page_header {num_values
        // 10, encoding 0, def 3, rep 3}, then page bytes.
        let mut e = Enc::default();
        e.i32(1, 0).i32(1, 1000).i32(1, 400).field(2, STRUCT);
        e.i32(1, 10).i32(1, 0).i32(1, 3).i32(1, 3).stop().stop();
        let header = e.0.len();
        e.0.extend_from_slice(&[7; 9]);
        let sizes = page_sizes(&e.0).unwrap();
        assert_eq!(
            sizes,
            PageSizes {
                header,
                uncompressed: 1000,
                compressed: 400
            }
        );
        assert_eq!(page_sizes(&e.0[..header - 1]), None);
        assert_eq!(page_sizes(&[0x15, 0x00, 0x00]), None);

        // An uncompressed size written as -2147483649, out of the i32 range: the parquet crate
        // truncates it to 2147483647 and allocates that, so that is the size to check.
        let mut e = Enc::default();
        e.i32(1, 0)
            .field(1, I32)
            .varint(4_294_967_297)
            .i32(1, 67)
            .stop();
        let sizes = page_sizes(&e.0).unwrap();
        assert_eq!(sizes.uncompressed, i64::from(i32::MAX));
        let err = crate::column::pages::check_page_header(
            &e.0,
            parquet::basic::Compression::SNAPPY,
            16 << 20,
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("2147483647 bytes uncompressed"),
            "{err}"
        );
    }

    /// A footer of one row group with one column chunk whose `ColumnMetaData` holds
    /// `extra` (written by the closure) between field 11 and field 16.
    fn footer_with(extra: impl Fn(&mut Enc)) -> Vec<u8> {
        let mut e = Enc::default();
        // FileMetaData: version, schema (root + one INT32 leaf), num_rows, row_groups.
        e.i32(1, 1).list(1, 2, STRUCT);
        e.string(4, "root").i32(1, 1).stop();
        e.i32(1, 1).i32(2, 0).string(1, "x").stop();
        e.field(1, I64).varint(78); // num_rows 39
        e.list(1, 1, STRUCT);
        // RowGroup { 1: columns [ColumnChunk { 2: file_offset, 3: meta_data }], 3: num_rows }
        e.list(1, 1, STRUCT);
        e.field(2, I64).varint(8).field(1, STRUCT);
        e.i32(1, 1)
            .list(1, 1, I32)
            .varint(0)
            .list(1, 1, BINARY)
            .varint(1);
        e.0.push(b'x');
        e.i32(1, 0); // codec
        e.field(1, I64)
            .varint(78)
            .field(1, I64)
            .varint(80)
            .field(1, I64)
            .varint(80);
        e.field(2, I64).varint(8).field(2, I64).varint(0); // data page 4, dictionary page 0
        extra(&mut e);
        e.stop(); // ColumnMetaData
        e.stop(); // ColumnChunk
        e.field(1, I64).varint(160).field(1, I64).varint(78).stop(); // RowGroup
        e.stop(); // FileMetaData
        e.0
    }

    #[test]
    fn mistyped_fields_are_dropped_as_thrift_readers_skip_them() {
        // Dremio's field 15: a list of structs where parquet.thrift has `i32
        // bloom_filter_length`; then a field 16 (an empty SizeStatistics) to re-delta.
        let dremio = footer_with(|e| {
            e.list(4, 1, STRUCT).i32(1, 0).stop();
            e.field(1, STRUCT).stop();
        });
        let without = footer_with(|e| {
            e.field(5, STRUCT).stop();
        });
        let fixed = drop_mistyped_fields(&dremio).expect("field 15 dropped");
        assert_eq!(fixed, without);
        // The check that opens files returns the same rewrite from its walk.
        assert_eq!(check_footer(&dremio).unwrap(), Some(without.clone()));
        assert_eq!(check_footer(&without).unwrap(), None);
        let meta = parquet::file::metadata::ParquetMetaDataReader::decode_metadata(&fixed).unwrap();
        assert_eq!(meta.row_group(0).num_rows(), 39);
        assert_eq!(meta.row_group(0).column(0).data_page_offset(), 4);
        // Nothing to drop: no rewrite (an i64 where an i32 is declared reads the same).
        assert_eq!(drop_mistyped_fields(&without), None);
        let wide = footer_with(|e| {
            e.field(4, I64).varint(8);
        });
        assert_eq!(drop_mistyped_fields(&wide), None);
        // Truncated bytes: left to the crate's decoder.
        for n in 0..dremio.len() {
            let _ = drop_mistyped_fields(&dremio[..n]);
        }
    }

    #[test]
    fn truncated_and_deep_inputs_are_errors_not_panics() {
        let f = footer(&[2, 0, 0]);
        for n in 0..f.len() {
            let _ = check_file_metadata(&f[..n]);
        }
        // 100 nested lists of lists.
        let mut e = Enc::default();
        e.field(1, LIST);
        for _ in 0..100 {
            e.0.push(0x10 | LIST);
        }
        let err = check_page_index(&e.0).unwrap_err();
        assert!(err.to_string().contains("nests deeper"), "{err}");
        let _ = check_page_index(&[0xff; 64]);
    }
}
