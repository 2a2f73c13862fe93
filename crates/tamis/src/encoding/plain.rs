//! PLAIN: values stored back to back in their natural little-endian width.
//!
//! BOOLEAN is bit-packed LSB first, BYTE_ARRAY is a 4-byte little-endian length before each value,
//! FIXED_LEN_BYTE_ARRAY is `type_length` bytes per value and INT96 is three 32-bit words.

use std::cell::Cell;

use super::{EncodedPage, PageEncoding};
use crate::error::{Error, Result};
use crate::expr::eval::{
    eval_byte_values, eval_f32, eval_f64, eval_i32, eval_i64, Conjunction, FromLe, LeBytes,
};
use crate::expr::LeafOp;
use crate::schema::{Domain, LeafColumn};
use crate::selection::Bitmap;
use crate::values::{ByteArrays, Values};
use parquet::basic::{Encoding, Type as PhysicalType};

/// PLAIN pages: conjunctions evaluated in place on the page bytes ([`eval`]), selected values
/// gathered straight from them ([`decode_selected`]).
pub struct Plain;

impl PageEncoding for Plain {
    fn decode(&self, page: &EncodedPage<'_>) -> Result<Values> {
        page.decode_as(Encoding::PLAIN)
    }

    fn selects(&self) -> bool {
        true
    }

    fn evaluate(&self, page: &EncodedPage<'_>, conj: &Conjunction<'_>) -> Option<Result<Bitmap>> {
        if !conj
            .leaves
            .iter()
            .all(|l| evaluates_in_place(&l.op, page.column))
        {
            return None;
        }
        Some(conj.fold(|op| {
            eval(op, page.column, page.data, page.num_values).unwrap_or_else(|| {
                Err(Error::internal(
                    "in-place evaluation declined a supported leaf",
                ))
            })
        }))
    }

    fn evaluate_selected(
        &self,
        page: &EncodedPage<'_>,
        conj: &Conjunction<'_>,
        selected: &Bitmap,
    ) -> Option<Result<Bitmap>> {
        Some(
            self.select(page, selected)?
                .and_then(|values| conj.on_values(&values)),
        )
    }

    fn select(&self, page: &EncodedPage<'_>, selected: &Bitmap) -> Option<Result<Values>> {
        let column = page.column;
        Some(decode_selected(
            column.physical,
            column.type_length,
            page.data,
            page.num_values,
            selected,
        ))
    }
}

/// Whether [`eval`] evaluates `op` on this column's PLAIN pages in place. It declines BOOLEAN,
/// INT96 and FIXED_LEN_BYTE_ARRAY (decimals, FLOAT16, UUIDs): those decode first.
pub fn evaluates_in_place(op: &LeafOp, column: &LeafColumn) -> bool {
    if matches!(op, LeafOp::IsNull { .. }) {
        return false;
    }
    let like = matches!(op, LeafOp::Like { .. });
    match (column.physical, column.domain()) {
        (PhysicalType::INT32 | PhysicalType::INT64, Domain::Int | Domain::UInt)
        | (PhysicalType::FLOAT | PhysicalType::DOUBLE, Domain::Float) => !like,
        (PhysicalType::BYTE_ARRAY, Domain::Bytes) => true,
        _ => false,
    }
}

