//! Leaf evaluation on decoded values.
//!
//! [`eval_dense`] runs one leaf over the dense (non-null) values of a page or dictionary. The
//! literal is taken out of its [`Scalar`] once, then a loop specialised per physical type and
//! operator fills the bitmap 64 results per word, with no per-value allocation.
//! [`eval_scalar`] is the slow, obvious reference the kernels are tested against.

use std::cell::{Cell, OnceCell};
use std::cmp::Ordering;

use super::key_filter::KeyKind;
use super::{cmp_f64, i128_from_be, CmpOp, KeyFilter, Leaf, LeafOp, Scalar};
use crate::error::{Error, Result};
use crate::schema::{Domain, LeafColumn, LogicalKind};
use crate::selection::Bitmap;
use crate::values::Values;

/// Leaf predicates on one column that must all hold (`a >= 5 AND a < 9`), evaluated together over
/// the values of each page of a column chunk; the result over the chunk's dictionary is computed
/// once and kept.
pub struct Conjunction<'a> {
    pub leaves: &'a [&'a Leaf],
    pub column: &'a LeafColumn,
    dictionary: OnceCell<Bitmap>,
}

impl<'a> Conjunction<'a> {
    /// `leaves` must not be empty (an empty conjunction is an internal error when evaluated).
    pub fn new(leaves: &'a [&'a Leaf], column: &'a LeafColumn) -> Self {
        Conjunction {
            leaves,
            column,
            dictionary: OnceCell::new(),
        }
    }

    /// Bit `i` set iff dense value `i` satisfies every leaf.
    pub fn on_values(&self, values: &Values) -> Result<Bitmap> {
        self.fold(|op| eval_dense(op, self.column, values))
    }

    /// The result over the dictionary `entries` (one bit per entry), computed on first use.
    pub fn on_dictionary(&self, entries: &Values) -> Result<&Bitmap> {
        if let Some(matches) = self.dictionary.get() {
            return Ok(matches);
        }
        let matches = self.on_values(entries)?;
        Ok(self.dictionary.get_or_init(|| matches))
    }

    /// The AND of `eval` over the leaves' operators.
    pub fn fold(&self, mut eval: impl FnMut(&LeafOp) -> Result<Bitmap>) -> Result<Bitmap> {
        let mut acc: Option<Bitmap> = None;
        for leaf in self.leaves {
            let bits = eval(&leaf.op)?;
            match &mut acc {
                None => acc = Some(bits),
                Some(a) => a.and_inplace(&bits),
            }
        }
        acc.ok_or_else(|| Error::internal("empty conjunction"))
    }
}

/// Lists at most this long are scanned linearly; longer ones are binary searched.
const LINEAR_IN: usize = 8;

