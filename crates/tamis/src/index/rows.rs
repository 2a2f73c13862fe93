//! The `rows` index (seed 004's selection layout): per row group and column, the column's
//! distinct values in sorted order, each with the ids of the rows that hold it. A predicate on
//! the column is answered from the index alone — the filter column is not read at all, and the
//! row ids become the selection the payload columns read.
//!
//! Blob `tamis-rows-v1`, one per (row group, column), little-endian. It is read in pieces, not
//! whole: a lookup reads the fence, then only the blocks whose value range can hold a match.
//!
//! ```text
//! fence   u32 blocks, u64 distinct values, u64 indexed (non-null) rows,
//!         per block: u64 offset in the blob, u32 length, u64 xxHash64, first value
//! block   u32 values, then per value: the value, varint runs, the runs
//! value   the value's plain encoding (as Parquet's Bloom filters hash it); byte arrays are
//!         preceded by their varint length, fixed-width values are bare
//! runs    consecutive row ids: varint gap from the previous run's end, varint length - 1
//! ```
//!
//! Values are sorted in the column's domain order ([`Scalar::compare`], the order every
//! comparison in tamis uses), so a block holds the values from its first value up to the next
//! block's. The fence's own xxHash64 is a blob property; each block's is in the fence: every
//! byte a lookup uses is checked before use.

use std::cmp::Ordering;
use std::ops::Range;

use parquet::basic::Type as PhysicalType;

use crate::error::{Error, Result};
use crate::expr::{to_scalar, CmpOp, Leaf, LeafOp, PhysicalRef, Scalar};
use crate::schema::LeafColumn;
use crate::selection::Bitmap;

pub(crate) const BLOB_TYPE: &str = "tamis-rows-v1";

/// Distinct values per block: a lookup reads one block of about this many values.
pub(crate) const BLOCK_VALUES: usize = 128;

/// The bytes of one value as the blob stores it (its plain encoding).
pub(crate) type ValueBytes = Vec<u8>;

/// Builds a blob from each distinct value's ascending row ids (any order of values).
/// Returns the blob and the length of its fence.
pub(crate) fn encode(
    column: &LeafColumn,
    mut values: Vec<(ValueBytes, Vec<u32>)>,
) -> Result<(Vec<u8>, usize)> {
    let width = fixed_width(column);
    let mut keyed = Vec::with_capacity(values.len());
    for (bytes, rows) in values.drain(..) {
        let scalar = value_scalar(column, &bytes).ok_or_else(|| {
            Error::internal(format!(
                "an indexed value of '{}' has no domain value",
                column.path
            ))
        })?;
        keyed.push((scalar, bytes, rows));
    }
    keyed.sort_by(|a, b| a.0.compare(&b.0).unwrap_or(Ordering::Equal));
    let indexed: u64 = keyed.iter().map(|(_, _, r)| r.len() as u64).sum();
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    let mut firsts: Vec<Vec<u8>> = Vec::new();
    for chunk in keyed.chunks(BLOCK_VALUES) {
        let mut block = Vec::new();
        block.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
        for (_, bytes, rows) in chunk {
            put_value(&mut block, width, bytes);
            put_rows(&mut block, rows);
        }
        let mut first = Vec::new();
        put_value(&mut first, width, &chunk[0].1);
        firsts.push(first);
        blocks.push(block);
    }
    let fence_len = 4 + 8 + 8 + firsts.iter().map(|f| 8 + 4 + 8 + f.len()).sum::<usize>();
    let mut out = Vec::with_capacity(fence_len + blocks.iter().map(Vec::len).sum::<usize>());
    out.extend_from_slice(&(blocks.len() as u32).to_le_bytes());
    out.extend_from_slice(&(keyed.len() as u64).to_le_bytes());
    out.extend_from_slice(&indexed.to_le_bytes());
    let mut offset = fence_len as u64;
    for (block, first) in blocks.iter().zip(&firsts) {
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&(block.len() as u32).to_le_bytes());
        out.extend_from_slice(&block_hash(offset, block).to_le_bytes());
        out.extend_from_slice(first);
        offset += block.len() as u64;
    }
    debug_assert_eq!(out.len(), fence_len);
    for block in &blocks {
        out.extend_from_slice(block);
    }
    Ok((out, fence_len))
}