/// Bit `i` set iff PLAIN value `i` of the page satisfies `op`, compared on the page bytes: fixed
/// widths by a branch-free loop over little-endian words, byte arrays by walking the length
/// prefixes and comparing (or LIKE-matching) each value where it lies. Nothing is decoded into
/// a buffer. `None` when the kernel declines (see [`evaluates_in_place`]); the caller decodes.
pub fn eval(op: &LeafOp, column: &LeafColumn, data: &[u8], n: usize) -> Option<Result<Bitmap>> {
    if !evaluates_in_place(op, column) {
        return None;
    }
    /// The page's `n` values as `T`, or the short-page error.
    fn view<'a, T: FromLe>(data: &'a [u8], n: usize, what: &str) -> Result<LeBytes<'a, T>> {
        LeBytes::new(data, n).ok_or_else(|| short(what, data.len(), n))
    }
    let bits = match column.physical {
        PhysicalType::INT32 => view(data, n, "INT32").map(|v| eval_i32(op, column, v)),
        PhysicalType::INT64 => view(data, n, "INT64").map(|v| eval_i64(op, column, v)),
        PhysicalType::FLOAT => view(data, n, "FLOAT").map(|v| eval_f32(op, column, v)),
        PhysicalType::DOUBLE => view(data, n, "DOUBLE").map(|v| eval_f64(op, column, v)),
        PhysicalType::BYTE_ARRAY => {
            let bad = Cell::new(None);
            let bits = eval_byte_values(op, column, n, LengthPrefixed::new(data, n, &bad));
            bad.take().map_or(Ok(bits), Err)
        }
        _ => return None,
    };
    // `evaluates_in_place` said yes, so the kernel accepts the leaf.
    Some(
        bits.and_then(|b| {
            b.ok_or_else(|| Error::internal("in-place kernel refused a supported leaf"))
        }),
    )
}

/// The values of a PLAIN BYTE_ARRAY page as slices of the page, walking the length prefixes.
/// A truncated page records its error in `bad` and yields empty slices for the rest, so that a
/// kernel consuming exactly `n` values still ends; the caller reports the error.
struct LengthPrefixed<'a, 'b> {
    data: &'a [u8],
    pos: usize,
    i: usize,
    n: usize,
    bad: &'b Cell<Option<Error>>,
}

impl<'a, 'b> LengthPrefixed<'a, 'b> {
    fn new(data: &'a [u8], n: usize, bad: &'b Cell<Option<Error>>) -> Self {
        LengthPrefixed {
            data,
            pos: 0,
            i: 0,
            n,
            bad,
        }
    }
}

impl<'a> Iterator for LengthPrefixed<'a, '_> {
    type Item = &'a [u8];
    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.i == self.n {
            return None;
        }
        let i = self.i;
        self.i += 1;
        let value = self
            .data
            .get(self.pos..self.pos + 4)
            .map(|l| u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize)
            .and_then(|len| {
                let start = self.pos + 4;
                let end = start.checked_add(len).filter(|&e| e <= self.data.len())?;
                self.pos = end;
                Some(&self.data[start..end])
            });
        Some(value.unwrap_or_else(|| {
            let e = Error::corrupt(format!(
                "PLAIN BYTE_ARRAY page is truncated at value {i} of {}",
                self.n
            ));
            let first = self.bad.take().unwrap_or(e);
            self.bad.set(Some(first));
            self.pos = self.data.len();
            &[]
        }))
    }
}

/// Decodes `num_values` PLAIN values of `physical` type from `data` (trailing bytes are ignored).
pub fn decode(
    physical: PhysicalType,
    type_length: usize,
    data: &[u8],
    num_values: usize,
) -> Result<Values> {
    Ok(match physical {
        PhysicalType::BOOLEAN => {
            let needed = num_values.div_ceil(8);
            if data.len() < needed {
                return Err(short("BOOLEAN", data.len(), num_values));
            }
            Values::Bool(
                (0..num_values)
                    .map(|i| (data[i / 8] >> (i % 8)) & 1 == 1)
                    .collect(),
            )
        }
        PhysicalType::INT32 => Values::I32(fixed::<4, _>(
            data,
            num_values,
            "INT32",
            i32::from_le_bytes,
        )?),
        PhysicalType::INT64 => Values::I64(fixed::<8, _>(
            data,
            num_values,
            "INT64",
            i64::from_le_bytes,
        )?),
        PhysicalType::FLOAT => Values::F32(fixed::<4, _>(
            data,
            num_values,
            "FLOAT",
            f32::from_le_bytes,
        )?),
        PhysicalType::DOUBLE => Values::F64(fixed::<8, _>(
            data,
            num_values,
            "DOUBLE",
            f64::from_le_bytes,
        )?),
        PhysicalType::INT96 => Values::I96(fixed::<12, _>(data, num_values, "INT96", |b| {
            let w = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
            [w(0), w(4), w(8)]
        })?),
        PhysicalType::BYTE_ARRAY => Values::Bytes(byte_arrays(data, num_values)?.0),
        PhysicalType::FIXED_LEN_BYTE_ARRAY => {
            Values::Bytes(fixed_len(data, type_length, num_values, "PLAIN")?)
        }
    })
}