/// Bit `i` set iff dense value `i` satisfies `op`.
pub(crate) fn eval_dense(op: &LeafOp, column: &LeafColumn, values: &Values) -> Result<Bitmap> {
    let n = values.len();
    match op {
        // Dense values are never null.
        LeafOp::IsNull { negated } => {
            return Ok(if *negated {
                Bitmap::new_set(n)
            } else {
                Bitmap::new_zeroed(n)
            })
        }
        LeafOp::Like { .. } | LeafOp::InKeys(_) if matches!(values, Values::Bytes(_)) => {
            let Values::Bytes(b) = values else {
                return Err(mismatch(op, column, values));
            };
            return eval_byte_values(op, column, n, b.iter())
                .ok_or_else(|| mismatch(op, column, values));
        }
        _ => {}
    }
    let domain = column.domain();
    Ok(match (domain, values) {
        (Domain::Int | Domain::UInt, Values::I32(v)) => {
            eval_i32(op, column, v.as_slice()).ok_or_else(|| mismatch(op, column, values))?
        }
        (Domain::Int | Domain::UInt, Values::I64(v)) => {
            eval_i64(op, column, v.as_slice()).ok_or_else(|| mismatch(op, column, values))?
        }
        (Domain::Bool, Values::Bool(v)) => {
            let lit = map_op(op, |s| {
                if let Scalar::Bool(b) = s {
                    Some(*b)
                } else {
                    None
                }
            })
            .ok_or_else(|| mismatch(op, column, values))?;
            ord_kernel(v.as_slice(), |x| x, &lit)
        }
        (Domain::Float, Values::F32(v)) => {
            eval_f32(op, column, v.as_slice()).ok_or_else(|| mismatch(op, column, values))?
        }
        (Domain::Float, Values::F64(v)) => {
            eval_f64(op, column, v.as_slice()).ok_or_else(|| mismatch(op, column, values))?
        }
        (Domain::Float, Values::Bytes(b)) if column.logical == LogicalKind::Float16 => {
            let lit = float_op(op).ok_or_else(|| mismatch(op, column, values))?;
            if b.data.len() != 2 * b.len() || b.offsets.windows(2).any(|w| w[1] - w[0] != 2) {
                return Err(Error::corrupt(format!(
                    "FLOAT16 column '{}' has values that are not 2 bytes wide",
                    column.path
                )));
            }
            let halves: Vec<f64> = b
                .data
                .chunks_exact(2)
                .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f64())
                .collect();
            float_kernel(halves.as_slice(), |x| x, &lit)
        }
        (Domain::Decimal, Values::Bytes(b)) => {
            let lit = map_op(op, |s| {
                if let Scalar::Decimal(d) = s {
                    Some(*d)
                } else {
                    None
                }
            })
            .ok_or_else(|| mismatch(op, column, values))?;
            let bad = Cell::new(false);
            let out = bytes_kernel(
                n,
                b.iter(),
                |x| {
                    i128_from_be(x).unwrap_or_else(|| {
                        bad.set(true);
                        0
                    })
                },
                &lit,
            );
            if bad.get() {
                return Err(Error::corrupt(format!(
                    "decimal column '{}' has a value wider than 16 bytes",
                    column.path
                )));
            }
            out
        }
        (Domain::Bytes, Values::Bytes(b)) => {
            eval_byte_values(op, column, n, b.iter()).ok_or_else(|| mismatch(op, column, values))?
        }
        _ => return Err(mismatch(op, column, values)),
    })
}

/// A leaf over INT32 values (integers, dates, times, small decimals as integers), from a decoded
/// slice or in place from a PLAIN page. `None`: the leaf does not fit the column.
pub(crate) fn eval_i32(
    op: &LeafOp,
    column: &LeafColumn,
    vals: impl Dense<Item = i32>,
) -> Option<Bitmap> {
    if let LeafOp::InKeys(f) = op {
        return match column.domain() {
            Domain::Int => keys_kernel(f, vals, |x| x as i64),
            Domain::UInt => keys_kernel(f, vals, |x| x as u32 as i64),
            _ => None,
        };
    }
    match column.domain() {
        Domain::Int => Some(ord_kernel(vals, |x| x as i64, &int_op(op)?)),
        Domain::UInt => Some(ord_kernel(vals, |x| x as u32 as u64, &uint_op(op)?)),
        _ => None,
    }
}

/// A leaf over INT64 values (see [`eval_i32`]).
pub(crate) fn eval_i64(
    op: &LeafOp,
    column: &LeafColumn,
    vals: impl Dense<Item = i64>,
) -> Option<Bitmap> {
    if let LeafOp::InKeys(f) = op {
        return match column.domain() {
            Domain::Int | Domain::UInt => keys_kernel(f, vals, |x| x),
            _ => None,
        };
    }
    match column.domain() {
        Domain::Int => Some(ord_kernel(vals, |x| x, &int_op(op)?)),
        Domain::UInt => Some(ord_kernel(vals, |x| x as u64, &uint_op(op)?)),
        _ => None,
    }
}

/// A leaf over FLOAT values (see [`eval_i32`]).
pub(crate) fn eval_f32(
    op: &LeafOp,
    column: &LeafColumn,
    vals: impl Dense<Item = f32>,
) -> Option<Bitmap> {
    (column.domain() == Domain::Float).then_some(())?;
    Some(float_kernel(vals, |x| x as f64, &float_op(op)?))
}

/// A leaf over DOUBLE values (see [`eval_i32`]).
pub(crate) fn eval_f64(
    op: &LeafOp,
    column: &LeafColumn,
    vals: impl Dense<Item = f64>,
) -> Option<Bitmap> {
    (column.domain() == Domain::Float).then_some(())?;
    Some(float_kernel(vals, |x| x, &float_op(op)?))
}