/// The byte width of the column's values, `None` for byte arrays (stored with their length).
fn fixed_width(column: &LeafColumn) -> Option<usize> {
    match column.physical {
        PhysicalType::INT32 | PhysicalType::FLOAT => Some(4),
        PhysicalType::INT64 | PhysicalType::DOUBLE => Some(8),
        PhysicalType::FIXED_LEN_BYTE_ARRAY => Some(column.type_length),
        _ => None,
    }
}

/// A block's checksum, seeded by its offset so that a block moved in the blob does not pass.
pub(crate) fn block_hash(offset: u64, block: &[u8]) -> u64 {
    twox_hash::XxHash64::oneshot(offset, block)
}

fn put_value(out: &mut Vec<u8>, width: Option<usize>, bytes: &[u8]) {
    if width.is_none() {
        put_varint(out, bytes.len() as u64);
    }
    out.extend_from_slice(bytes);
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Ascending row ids as their run count, then the runs: (gap from the previous run's end,
/// length - 1).
fn put_rows(out: &mut Vec<u8>, rows: &[u32]) {
    let mut runs = Vec::new();
    let mut end = 0u64;
    let mut i = 0;
    while i < rows.len() {
        let start = rows[i] as u64;
        let mut j = i + 1;
        while j < rows.len() && rows[j] as u64 == start + (j - i) as u64 {
            j += 1;
        }
        runs.push((start - end, (j - i - 1) as u64));
        end = start + (j - i) as u64;
        i = j;
    }
    put_varint(out, runs.len() as u64);
    for (gap, len) in runs {
        put_varint(out, gap);
        put_varint(out, len);
    }
}

/// Reads bounded little-endian fields; every shortfall is a corrupt-blob error.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

fn bad(what: &str) -> Error {
    Error::corrupt(format!("rows index blob: {what}"))
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| bad("truncated"))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn value(&mut self, width: Option<usize>) -> Result<&'a [u8]> {
        let n = match width {
            Some(w) => w,
            None => usize::try_from(self.varint()?).map_err(|_| bad("a value length"))?,
        };
        self.take(n)
    }
    fn varint(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.take(1)?.first().expect("one byte");
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(bad("a varint longer than 64 bits"))
    }
}

/// One block as the fence describes it.
#[derive(Debug, Clone)]
pub(crate) struct BlockRef {
    pub range: Range<u64>,
    pub hash: u64,
    pub first: Scalar,
}

/// The decoded fence of a blob.
#[derive(Debug, Clone)]
pub(crate) struct Fence {
    pub blocks: Vec<BlockRef>,
}