/// Decodes only the values whose bit is set in `selected` (one bit per value of the page,
/// `num_values` bits), straight from the page bytes: selection pushdown on PLAIN pages, where
/// "select" is a gather. The page is validated exactly as [`decode`] validates it.
pub fn decode_selected(
    physical: PhysicalType,
    type_length: usize,
    data: &[u8],
    num_values: usize,
    selected: &Bitmap,
) -> Result<Values> {
    if selected.len() != num_values {
        return Err(Error::internal(format!(
            "selection of {} bits for a page of {num_values} values",
            selected.len()
        )));
    }
    let picked = selected.count_ones();
    Ok(match physical {
        PhysicalType::BOOLEAN => {
            if data.len() < num_values.div_ceil(8) {
                return Err(short("BOOLEAN", data.len(), num_values));
            }
            let mut out = Vec::with_capacity(picked);
            out.extend(
                selected
                    .iter_ones()
                    .map(|i| (data[i / 8] >> (i % 8)) & 1 == 1),
            );
            Values::Bool(out)
        }
        PhysicalType::INT32 => {
            Values::I32(gather::<4, _>(data, selected, "INT32", i32::from_le_bytes)?)
        }
        PhysicalType::INT64 => {
            Values::I64(gather::<8, _>(data, selected, "INT64", i64::from_le_bytes)?)
        }
        PhysicalType::FLOAT => {
            Values::F32(gather::<4, _>(data, selected, "FLOAT", f32::from_le_bytes)?)
        }
        PhysicalType::DOUBLE => Values::F64(gather::<8, _>(
            data,
            selected,
            "DOUBLE",
            f64::from_le_bytes,
        )?),
        PhysicalType::INT96 => Values::I96(gather::<12, _>(data, selected, "INT96", |b| {
            let w = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
            [w(0), w(4), w(8)]
        })?),
        PhysicalType::BYTE_ARRAY => Values::Bytes(selected_byte_arrays(data, selected)?),
        PhysicalType::FIXED_LEN_BYTE_ARRAY => {
            if type_length == 0 {
                return Err(Error::corrupt(
                    "PLAIN FIXED_LEN_BYTE_ARRAY column has type_length 0",
                ));
            }
            num_values
                .checked_mul(type_length)
                .filter(|&n| n <= data.len())
                .ok_or_else(|| {
                    Error::corrupt(format!(
                        "PLAIN FIXED_LEN_BYTE_ARRAY({type_length}) page holds {} bytes for {num_values} values",
                        data.len()
                    ))
                })?;
            let mut out = ByteArrays::with_capacity(picked, picked * type_length);
            for i in selected.iter_ones() {
                out.push(&data[i * type_length..(i + 1) * type_length]);
            }
            Values::Bytes(out)
        }
    })
}

/// Selected runs at least this long on average are copied run by run rather than value by value.
const MIN_MEAN_RUN: usize = 8;