/// A comparison, IN list or LIKE over `n` byte strings of a `Bytes`-domain column, from decoded
/// values or straight from a PLAIN page: no value is copied.
pub(crate) fn eval_byte_values<'a>(
    op: &LeafOp,
    column: &LeafColumn,
    n: usize,
    vals: impl Iterator<Item = &'a [u8]>,
) -> Option<Bitmap> {
    if column.domain() != Domain::Bytes {
        return None;
    }
    if let LeafOp::Like { pattern, negated } = op {
        let neg = *negated;
        return Some(from_iter(n, vals.map(|v| pattern.matches(v) != neg)));
    }
    if let LeafOp::InKeys(f) = op {
        if f.kind() != KeyKind::Bytes {
            return None;
        }
        if !f.active() {
            return Some(Bitmap::new_set(n));
        }
        let out = from_iter(n, vals.map(|v| f.may_contain_bytes(v)));
        f.observe(n as u64, out.count_ones() as u64);
        return Some(out);
    }
    let lit = map_op(op, |s| {
        if let Scalar::Bytes(x) = s {
            Some(x.as_slice())
        } else {
            None
        }
    })?;
    Some(bytes_kernel(n, vals, |x| x, &lit))
}

fn mismatch(op: &LeafOp, column: &LeafColumn, values: &Values) -> Error {
    let kind = match values {
        Values::Bool(_) => "BOOLEAN",
        Values::I32(_) => "INT32",
        Values::I64(_) => "INT64",
        Values::I96(_) => "INT96",
        Values::F32(_) => "FLOAT",
        Values::F64(_) => "DOUBLE",
        Values::Bytes(_) => "BYTE_ARRAY",
    };
    Error::internal(format!(
        "leaf {op:?} does not fit column '{}' (domain {:?}, {kind} values)",
        column.path,
        column.domain()
    ))
}

/// A join-key filter over integer values: probes while the filter is active and reports
/// what passed, so the filter can decide whether probing still pays.
fn keys_kernel<D: Dense>(f: &KeyFilter, vals: D, key: impl Fn(D::Item) -> i64) -> Option<Bitmap> {
    if f.kind() != KeyKind::Int {
        return None;
    }
    let n = vals.len();
    if !f.active() {
        return Some(Bitmap::new_set(n));
    }
    let out = vals.pack_keys(key, |keys| f.may_contain_ints(keys));
    f.observe(n as u64, out.count_ones() as u64);
    Some(out)
}

/// A comparison or IN list with the literal(s) extracted into the kernel's key type.
enum KeyOp<K> {
    Cmp(CmpOp, K),
    /// Sorted, deduplicated.
    In(Vec<K>, bool),
}

fn map_op<'a, K: Copy>(op: &'a LeafOp, f: impl Fn(&'a Scalar) -> Option<K>) -> Option<KeyOp<K>> {
    match op {
        LeafOp::Cmp(c, s) => Some(KeyOp::Cmp(*c, f(s)?)),
        LeafOp::In { values, negated } => {
            let list = values.iter().map(f).collect::<Option<Vec<K>>>()?;
            Some(KeyOp::In(list, *negated))
        }
        _ => None,
    }
}

fn int_op(op: &LeafOp) -> Option<KeyOp<i64>> {
    map_op(op, |s| {
        if let Scalar::Int(x) = s {
            Some(*x)
        } else {
            None
        }
    })
}
fn uint_op(op: &LeafOp) -> Option<KeyOp<u64>> {
    map_op(op, |s| {
        if let Scalar::UInt(x) = s {
            Some(*x)
        } else {
            None
        }
    })
}
fn float_op(op: &LeafOp) -> Option<KeyOp<f64>> {
    map_op(op, |s| {
        if let Scalar::Float(x) = s {
            Some(*x)
        } else {
            None
        }
    })
}

/// Dense (non-null) values a kernel reads: a decoded slice, or a PLAIN page's bytes read where
/// they lie ([`LeBytes`], in-place evaluation).
pub(crate) trait Dense {
    type Item: Copy;
    fn len(&self) -> usize;
    /// Bit `i` set iff `pred(value i)`, 64 results per word, without branches on the results.
    fn pack(&self, pred: impl FnMut(Self::Item) -> bool) -> Bitmap;
    /// [`Dense::pack`] for a comparison against a literal: vectorized where the CPU allows
    /// ([`kernels::pack`](crate::kernels::pack)).
    fn pack_cmp(&self, pred: impl FnMut(Self::Item) -> bool) -> Bitmap;
    /// The values widened to `i64` keys, 64 at a time, and `probe`'s bits for each 64 (a
    /// join-key filter tests several keys per step: [`KeyFilter::may_contain_ints`]).
    fn pack_keys(
        &self,
        widen: impl Fn(Self::Item) -> i64,
        probe: impl FnMut(&[i64]) -> u64,
    ) -> Bitmap;
}