impl Fence {
    /// Decodes the fence of a blob of `blob_len` bytes; blocks must follow the fence, in order,
    /// inside the blob, and their first values must ascend.
    pub(crate) fn decode(bytes: &[u8], blob_len: u64, column: &LeafColumn) -> Result<Fence> {
        let mut c = Cursor { bytes, at: 0 };
        let n = c.u32()? as usize;
        let distinct = c.u64()?;
        // Rows with a (non-null) value: each distinct value is one of them.
        let indexed_rows = c.u64()?;
        if distinct > indexed_rows {
            return Err(bad("more distinct values than indexed rows"));
        }
        // Each fence entry takes at least 20 bytes: a count the bytes cannot hold is corrupt.
        if n > bytes.len() / 20 {
            return Err(bad("more blocks than the fence holds"));
        }
        let mut blocks: Vec<BlockRef> = Vec::with_capacity(n);
        let mut expected = bytes.len() as u64;
        for _ in 0..n {
            let offset = c.u64()?;
            let len = c.u32()? as u64;
            let hash = c.u64()?;
            let first = value_scalar(column, c.value(fixed_width(column))?)
                .ok_or_else(|| bad("a malformed value"))?;
            if offset != expected || offset.checked_add(len).is_none_or(|e| e > blob_len) {
                return Err(bad("a block outside the blob or out of order"));
            }
            // Equal firsts are valid: distinct stored values may compare equal (NaNs of other
            // payloads, 0.0 and -0.0), and more of them than a block holds span blocks.
            // `blocks_for` reads every block whose range may hold a value, equal bounds
            // included.
            if let Some(prev) = blocks.last() {
                if !matches!(
                    prev.first.compare(&first),
                    Some(Ordering::Less | Ordering::Equal)
                ) {
                    return Err(bad("block first values not ascending"));
                }
            }
            expected = offset + len;
            blocks.push(BlockRef {
                range: offset..offset + len,
                hash,
                first,
            });
        }
        if c.at != bytes.len() || expected != blob_len {
            return Err(bad("fence and blocks do not fill the blob"));
        }
        Ok(Fence { blocks })
    }

    /// Blocks that may hold a value satisfying `leaf` (`None`: the leaf is not one the index
    /// answers). A block holds values from its first value up to the next block's first.
    pub(crate) fn blocks_for(&self, leaf: &Leaf) -> Option<Vec<usize>> {
        let tests: Vec<(CmpOp, &Scalar)> = match &leaf.op {
            LeafOp::Cmp(CmpOp::NotEq, _) => return None,
            LeafOp::Cmp(op, lit) => vec![(*op, lit)],
            LeafOp::In {
                values,
                negated: false,
            } => values.iter().map(|v| (CmpOp::Eq, v)).collect(),
            _ => return None,
        };
        let mut out = Vec::new();
        for (b, block) in self.blocks.iter().enumerate() {
            let next = self.blocks.get(b + 1).map(|n| &n.first);
            let may = tests.iter().any(|&(op, lit)| {
                let first = block.first.compare(lit);
                let next = next.map(|n| n.compare(lit));
                // A literal of another domain never matches (binding makes this impossible).
                let (Some(first), Some(next)) = (first, next.map_or(Some(None), |n| n.map(Some)))
                else {
                    return false;
                };
                let next_at_least = |o: Ordering| next.is_none_or(|n| n >= o);
                match op {
                    CmpOp::Eq => first != Ordering::Greater && next_at_least(Ordering::Equal),
                    CmpOp::Lt => first == Ordering::Less,
                    CmpOp::LtEq => first != Ordering::Greater,
                    CmpOp::Gt => next_at_least(Ordering::Greater),
                    CmpOp::GtEq => next_at_least(Ordering::Equal),
                    CmpOp::NotEq => true,
                }
            });
            if may {
                out.push(b);
            }
        }
        Some(out)
    }
}

/// Sets in `out` the rows of the values in `block` that satisfy `leaf`; `rows` is the row
/// group's row count (every id is checked against it).
pub(crate) fn block_rows(
    block: &[u8],
    column: &LeafColumn,
    leaf: &Leaf,
    rows: usize,
    out: &mut Bitmap,
) -> Result<()> {
    let width = fixed_width(column);
    let mut c = Cursor {
        bytes: block,
        at: 0,
    };
    let n = c.u32()? as usize;
    for _ in 0..n {
        let v = value_scalar(column, c.value(width)?).ok_or_else(|| bad("a malformed value"))?;
        let hit = satisfies(leaf, &v);
        let runs = c.varint()?;
        // Every run takes at least two bytes: a count the block cannot hold is corrupt.
        if runs > (block.len() - c.at) as u64 / 2 {
            return Err(bad("more runs than the block holds"));
        }
        let mut end = 0u64;
        for _ in 0..runs {
            let start = end.checked_add(c.varint()?);
            let len = c.varint()?.checked_add(1);
            let (Some(start), Some(len)) = (start, len) else {
                return Err(bad("a row run overflows"));
            };
            end = start
                .checked_add(len)
                .filter(|&e| e <= rows as u64)
                .ok_or_else(|| bad("a row id beyond the row group"))?;
            if hit {
                out.set_range(start as usize, end as usize);
            }
        }
    }
    if c.at != block.len() {
        return Err(bad("bytes after the block's last value"));
    }
    Ok(())
}