/// The selected values of `N` bytes each, after checking the data holds every value.
fn gather<const N: usize, T>(
    data: &[u8],
    selected: &Bitmap,
    what: &str,
    convert: impl Fn([u8; N]) -> T,
) -> Result<Vec<T>> {
    let num_values = selected.len();
    match num_values.checked_mul(N) {
        Some(needed) if needed <= data.len() => {
            let data = &data[..needed];
            let count = selected.count_ones();
            let mut out = Vec::with_capacity(count);
            let value = |c: &[u8]| convert(c.try_into().expect("chunks_exact(N)"));
            if selected.run_count() * MIN_MEAN_RUN <= count {
                // Long runs (a sorted column's range, a dense selection): one slice per run,
                // converted by a loop the compiler vectorizes.
                for r in selected.ranges() {
                    out.extend(data[r.start * N..r.end * N].chunks_exact(N).map(value));
                }
            } else {
                out.extend(selected.iter_ones().map(|i| value(&data[i * N..i * N + N])));
            }
            Ok(out)
        }
        _ => Err(short(what, data.len(), num_values)),
    }
}

/// Walks every length prefix (the only way to find a value) and copies the selected values.
fn selected_byte_arrays(data: &[u8], selected: &Bitmap) -> Result<ByteArrays> {
    let num_values = selected.len();
    let mut out = ByteArrays::with_capacity(selected.count_ones(), 0);
    let mut pos = 0usize;
    for i in 0..num_values {
        let len_bytes = data.get(pos..pos + 4).ok_or_else(|| {
            Error::corrupt(format!(
                "PLAIN BYTE_ARRAY page ends at value {i} of {num_values} (no length)"
            ))
        })?;
        let len =
            u32::from_le_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]) as usize;
        pos += 4;
        let end = pos
            .checked_add(len)
            .filter(|&e| e <= data.len())
            .ok_or_else(|| {
                Error::corrupt(format!(
                    "PLAIN BYTE_ARRAY value {i} has length {len} but {} bytes remain",
                    data.len() - pos
                ))
            })?;
        if selected.get(i) {
            out.push(&data[pos..end]);
        }
        pos = end;
    }
    Ok(out)
}

fn short(what: &str, len: usize, num_values: usize) -> Error {
    Error::corrupt(format!(
        "PLAIN {what} page holds {len} bytes for {num_values} values"
    ))
}

/// Decodes `num_values` values of `N` bytes each, after checking the data holds them all.
fn fixed<const N: usize, T>(
    data: &[u8],
    num_values: usize,
    what: &str,
    convert: impl Fn([u8; N]) -> T,
) -> Result<Vec<T>> {
    match num_values.checked_mul(N) {
        Some(needed) if needed <= data.len() => Ok(data[..needed]
            .chunks_exact(N)
            .map(|c| {
                let mut a = [0u8; N];
                a.copy_from_slice(c);
                convert(a)
            })
            .collect()),
        _ => Err(short(what, data.len(), num_values)),
    }
}

/// Decodes `num_values` length-prefixed byte arrays, returning them and the bytes consumed.
pub(crate) fn byte_arrays(data: &[u8], num_values: usize) -> Result<(ByteArrays, usize)> {
    // Each value takes at least its 4-byte length, which bounds the capacity.
    let mut out = ByteArrays::with_capacity(num_values.min(data.len() / 4), data.len());
    let mut pos = 0usize;
    for i in 0..num_values {
        let len_bytes = data.get(pos..pos + 4).ok_or_else(|| {
            Error::corrupt(format!(
                "PLAIN BYTE_ARRAY page ends at value {i} of {num_values} (no length)"
            ))
        })?;
        let len =
            u32::from_le_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]) as usize;
        pos += 4;
        let value = pos
            .checked_add(len)
            .and_then(|end| data.get(pos..end))
            .ok_or_else(|| {
                Error::corrupt(format!(
                    "PLAIN BYTE_ARRAY value {i} has length {len} but {} bytes remain",
                    data.len() - pos
                ))
            })?;
        out.push(value);
        pos += len;
    }
    Ok((out, pos))
}