/// [`Dense::pack_keys`] over `n` values in blocks of up to 64, each widened into keys by
/// `fill` (a block's values copied as one loop the compiler vectorizes, not one bounds-checked
/// index at a time: that copy was a quarter of the probing in TPC-H Q17's scans).
#[inline(always)]
fn pack_keys_blocks(
    n: usize,
    mut fill: impl FnMut(usize, &mut [i64]),
    mut probe: impl FnMut(&[i64]) -> u64,
) -> Bitmap {
    let mut words = Vec::with_capacity(n.div_ceil(64));
    let mut keys = [0i64; 64];
    for start in (0..n).step_by(64) {
        let m = (n - start).min(64);
        fill(start, &mut keys[..m]);
        words.push(probe(&keys[..m]));
    }
    Bitmap::from_words(words, n)
}

impl<T: Copy> Dense for &[T] {
    type Item = T;
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
    #[inline]
    fn pack(&self, pred: impl FnMut(T) -> bool) -> Bitmap {
        Bitmap::from_words(pack::slice_with(false, self, pred), <[T]>::len(self))
    }
    #[inline]
    fn pack_cmp(&self, pred: impl FnMut(T) -> bool) -> Bitmap {
        Bitmap::from_words(pack::slice_with(pack::wide(), self, pred), <[T]>::len(self))
    }
    #[inline]
    fn pack_keys(&self, widen: impl Fn(T) -> i64, probe: impl FnMut(&[i64]) -> u64) -> Bitmap {
        let fill = |start: usize, keys: &mut [i64]| {
            let vals = &self[start..start + keys.len()];
            for (k, &v) in keys.iter_mut().zip(vals) {
                *k = widen(v);
            }
        };
        pack_keys_blocks(<[T]>::len(self), fill, probe)
    }
}

pub(crate) use crate::kernels::pack::{self, FromLe};

/// `n` PLAIN values of a fixed-width type at the start of a page, compared where they lie:
/// no decode buffer, one pass over the page bytes.
#[derive(Clone, Copy)]
pub(crate) struct LeBytes<'a, T> {
    bytes: &'a [u8],
    n: usize,
    _t: std::marker::PhantomData<T>,
}

impl<'a, T: FromLe> LeBytes<'a, T> {
    /// `None` if `bytes` is shorter than `n` values.
    pub(crate) fn new(bytes: &'a [u8], n: usize) -> Option<Self> {
        let needed = n.checked_mul(T::WIDTH)?;
        Some(LeBytes {
            bytes: bytes.get(..needed)?,
            n,
            _t: std::marker::PhantomData,
        })
    }
}

impl<T: FromLe> Dense for LeBytes<'_, T> {
    type Item = T;
    fn len(&self) -> usize {
        self.n
    }
    #[inline]
    fn pack(&self, pred: impl FnMut(T) -> bool) -> Bitmap {
        Bitmap::from_words(pack::le_with(false, self.bytes, self.n, pred), self.n)
    }
    #[inline]
    fn pack_cmp(&self, pred: impl FnMut(T) -> bool) -> Bitmap {
        Bitmap::from_words(
            pack::le_with(pack::wide(), self.bytes, self.n, pred),
            self.n,
        )
    }
    #[inline]
    fn pack_keys(&self, widen: impl Fn(T) -> i64, probe: impl FnMut(&[i64]) -> u64) -> Bitmap {
        let fill = |start: usize, keys: &mut [i64]| {
            let bytes = &self.bytes[start * T::WIDTH..(start + keys.len()) * T::WIDTH];
            for (k, b) in keys.iter_mut().zip(bytes.chunks_exact(T::WIDTH)) {
                *k = widen(T::from_le(b));
            }
        };
        pack_keys_blocks(self.n, fill, probe)
    }
}

/// Packs `len` results from an iterator 64 per word.
#[inline]
fn from_iter(len: usize, it: impl Iterator<Item = bool>) -> Bitmap {
    let mut words = Vec::with_capacity(len.div_ceil(64));
    let (mut w, mut bit) = (0u64, 0u32);
    for b in it {
        w |= (b as u64) << bit;
        bit += 1;
        if bit == 64 {
            words.push(w);
            (w, bit) = (0, 0);
        }
    }
    if bit > 0 {
        words.push(w);
    }
    Bitmap::from_words(words, len)
}