/// Whether a value satisfies an `=`, `IN` or range leaf (the index holds no NULLs).
fn satisfies(leaf: &Leaf, v: &Scalar) -> bool {
    match &leaf.op {
        LeafOp::Cmp(op, lit) => v.compare(lit).is_some_and(|o| op.holds(o)),
        LeafOp::In { values, negated } => {
            values.iter().any(|l| v.compare(l) == Some(Ordering::Equal)) != *negated
        }
        _ => false,
    }
}

/// A stored value (its plain encoding) in the column's domain.
pub(crate) fn value_scalar(column: &LeafColumn, bytes: &[u8]) -> Option<Scalar> {
    let v = match column.physical {
        PhysicalType::INT32 => PhysicalRef::I32(i32::from_le_bytes(bytes.try_into().ok()?)),
        PhysicalType::INT64 => PhysicalRef::I64(i64::from_le_bytes(bytes.try_into().ok()?)),
        PhysicalType::FLOAT => PhysicalRef::F32(f32::from_le_bytes(bytes.try_into().ok()?)),
        PhysicalType::DOUBLE => PhysicalRef::F64(f64::from_le_bytes(bytes.try_into().ok()?)),
        PhysicalType::BYTE_ARRAY | PhysicalType::FIXED_LEN_BYTE_ARRAY => PhysicalRef::Bytes(bytes),
        PhysicalType::BOOLEAN | PhysicalType::INT96 => return None,
    };
    to_scalar(column, v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one leaf of `message t { optional <field>; }`.
    fn column(field: &str) -> LeafColumn {
        use parquet::schema::{parser::parse_message_type, types::SchemaDescriptor};
        let t = parse_message_type(&format!("message t {{ optional {field}; }}")).unwrap();
        let schema = SchemaDescriptor::new(std::sync::Arc::new(t));
        crate::schema::leaf_columns(&schema).remove(0)
    }

    fn int_column() -> LeafColumn {
        column("int64 k")
    }

    #[test]
    fn rows_round_trip_through_runs() {
        let mut out = Vec::new();
        let rows = [0u32, 1, 2, 7, 9, 10, 4_000_000];
        put_rows(&mut out, &rows);
        let mut c = Cursor { bytes: &out, at: 0 };
        let mut got = Vec::new();
        let mut end = 0;
        let runs = c.varint().unwrap();
        assert_eq!(runs, 4);
        for _ in 0..runs {
            let start = end + c.varint().unwrap();
            let len = c.varint().unwrap() + 1;
            got.extend((start..start + len).map(|r| r as u32));
            end = start + len;
        }
        assert_eq!(got, rows);
    }

    #[test]
    fn equal_comparing_values_over_many_blocks_read_back() {
        // 600 NaN payloads (all equal in the domain order), -0.0 and 0.0, and numbers: what
        // tamis writes, it reads, and every lookup finds exactly its rows.
        let col = column("double f");
        let mut values: Vec<(ValueBytes, Vec<u32>)> = (0..600u64)
            .map(|i| {
                let nan = f64::from_bits(0x7ff8_0000_0000_0000 | (i + 1));
                (nan.to_le_bytes().to_vec(), vec![i as u32])
            })
            .collect();
        values.push(((-0.0f64).to_le_bytes().to_vec(), vec![600]));
        values.push((0.0f64.to_le_bytes().to_vec(), vec![601]));
        values.extend((0..300).map(|i| ((i as f64 + 0.5).to_le_bytes().to_vec(), vec![602 + i])));
        let rows = 902;
        let (blob, fence_len) = encode(&col, values).unwrap();
        let fence = Fence::decode(&blob[..fence_len], blob.len() as u64, &col).unwrap();
        let lookup = |op: CmpOp, v: f64| {
            let leaf = Leaf {
                column: 0,
                op: LeafOp::Cmp(op, Scalar::Float(v)),
            };
            let mut bits = Bitmap::new_zeroed(rows);
            for b in fence.blocks_for(&leaf).unwrap() {
                let r = &fence.blocks[b].range;
                let block = &blob[r.start as usize..r.end as usize];
                block_rows(block, &col, &leaf, rows, &mut bits).unwrap();
            }
            bits.iter_ones().collect::<Vec<_>>()
        };
        assert_eq!(lookup(CmpOp::Eq, f64::NAN), (0..600).collect::<Vec<_>>());
        assert_eq!(lookup(CmpOp::Eq, 0.0), vec![600, 601]);
        assert_eq!(lookup(CmpOp::Eq, 10.5), vec![612]);
        // NaN sorts above every number, as in every comparison tamis makes.
        let mut above: Vec<usize> = (0..600).collect();
        above.extend([900, 901]);
        above.sort_unstable();
        assert_eq!(lookup(CmpOp::Gt, 298.0), above);
        assert_eq!(lookup(CmpOp::Lt, 0.5), vec![600, 601]);
    }

    #[test]
    fn lookups_read_only_blocks_that_may_match() {
        let col = int_column();
        let values: Vec<(ValueBytes, Vec<u32>)> = (0..1000i64)
            .map(|v| {
                (
                    (v * 3).to_le_bytes().to_vec(),
                    vec![v as u32, 1000 + v as u32],
                )
            })
            .collect();
        let (blob, fence_len) = encode(&col, values).unwrap();
        let fence = Fence::decode(&blob[..fence_len], blob.len() as u64, &col).unwrap();
        assert_eq!(
            u64::from_le_bytes(blob[4..12].try_into().unwrap()),
            1000,
            "distinct"
        );
        assert_eq!(
            u64::from_le_bytes(blob[12..20].try_into().unwrap()),
            2000,
            "indexed rows"
        );
        let leaf = |op| Leaf { column: 0, op };
        let eq = leaf(LeafOp::Cmp(CmpOp::Eq, Scalar::Int(300)));
        let blocks = fence.blocks_for(&eq).unwrap();
        assert_eq!(blocks, vec![0]);
        let mut bits = Bitmap::new_zeroed(2000);
        for b in blocks {
            let r = &fence.blocks[b].range;
            block_rows(
                &blob[r.start as usize..r.end as usize],
                &col,
                &eq,
                2000,
                &mut bits,
            )
            .unwrap();
        }
        assert_eq!(bits.iter_ones().collect::<Vec<_>>(), vec![100, 1100]);
        let absent = leaf(LeafOp::Cmp(CmpOp::Eq, Scalar::Int(-1)));
        assert!(fence.blocks_for(&absent).unwrap().is_empty());
        let range = leaf(LeafOp::Cmp(CmpOp::Gt, Scalar::Int(2990)));
        assert_eq!(fence.blocks_for(&range).unwrap(), vec![7]);
        assert!(fence
            .blocks_for(&leaf(LeafOp::Cmp(CmpOp::NotEq, Scalar::Int(1))))
            .is_none());
        // Every truncation of the fence or a block is an error, never a panic.
        for n in 0..fence_len {
            assert!(Fence::decode(&blob[..n], blob.len() as u64, &col).is_err());
        }
        let r = fence.blocks[0].range.clone();
        let block = &blob[r.start as usize..r.end as usize];
        for n in 0..block.len() {
            let mut bits = Bitmap::new_zeroed(2000);
            let _ = block_rows(&block[..n], &col, &eq, 2000, &mut bits);
        }
        let mut bits = Bitmap::new_zeroed(1050);
        assert!(
            block_rows(block, &col, &eq, 1050, &mut bits).is_err(),
            "row beyond the group"
        );
    }
}