/// Splits `data` into `num_values` values of `type_length` bytes each.
pub(crate) fn fixed_len(
    data: &[u8],
    type_length: usize,
    num_values: usize,
    encoding: &str,
) -> Result<ByteArrays> {
    if type_length == 0 {
        return Err(Error::corrupt(format!(
            "{encoding} FIXED_LEN_BYTE_ARRAY column has type_length 0"
        )));
    }
    let needed = num_values.checked_mul(type_length).filter(|&n| n <= data.len()).ok_or_else(|| {
        Error::corrupt(format!(
            "{encoding} FIXED_LEN_BYTE_ARRAY({type_length}) page holds {} bytes for {num_values} values",
            data.len()
        ))
    })?;
    let mut out = ByteArrays::with_capacity(num_values, needed);
    out.data.extend_from_slice(&data[..needed]);
    out.offsets
        .extend((1..=num_values).map(|i| i * type_length));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::test_util::{arb_values, encode_values};
    use parquet::basic::Encoding;
    use proptest::prelude::*;

    use crate::expr::eval::eval_dense;
    use crate::expr::tests::test_columns;
    use crate::expr::{to_scalar, CmpOp, KeyFilter, LikePattern, PhysicalRef, Scalar};

    fn column(name: &str) -> LeafColumn {
        test_columns().into_iter().find(|c| c.path == name).unwrap()
    }

    /// Values of `physical` with the edges in-place kernels get wrong: extremes, NaN, ±0.0,
    /// empty strings, and runs across 64-value words.
    fn arb_edge_values(physical: PhysicalType) -> BoxedStrategy<Values> {
        let n = 0usize..200;
        match physical {
            PhysicalType::INT32 => prop::collection::vec(
                prop_oneof![any::<i32>(), -3i32..3, Just(i32::MIN), Just(i32::MAX)],
                n,
            )
            .prop_map(Values::I32)
            .boxed(),
            PhysicalType::INT64 => prop::collection::vec(
                prop_oneof![any::<i64>(), -3i64..3, Just(i64::MIN), Just(i64::MAX)],
                n,
            )
            .prop_map(Values::I64)
            .boxed(),
            PhysicalType::FLOAT => prop::collection::vec(
                prop_oneof![
                    any::<f32>(),
                    Just(f32::NAN),
                    Just(-0.0f32),
                    Just(0.0f32),
                    Just(1.5f32)
                ],
                n,
            )
            .prop_map(Values::F32)
            .boxed(),
            PhysicalType::DOUBLE => prop::collection::vec(
                prop_oneof![
                    any::<f64>(),
                    Just(f64::NAN),
                    Just(-0.0f64),
                    Just(0.0f64),
                    Just(1.5f64)
                ],
                n,
            )
            .prop_map(Values::F64)
            .boxed(),
            _ => prop::collection::vec(
                prop_oneof![
                    Just(Vec::new()),
                    Just(b"ab".to_vec()),
                    Just(b"abc".to_vec()),
                    prop::collection::vec(97u8..100, 0..6),
                ],
                n,
            )
            .prop_map(|v| {
                let mut b = ByteArrays::new();
                v.iter().for_each(|x| b.push(x));
                Values::Bytes(b)
            })
            .boxed(),
        }
    }

    fn phys(values: &Values, i: usize) -> PhysicalRef<'_> {
        match values {
            Values::I32(v) => PhysicalRef::I32(v[i]),
            Values::I64(v) => PhysicalRef::I64(v[i]),
            Values::F32(v) => PhysicalRef::F32(v[i]),
            Values::F64(v) => PhysicalRef::F64(v[i]),
            Values::Bytes(b) => PhysicalRef::Bytes(b.get(i)),
            _ => unreachable!(),
        }
    }

    /// Every comparison with literals taken from the data (and the edges), IN lists and LIKE.
    fn leaf_ops(col: &LeafColumn, values: &Values) -> Vec<LeafOp> {
        let mut lits: Vec<Scalar> = (0..values.len())
            .step_by(7)
            .filter_map(|i| to_scalar(col, phys(values, i)))
            .collect();
        match values {
            Values::F32(_) | Values::F64(_) => lits.extend([
                Scalar::Float(f64::NAN),
                Scalar::Float(-0.0),
                Scalar::Float(0.0),
            ]),
            Values::Bytes(_) => lits.extend([Scalar::Bytes(vec![]), Scalar::Bytes(b"ab".to_vec())]),
            _ => {}
        }
        let mut ops = Vec::new();
        for lit in &lits {
            for c in [
                CmpOp::Eq,
                CmpOp::NotEq,
                CmpOp::Lt,
                CmpOp::LtEq,
                CmpOp::Gt,
                CmpOp::GtEq,
            ] {
                ops.push(LeafOp::Cmp(c, lit.clone()));
            }
        }
        for negated in [false, true] {
            ops.push(LeafOp::In {
                values: lits.iter().take(3).cloned().collect(),
                negated,
            });
            ops.push(LeafOp::In {
                values: lits.clone(),
                negated,
            });
            if matches!(values, Values::Bytes(_)) {
                for pat in ["ab%", "%b%", "a_c", "", "%"] {
                    ops.push(LeafOp::Like {
                        pattern: LikePattern::new(pat, None).unwrap(),
                        negated,
                    });
                }
            }
        }
        // A join-key filter over every other literal.
        let half: Vec<&Scalar> = lits.iter().step_by(2).collect();
        let ints: Vec<i64> = half
            .iter()
            .filter_map(|s| match s {
                Scalar::Int(x) => Some(*x),
                Scalar::UInt(x) => Some(*x as i64),
                _ => None,
            })
            .collect();
        let bytes: Vec<&[u8]> = half
            .iter()
            .filter_map(|s| match s {
                Scalar::Bytes(b) => Some(b.as_slice()),
                _ => None,
            })
            .collect();
        match col.domain() {
            Domain::Int | Domain::UInt => ops.push(LeafOp::InKeys(std::sync::Arc::new(
                KeyFilter::from_ints(&ints, "test").without_adapting(),
            ))),
            Domain::Bytes => ops.push(LeafOp::InKeys(std::sync::Arc::new(
                KeyFilter::from_bytes(bytes.into_iter(), "test").without_adapting(),
            ))),
            _ => {}
        }
        ops
    }

    proptest! {
        /// In-place evaluation on the page bytes agrees with evaluation of the decoded values
        /// (itself checked against the scalar reference in `expr::eval`), and a truncated page
        /// is an error, never a short or wrong bitmap.
        #[test]
        fn in_place_matches_decoded(
            pick in 0usize..6,
            values in prop::sample::select(vec![PhysicalType::INT32, PhysicalType::INT64,
                PhysicalType::FLOAT, PhysicalType::DOUBLE, PhysicalType::BYTE_ARRAY])
                .prop_flat_map(arb_edge_values),
        ) {
            let (physical, names): (PhysicalType, &[&str]) = match &values {
                Values::I32(_) => (PhysicalType::INT32, &["i32", "i8", "u32", "dt", "tm", "d92"]),
                Values::I64(_) => (PhysicalType::INT64, &["i64", "u64", "ts_us", "lts_us", "ts_ns"]),
                Values::F32(_) => (PhysicalType::FLOAT, &["f32"]),
                Values::F64(_) => (PhysicalType::DOUBLE, &["f64"]),
                _ => (PhysicalType::BYTE_ARRAY, &["s", "b"]),
            };
            let col = column(names[pick % names.len()]);
            let data = encode_values(Encoding::PLAIN, physical, 0, &values);
            let n = values.len();
            for op in leaf_ops(&col, &values) {
                let Some(got) = eval(&op, &col, &data, n) else {
                    prop_assert!(!evaluates_in_place(&op, &col));
                    continue;
                };
                let want = eval_dense(&op, &col, &values).unwrap();
                prop_assert_eq!(got.unwrap(), want, "{:?} on {}", op, col.path);
                if n > 0 {
                    prop_assert!(eval(&op, &col, &data[..data.len() - 1], n).unwrap().is_err());
                }
            }
        }
    }

    #[test]
    fn declines_what_it_does_not_evaluate() {
        let is_null = LeafOp::IsNull { negated: false };
        assert!(!evaluates_in_place(&is_null, &column("i32")));
        for name in ["flag", "i96", "f16", "d203"] {
            let op = LeafOp::Cmp(CmpOp::Eq, Scalar::Int(1));
            assert!(eval(&op, &column(name), &[0; 64], 1).is_none(), "{name}");
        }
    }

    proptest! {
        #[test]
        fn roundtrip_all_types((physical, type_length, values) in arb_values()) {
            let data = encode_values(Encoding::PLAIN, physical, type_length, &values);
            let got = decode(physical, type_length, &data, values.len()).unwrap();
            prop_assert_eq!(&got, &values);
            for shape in 0..5usize {
                let sel = Bitmap::from_bools(&(0..values.len()).map(|i| match shape {
                    0 => false,
                    1 => true,
                    2 => i % 3 == 0,
                    // Long runs: copied run by run.
                    3 => (i / 37) % 2 == 0,
                    _ => i % 64 == 63 || i % 7 == 2,
                }).collect::<Vec<_>>());
                let idx: Vec<u32> = sel.iter_ones().map(|i| i as u32).collect();
                let picked = decode_selected(physical, type_length, &data, values.len(), &sel).unwrap();
                prop_assert_eq!(picked, values.take(&idx));
                if !values.is_empty() && physical != PhysicalType::BOOLEAN {
                    let cut = &data[..data.len() - 1];
                    prop_assert!(decode_selected(physical, type_length, cut, values.len(), &sel).is_err());
                }
            }
            if !values.is_empty() && physical != PhysicalType::BOOLEAN {
                // Dropping the last byte always loses part of the last value.
                prop_assert!(decode(physical, type_length, &data[..data.len() - 1], values.len()).is_err());
            }
            prop_assert!(decode(physical, type_length, &data, usize::MAX).is_err());
            prop_assert!(decode(physical, type_length, &data, values.len() + 1 + data.len() * 8).is_err());
        }

        #[test]
        fn garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..64), n in 0usize..100, tl in 0usize..5) {
            for physical in crate::encoding::test_util::ALL_TYPES {
                let _ = decode(physical, tl, &data, n);
            }
        }
    }

    #[test]
    fn edge_cases() {
        assert_eq!(
            decode(PhysicalType::INT32, 0, &[], 0).unwrap(),
            Values::I32(vec![])
        );
        let e = decode(PhysicalType::INT32, 0, &[0; 10], 4).unwrap_err();
        assert_eq!(e.message, "PLAIN INT32 page holds 10 bytes for 4 values");
        assert!(decode(PhysicalType::FIXED_LEN_BYTE_ARRAY, 0, &[0; 10], 1).is_err());
        assert!(decode(PhysicalType::FIXED_LEN_BYTE_ARRAY, usize::MAX, &[0; 10], 2).is_err());
        // A length that points past the end, and one that overflows.
        assert!(decode(PhysicalType::BYTE_ARRAY, 0, &[5, 0, 0, 0, 1], 1).is_err());
        assert!(decode(PhysicalType::BYTE_ARRAY, 0, &[0xff; 8], 1).is_err());
        assert!(decode(PhysicalType::BYTE_ARRAY, 0, &[0, 0, 0], 1).is_err());
        assert_eq!(
            decode(PhysicalType::BOOLEAN, 0, &[0b101], 3).unwrap(),
            Values::Bool(vec![true, false, true])
        );
        assert!(decode(PhysicalType::BOOLEAN, 0, &[0b101], 9).is_err());
    }
}