fn sorted<K: Ord + Copy>(mut list: Vec<K>) -> Vec<K> {
    list.sort_unstable();
    list.dedup();
    list
}

/// Totally ordered keys (integers, booleans).
fn ord_kernel<D: Dense, K: Ord + Copy>(
    vals: D,
    key: impl Fn(D::Item) -> K,
    op: &KeyOp<K>,
) -> Bitmap {
    match op {
        KeyOp::Cmp(c, lit) => {
            let lit = *lit;
            match c {
                CmpOp::Eq => vals.pack_cmp(|v| key(v) == lit),
                CmpOp::NotEq => vals.pack_cmp(|v| key(v) != lit),
                CmpOp::Lt => vals.pack_cmp(|v| key(v) < lit),
                CmpOp::LtEq => vals.pack_cmp(|v| key(v) <= lit),
                CmpOp::Gt => vals.pack_cmp(|v| key(v) > lit),
                CmpOp::GtEq => vals.pack_cmp(|v| key(v) >= lit),
            }
        }
        KeyOp::In(list, neg) => {
            let list = sorted(list.clone());
            let neg = *neg;
            if list.len() <= LINEAR_IN {
                vals.pack(|v| list.contains(&key(v)) != neg)
            } else {
                vals.pack(|v| list.binary_search(&key(v)).is_ok() != neg)
            }
        }
    }
}

/// Floats with [`cmp_f64`] semantics: NaN greatest and equal to itself, -0.0 == 0.0.
fn float_kernel<D: Dense>(vals: D, key: impl Fn(D::Item) -> f64, op: &KeyOp<f64>) -> Bitmap {
    match op {
        KeyOp::Cmp(c, lit) => {
            let lit = *lit;
            if lit.is_nan() {
                match c {
                    CmpOp::Eq | CmpOp::GtEq => vals.pack_cmp(|v| key(v).is_nan()),
                    CmpOp::NotEq | CmpOp::Lt => vals.pack_cmp(|v| !key(v).is_nan()),
                    CmpOp::LtEq => Bitmap::new_set(vals.len()),
                    CmpOp::Gt => Bitmap::new_zeroed(vals.len()),
                }
            } else {
                // IEEE comparisons already treat -0.0 == 0.0 and NaN as unordered; only NaN
                // being greatest needs care.
                match c {
                    CmpOp::Eq => vals.pack_cmp(|v| key(v) == lit),
                    CmpOp::NotEq => vals.pack_cmp(|v| key(v) != lit),
                    CmpOp::Lt => vals.pack_cmp(|v| key(v) < lit),
                    CmpOp::LtEq => vals.pack_cmp(|v| key(v) <= lit),
                    CmpOp::Gt => vals.pack_cmp(|v| {
                        let x = key(v);
                        x > lit || x.is_nan()
                    }),
                    CmpOp::GtEq => vals.pack_cmp(|v| {
                        let x = key(v);
                        x >= lit || x.is_nan()
                    }),
                }
            }
        }
        KeyOp::In(list, neg) => {
            let mut list = list.clone();
            list.sort_unstable_by(|a, b| cmp_f64(*a, *b));
            list.dedup_by(|a, b| cmp_f64(*a, *b) == Ordering::Equal);
            let neg = *neg;
            vals.pack(|v| {
                let x = key(v);
                list.binary_search_by(|p| cmp_f64(*p, x)).is_ok() != neg
            })
        }
    }
}

/// Variable-length values mapped to an ordered key (slices, decimals).
fn bytes_kernel<'a, K: Ord + Copy>(
    n: usize,
    vals: impl Iterator<Item = &'a [u8]>,
    key: impl Fn(&'a [u8]) -> K,
    op: &KeyOp<K>,
) -> Bitmap {
    let vals = vals.map(key);
    match op {
        KeyOp::Cmp(c, lit) => {
            let lit = *lit;
            match c {
                CmpOp::Eq => from_iter(n, vals.map(|k| k == lit)),
                CmpOp::NotEq => from_iter(n, vals.map(|k| k != lit)),
                CmpOp::Lt => from_iter(n, vals.map(|k| k < lit)),
                CmpOp::LtEq => from_iter(n, vals.map(|k| k <= lit)),
                CmpOp::Gt => from_iter(n, vals.map(|k| k > lit)),
                CmpOp::GtEq => from_iter(n, vals.map(|k| k >= lit)),
            }
        }
        KeyOp::In(list, neg) => {
            let list = sorted(list.clone());
            let neg = *neg;
            if list.len() <= LINEAR_IN {
                from_iter(n, vals.map(|k| list.contains(&k) != neg))
            } else {
                from_iter(n, vals.map(|k| list.binary_search(&k).is_ok() != neg))
            }
        }
    }
}

/// Whether a (non-null) value satisfies `op`: the slow reference for [`eval_dense`].
#[cfg(test)]
pub(crate) fn eval_scalar(op: &LeafOp, value: &Scalar) -> bool {
    match op {
        LeafOp::Cmp(c, lit) => value.compare(lit).is_some_and(|o| c.holds(o)),
        LeafOp::In { values, negated } => {
            values
                .iter()
                .any(|v| value.compare(v) == Some(Ordering::Equal))
                != *negated
        }
        LeafOp::IsNull { negated } => *negated,
        LeafOp::Like { pattern, negated } => match value {
            Scalar::Bytes(b) => pattern.matches(b) != *negated,
            _ => false,
        },
        LeafOp::InKeys(f) => match value {
            Scalar::Int(x) => f.may_contain_int(*x),
            Scalar::UInt(x) => f.may_contain_int(*x as i64),
            Scalar::Bytes(b) => f.may_contain_bytes(b),
            _ => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::tests::test_columns;
    use crate::expr::{to_scalar, LikePattern, PhysicalRef};
    use crate::values::ByteArrays;
    use proptest::prelude::*;

    fn col(name: &str) -> LeafColumn {
        test_columns().into_iter().find(|c| c.path == name).unwrap()
    }

    fn bits(b: &Bitmap) -> Vec<bool> {
        (0..b.len()).map(|i| b.get(i)).collect()
    }

    fn ops() -> [CmpOp; 6] {
        [
            CmpOp::Eq,
            CmpOp::NotEq,
            CmpOp::Lt,
            CmpOp::LtEq,
            CmpOp::Gt,
            CmpOp::GtEq,
        ]
    }

    fn physical(values: &Values, i: usize) -> PhysicalRef<'_> {
        match values {
            Values::Bool(v) => PhysicalRef::Bool(v[i]),
            Values::I32(v) => PhysicalRef::I32(v[i]),
            Values::I64(v) => PhysicalRef::I64(v[i]),
            Values::F32(v) => PhysicalRef::F32(v[i]),
            Values::F64(v) => PhysicalRef::F64(v[i]),
            Values::Bytes(b) => PhysicalRef::Bytes(b.get(i)),
            Values::I96(_) => unreachable!(),
        }
    }

    /// Checks every comparison with each literal, IN with the literal list (short and long),
    /// and IS [NOT] NULL against the reference.
    fn check_all(column: &LeafColumn, values: &Values, literals: &[Scalar]) {
        let scalars: Vec<Scalar> = (0..values.len())
            .map(|i| to_scalar(column, physical(values, i)).unwrap())
            .collect();
        let mut leaf_ops: Vec<LeafOp> = Vec::new();
        for lit in literals {
            for c in ops() {
                leaf_ops.push(LeafOp::Cmp(c, lit.clone()));
            }
        }
        for negated in [false, true] {
            leaf_ops.push(LeafOp::In {
                values: literals.iter().take(3).cloned().collect(),
                negated,
            });
            let mut long: Vec<Scalar> = literals.to_vec();
            long.extend(scalars.iter().step_by(3).cloned());
            leaf_ops.push(LeafOp::In {
                values: long,
                negated,
            });
            leaf_ops.push(LeafOp::IsNull { negated });
        }
        // Join-key filters over the literals and every fifth value (so both hits and misses).
        let keys: Vec<&Scalar> = literals.iter().chain(scalars.iter().step_by(5)).collect();
        match column.domain() {
            Domain::Int | Domain::UInt => {
                let ints: Vec<i64> = keys
                    .iter()
                    .filter_map(|s| match s {
                        Scalar::Int(x) => Some(*x),
                        Scalar::UInt(x) => Some(*x as i64),
                        _ => None,
                    })
                    .collect();
                let f = KeyFilter::from_ints(&ints, "test").without_adapting();
                leaf_ops.push(LeafOp::InKeys(std::sync::Arc::new(f)));
            }
            Domain::Bytes => {
                let bytes: Vec<&[u8]> = keys
                    .iter()
                    .filter_map(|s| match s {
                        Scalar::Bytes(b) => Some(b.as_slice()),
                        _ => None,
                    })
                    .collect();
                let f = KeyFilter::from_bytes(bytes.into_iter(), "test").without_adapting();
                leaf_ops.push(LeafOp::InKeys(std::sync::Arc::new(f)));
            }
            _ => {}
        }
        for op in &leaf_ops {
            let got = eval_dense(op, column, values).unwrap();
            assert_eq!(got.len(), values.len());
            let expect: Vec<bool> = scalars.iter().map(|s| eval_scalar(op, s)).collect();
            assert_eq!(bits(&got), expect, "{op:?} on {} {values:?}", column.path);
        }
    }

    fn interesting_f64() -> impl Strategy<Value = f64> {
        prop_oneof![
            Just(f64::NAN),
            Just(-f64::NAN),
            Just(0.0),
            Just(-0.0),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(1.5),
            Just(-1.5),
            Just(f64::MAX),
            Just(f64::MIN_POSITIVE),
            (-4i32..4).prop_map(|x| x as f64),
            any::<f64>(),
        ]
    }

    fn interesting_i64() -> impl Strategy<Value = i64> {
        prop_oneof![
            Just(i64::MIN),
            Just(i64::MAX),
            Just(i32::MIN as i64),
            Just(i32::MAX as i64),
            Just(u32::MAX as i64),
            Just(-1),
            Just(0),
            -3i64..3,
            any::<i64>(),
        ]
    }

    fn bytes_of(v: &[Vec<u8>]) -> ByteArrays {
        let mut b = ByteArrays::new();
        for x in v {
            b.push(x);
        }
        b
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn int32_matches_reference(v in proptest::collection::vec(interesting_i64(), 0..150),
                                   lits in proptest::collection::vec(interesting_i64(), 1..4)) {
            let vals = Values::I32(v.iter().map(|&x| x as i32).collect());
            let lits: Vec<Scalar> = lits.iter().map(|&x| Scalar::Int(x as i32 as i64)).collect();
            check_all(&col("i32"), &vals, &lits);
            let lits_u: Vec<Scalar> =
                lits.iter().map(|s| match s { Scalar::Int(x) => Scalar::UInt(*x as u32 as u64), _ => unreachable!() }).collect();
            check_all(&col("u32"), &vals, &lits_u);
        }

        #[test]
        fn int64_matches_reference(v in proptest::collection::vec(interesting_i64(), 0..150),
                                   lits in proptest::collection::vec(interesting_i64(), 1..4)) {
            let vals = Values::I64(v.clone());
            check_all(&col("i64"), &vals, &lits.iter().map(|&x| Scalar::Int(x)).collect::<Vec<_>>());
            check_all(&col("u64"), &vals, &lits.iter().map(|&x| Scalar::UInt(x as u64)).collect::<Vec<_>>());
        }

        #[test]
        fn floats_match_reference(v in proptest::collection::vec(interesting_f64(), 0..150),
                                  lits in proptest::collection::vec(interesting_f64(), 1..4)) {
            let lits: Vec<Scalar> = lits.iter().map(|&x| Scalar::Float(x)).collect();
            check_all(&col("f64"), &Values::F64(v.clone()), &lits);
            check_all(&col("f32"), &Values::F32(v.iter().map(|&x| x as f32).collect()), &lits);
            let halves: Vec<Vec<u8>> =
                v.iter().map(|&x| half::f16::from_f64(x).to_le_bytes().to_vec()).collect();
            check_all(&col("f16"), &Values::Bytes(bytes_of(&halves)), &lits);
        }

        #[test]
        fn bytes_match_reference(
            v in proptest::collection::vec(proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a'), Just(b'b'), Just(0xff)], 0..4), 0..150),
            lits in proptest::collection::vec(proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a'), Just(b'b'), Just(0xff)], 0..4), 1..4),
            pat in "[ab%_]{0,4}",
        ) {
            let vals = Values::Bytes(bytes_of(&v));
            let lits: Vec<Scalar> = lits.into_iter().map(Scalar::Bytes).collect();
            check_all(&col("b"), &vals, &lits);
            let pattern = LikePattern::new(&pat, None).unwrap();
            for negated in [false, true] {
                let op = LeafOp::Like { pattern: pattern.clone(), negated };
                let got = eval_dense(&op, &col("b"), &vals).unwrap();
                let expect: Vec<bool> = v.iter().map(|x| eval_scalar(&op, &Scalar::Bytes(x.clone()))).collect();
                prop_assert_eq!(bits(&got), expect);
            }
        }

        #[test]
        fn decimals_match_reference(v in proptest::collection::vec(any::<i64>(), 0..150),
                                    lits in proptest::collection::vec(any::<i64>(), 1..4),
                                    scale in 1i128..1000) {
            // 9-byte big-endian two's complement (the FLBA width of decimal(20,3)).
            let enc: Vec<Vec<u8>> = v.iter().map(|&x| ((x as i128) * scale).to_be_bytes()[7..].to_vec()).collect();
            let lits: Vec<Scalar> = lits.iter().map(|&x| Scalar::Decimal(x as i128 * scale)).collect();
            check_all(&col("d203"), &Values::Bytes(bytes_of(&enc)), &lits);
        }

        #[test]
        fn bools_match_reference(v in proptest::collection::vec(any::<bool>(), 0..150)) {
            check_all(&col("flag"), &Values::Bool(v), &[Scalar::Bool(true), Scalar::Bool(false)]);
        }
    }

    #[test]
    fn float_semantics() {
        let vals = Values::F64(vec![
            f64::NAN,
            -0.0,
            0.0,
            1.0,
            f64::NEG_INFINITY,
            f64::INFINITY,
        ]);
        let c = col("f64");
        let run = |op: LeafOp| bits(&eval_dense(&op, &c, &vals).unwrap());
        let (t, f) = (true, false);
        assert_eq!(
            run(LeafOp::Cmp(CmpOp::Eq, Scalar::Float(0.0))),
            [f, t, t, f, f, f]
        );
        assert_eq!(
            run(LeafOp::Cmp(CmpOp::Gt, Scalar::Float(1.0))),
            [t, f, f, f, f, t]
        );
        assert_eq!(
            run(LeafOp::Cmp(CmpOp::Eq, Scalar::Float(f64::NAN))),
            [t, f, f, f, f, f]
        );
        assert_eq!(
            run(LeafOp::Cmp(CmpOp::Lt, Scalar::Float(f64::NAN))),
            [f, t, t, t, t, t]
        );
        assert_eq!(
            run(LeafOp::Cmp(CmpOp::GtEq, Scalar::Float(f64::INFINITY))),
            [t, f, f, f, f, t]
        );
    }

    #[test]
    fn unsigned_and_word_boundaries() {
        // 130 values span three words; u32 reinterprets negative INT32 bit patterns.
        let v: Vec<i32> = (0..130).map(|i| if i % 2 == 0 { -1 } else { i }).collect();
        let got = eval_dense(
            &LeafOp::Cmp(CmpOp::Gt, Scalar::UInt(1000)),
            &col("u32"),
            &Values::I32(v.clone()),
        )
        .unwrap();
        assert_eq!(got.count_ones(), 65);
        assert!(got.get(128) && !got.get(129));
        let got = eval_dense(
            &LeafOp::Cmp(CmpOp::Gt, Scalar::Int(1000)),
            &col("i32"),
            &Values::I32(v),
        )
        .unwrap();
        assert_eq!(got.count_ones(), 0);
    }

    #[test]
    fn mismatches_are_internal_errors() {
        let e = eval_dense(
            &LeafOp::Cmp(CmpOp::Eq, Scalar::Float(1.0)),
            &col("i32"),
            &Values::I32(vec![1]),
        )
        .unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::Internal);
        let e = eval_dense(
            &LeafOp::Cmp(CmpOp::Eq, Scalar::Int(1)),
            &col("i32"),
            &Values::F64(vec![1.0]),
        )
        .unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::Internal);
        // IS NULL works on any values, even unfilterable ones.
        let b = eval_dense(
            &LeafOp::IsNull { negated: true },
            &col("i96"),
            &Values::I96(vec![[0; 3]; 3]),
        )
        .unwrap();
        assert_eq!(b.count_ones(), 3);
    }
}
