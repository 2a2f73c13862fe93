//! What a set of values is known to lie in (min / max / null count / NaN), and the verdict of one
//! leaf on such a set.
//!
//! The same [`Bounds`] describe a column chunk (from its footer statistics) and a page (from the
//! column index), so row-group and page pruning share [`leaf_verdict`].
//!
//! # Soundness rules
//!
//! * `min` / `max` are always treated as valid *bounds* (every non-null, non-NaN value lies in
//!   `[min, max]`), exact or not: writers truncate byte strings so that the truncated min is
//!   ≤ the real min and the truncated max (last byte incremented) ≥ the real max. Bounds alone
//!   prove `NoneMatch`.
//! * `AllMatch` additionally requires the bound(s) it relies on to be exact and
//!   `null_count == Some(0)` (unless the leaf accepts NULL).
//! * Floats: Parquet min/max exclude NaN and tamis orders NaN above everything, so when
//!   `may_have_nan` the values are `[min, max] ∪ {NaN}`: a leaf is `NoneMatch` only if it fails
//!   on the range *and* on NaN (`f > 5` with max 2 is kept), `AllMatch` only if it holds on
//!   both. A NaN min or max is treated as missing.
//!   `-0.0 == 0.0` (comparisons go through [`Scalar::compare`]).
//! * Inconsistent bounds (`min > max`) are ignored.

use std::cmp::Ordering;

use parquet::basic::{ColumnOrder, SortOrder, Type as PhysicalType};
use parquet::file::statistics::Statistics;

use crate::expr::{to_scalar, CmpOp, LeafOp, PhysicalRef, Scalar, Verdict};
use crate::schema::{Domain, LeafColumn, LogicalKind};

/// What is known about the values of a column over a set of rows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bounds {
    /// A lower bound of the non-null, non-NaN values.
    pub min: Option<Scalar>,
    /// An upper bound of the non-null, non-NaN values.
    pub max: Option<Scalar>,
    /// `min` is a value that occurs (not a truncated bound).
    pub min_exact: bool,
    /// `max` is a value that occurs (not a truncated bound).
    pub max_exact: bool,
    pub null_count: Option<u64>,
    /// Values including nulls (rows, for flat columns).
    pub num_values: Option<u64>,
    /// NaN may occur among the values (min/max never account for NaN).
    pub may_have_nan: bool,
}

impl Bounds {
    /// Bounds that know nothing.
    pub(crate) fn unknown() -> Bounds {
        Bounds {
            min: None,
            max: None,
            min_exact: false,
            max_exact: false,
            null_count: None,
            num_values: None,
            may_have_nan: true,
        }
    }
}

fn is_nan(s: &Scalar) -> bool {
    matches!(s, Scalar::Float(f) if f.is_nan())
}

/// The bounds, sanitised: values lie in `[lo, hi]`, plus NaN when `nan`.
struct Interval<'a> {
    lo: Option<(&'a Scalar, bool)>,
    hi: Option<(&'a Scalar, bool)>,
    nan: bool,
}

impl<'a> Interval<'a> {
    fn new(b: &'a Bounds) -> Interval<'a> {
        let mut lo = b
            .min
            .as_ref()
            .filter(|s| !is_nan(s))
            .map(|s| (s, b.min_exact));
        let mut hi = b
            .max
            .as_ref()
            .filter(|s| !is_nan(s))
            .map(|s| (s, b.max_exact));
        if let (Some((l, _)), Some((h, _))) = (lo, hi) {
            match l.compare(h) {
                Some(Ordering::Less | Ordering::Equal) => {}
                // Inconsistent or mixed-domain statistics: know nothing.
                _ => {
                    lo = None;
                    hi = None;
                }
            }
        }
        Interval {
            lo,
            hi,
            nan: b.may_have_nan,
        }
    }

    /// Verdict of `value op lit` over the non-null values.
    fn cmp(&self, op: CmpOp, lit: &Scalar) -> Verdict {
        let base = self.cmp_range(op, lit);
        if !(self.nan && matches!(lit, Scalar::Float(_))) {
            return base;
        }
        // A NaN may be among the values: it decides its own way (NaN is the greatest value).
        let nan_holds = NAN.compare(lit).is_some_and(|o| op.holds(o));
        match (base, nan_holds) {
            (Verdict::NoneMatch, false) => Verdict::NoneMatch,
            (Verdict::AllMatch, true) => Verdict::AllMatch,
            _ => Verdict::Unknown,
        }
    }

    /// Verdict of `value op lit` over the values in `[lo, hi]`.
    fn cmp_range(&self, op: CmpOp, lit: &Scalar) -> Verdict {
        use Ordering::*;
        let side =
            |b: Option<(&Scalar, bool)>| b.and_then(|(s, exact)| Some((s.compare(lit)?, exact)));
        let (lo, hi) = (side(self.lo), side(self.hi));
        let none =
            |c: Option<(Ordering, bool)>, f: fn(Ordering) -> bool| c.is_some_and(|(o, _)| f(o));
        let all = |c: Option<(Ordering, bool)>, f: fn(Ordering) -> bool| {
            c.is_some_and(|(o, exact)| exact && f(o))
        };
        let (none_match, all_match) = match op {
            CmpOp::Eq => (
                none(lo, |o| o == Greater) || none(hi, |o| o == Less),
                all(lo, |o| o == Equal) && all(hi, |o| o == Equal),
            ),
            CmpOp::NotEq => (
                all(lo, |o| o == Equal) && all(hi, |o| o == Equal),
                all(lo, |o| o == Greater) || all(hi, |o| o == Less),
            ),
            CmpOp::Lt => (none(lo, |o| o != Less), all(hi, |o| o == Less)),
            CmpOp::LtEq => (none(lo, |o| o == Greater), all(hi, |o| o != Greater)),
            CmpOp::Gt => (none(hi, |o| o != Greater), all(lo, |o| o == Greater)),
            CmpOp::GtEq => (none(hi, |o| o == Less), all(lo, |o| o != Less)),
        };
        if none_match {
            Verdict::NoneMatch
        } else if all_match {
            Verdict::AllMatch
        } else {
            Verdict::Unknown
        }
    }
}

const NAN: Scalar = Scalar::Float(f64::NAN);

/// The smallest byte string greater than every string starting with `prefix`, if any: `prefix`
/// without its trailing `0xFF` bytes, last byte incremented. `None` if `prefix` is all `0xFF`
/// (or empty).
pub(crate) fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut out = prefix[..=keep].to_vec();
    out[keep] += 1;
    Some(out)
}

/// The verdict of one leaf over a set of values described by `b`.
pub(crate) fn leaf_verdict(op: &LeafOp, b: &Bounds) -> Verdict {
    let all_null = match (b.null_count, b.num_values) {
        (Some(n), Some(v)) => n == v,
        _ => false,
    };
    let no_nulls = b.null_count == Some(0);
    if let LeafOp::IsNull { negated } = op {
        let (none, all) = if *negated {
            (all_null, no_nulls)
        } else {
            (no_nulls, all_null)
        };
        return if none {
            Verdict::NoneMatch
        } else if all {
            Verdict::AllMatch
        } else {
            Verdict::Unknown
        };
    }
    // Every other leaf is false on NULL.
    if all_null {
        return Verdict::NoneMatch;
    }
    let range = Interval::new(b);
    let v = match op {
        LeafOp::IsNull { .. } => unreachable!("handled above"),
        // Bounds of a Bloom filter's keys are not kept: a join's own min/max conjuncts prune.
        LeafOp::InKeys(_) => Verdict::Unknown,
        LeafOp::Cmp(cmp, lit) => range.cmp(*cmp, lit),
        // IN ≡ OR of equalities; NOT IN ≡ AND of inequalities.
        LeafOp::In {
            values,
            negated: false,
        } => values.iter().fold(Verdict::NoneMatch, |acc, lit| {
            acc.or(range.cmp(CmpOp::Eq, lit))
        }),
        LeafOp::In {
            values,
            negated: true,
        } => values.iter().fold(Verdict::AllMatch, |acc, lit| {
            acc.and(range.cmp(CmpOp::NotEq, lit))
        }),
        LeafOp::Like { pattern, negated } => {
            let prefix = pattern.prefix();
            if pattern.is_exact() {
                // No wildcard: LIKE is equality, NOT LIKE inequality.
                let op = if *negated { CmpOp::NotEq } else { CmpOp::Eq };
                range.cmp(op, &Scalar::Bytes(prefix.to_vec()))
            } else if *negated || prefix.is_empty() {
                Verdict::Unknown
            } else {
                // Matches lie in [prefix, successor(prefix)).
                let p = Scalar::Bytes(prefix.to_vec());
                let below = range.cmp(CmpOp::GtEq, &p) == Verdict::NoneMatch;
                let above = prefix_successor(prefix)
                    .is_some_and(|s| range.cmp(CmpOp::Lt, &Scalar::Bytes(s)) == Verdict::NoneMatch);
                if below || above {
                    Verdict::NoneMatch
                } else {
                    Verdict::Unknown
                }
            }
        }
    };
    match v {
        Verdict::AllMatch if !no_nulls => Verdict::Unknown,
        v => v,
    }
}

/// Whether min/max written under `order` (the file's column order, `None` if the caller does not
/// know it) can be compared in tamis' domain of `column`. `deprecated` says the statistics came
/// from the pre-2.4 `min` / `max` fields, which old writers filled with a *signed* comparison.
pub(crate) fn min_max_trusted(
    column: &LeafColumn,
    order: Option<ColumnOrder>,
    deprecated: bool,
) -> bool {
    let domain = column.domain();
    let float16 = column.logical == LogicalKind::Float16;
    // Types whose signed (legacy) order is the tamis order.
    let signed_safe =
        matches!(domain, Domain::Int | Domain::Bool) || (domain == Domain::Float && !float16);
    if matches!(domain, Domain::None) {
        return false;
    }
    if deprecated {
        return signed_safe;
    }
    let type_order = column.descr.sort_order();
    match order {
        // Caller does not know the footer's column order: `min_value` / `max_value` are defined
        // to follow the type-defined order (PARQUET-686).
        None => type_order != SortOrder::UNDEFINED,
        Some(ColumnOrder::UNKNOWN) => false,
        // Legacy file without column orders: everything was compared signed.
        Some(ColumnOrder::UNDEFINED) => signed_safe,
        Some(ColumnOrder::TYPE_DEFINED_ORDER(so)) => match domain {
            Domain::Bytes => so == SortOrder::UNSIGNED,
            Domain::UInt => so == SortOrder::UNSIGNED,
            Domain::Decimal => so == SortOrder::SIGNED,
            Domain::Float if float16 => matches!(so, SortOrder::SIGNED | SortOrder::TOTAL_ORDER),
            _ => so != SortOrder::UNDEFINED,
        },
        Some(ColumnOrder::IEEE_754_TOTAL_ORDER) => domain == Domain::Float,
        Some(ColumnOrder::INT96_TIMESTAMP_ORDER) => false,
    }
}

/// Converts one physical min/max into the column's domain; `None` when it cannot serve as a bound
/// (NaN, a fixed-width value of the wrong width, an unfilterable type).
pub(crate) fn bound_scalar(column: &LeafColumn, v: PhysicalRef<'_>) -> Option<Scalar> {
    if let PhysicalRef::Bytes(b) = v {
        // A numeric value stored in bytes (decimal, Float16) is meaningless once truncated.
        let numeric = matches!(column.domain(), Domain::Decimal | Domain::Float);
        if numeric
            && column.physical == PhysicalType::FIXED_LEN_BYTE_ARRAY
            && b.len() != column.type_length
        {
            return None;
        }
    }
    to_scalar(column, v).filter(|s| !is_nan(s))
}

/// Bounds of a column chunk from its footer statistics, inferring trust from the statistics
/// alone (see [`stats_bounds_with_order`]).
#[cfg(test)]
pub(crate) fn stats_bounds(column: &LeafColumn, stats: &Statistics, num_values: u64) -> Bounds {
    stats_bounds_with_order(column, stats, num_values, None)
}

/// Bounds of a column chunk from its footer statistics; `order` is the file's column order for
/// this column (`FileMetaData::column_order`), `None` if unknown.
///
/// Min/max are dropped (null count kept) unless [`min_max_trusted`]; for byte strings their
/// exactness comes from the statistics (`is_*_value_exact`, absent = inexact); fixed-width values
/// cannot be truncated and are exact. NaN may occur in a float column unless the statistics carry
/// `nan_count == 0`.
pub(crate) fn stats_bounds_with_order(
    column: &LeafColumn,
    stats: &Statistics,
    num_values: u64,
    order: Option<ColumnOrder>,
) -> Bounds {
    let domain = column.domain();
    let mut b = Bounds {
        min: None,
        max: None,
        min_exact: false,
        max_exact: false,
        null_count: stats.null_count_opt(),
        num_values: Some(num_values),
        may_have_nan: domain == Domain::Float && stats.nan_count_opt() != Some(0),
    };
    if stats.physical_type() != column.physical
        || !min_max_trusted(column, order, stats.is_min_max_deprecated())
    {
        return b;
    }
    let (min, max) = match stats {
        Statistics::Boolean(s) => (
            s.min_opt().map(|v| PhysicalRef::Bool(*v)),
            s.max_opt().map(|v| PhysicalRef::Bool(*v)),
        ),
        Statistics::Int32(s) => (
            s.min_opt().map(|v| PhysicalRef::I32(*v)),
            s.max_opt().map(|v| PhysicalRef::I32(*v)),
        ),
        Statistics::Int64(s) => (
            s.min_opt().map(|v| PhysicalRef::I64(*v)),
            s.max_opt().map(|v| PhysicalRef::I64(*v)),
        ),
        Statistics::Float(s) => (
            s.min_opt().map(|v| PhysicalRef::F32(*v)),
            s.max_opt().map(|v| PhysicalRef::F32(*v)),
        ),
        Statistics::Double(s) => (
            s.min_opt().map(|v| PhysicalRef::F64(*v)),
            s.max_opt().map(|v| PhysicalRef::F64(*v)),
        ),
        Statistics::ByteArray(s) => (
            s.min_opt().map(|v| PhysicalRef::Bytes(v.data())),
            s.max_opt().map(|v| PhysicalRef::Bytes(v.data())),
        ),
        Statistics::FixedLenByteArray(s) => (
            s.min_opt().map(|v| PhysicalRef::Bytes(v.data())),
            s.max_opt().map(|v| PhysicalRef::Bytes(v.data())),
        ),
        Statistics::Int96(_) => return b,
    };
    b.min = min.and_then(|v| bound_scalar(column, v));
    b.max = max.and_then(|v| bound_scalar(column, v));
    let truncatable = domain == Domain::Bytes;
    b.min_exact = b.min.is_some() && (!truncatable || stats.min_is_exact());
    b.max_exact = b.max.is_some() && (!truncatable || stats.max_is_exact());
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::LikePattern;
    use Verdict::*;

    fn ints(min: i64, max: i64) -> Bounds {
        Bounds {
            min: Some(Scalar::Int(min)),
            max: Some(Scalar::Int(max)),
            min_exact: true,
            max_exact: true,
            null_count: Some(0),
            num_values: Some(100),
            may_have_nan: false,
        }
    }
    fn floats(min: f64, max: f64, nan: bool) -> Bounds {
        Bounds {
            min: Some(Scalar::Float(min)),
            max: Some(Scalar::Float(max)),
            may_have_nan: nan,
            ..ints(0, 0)
        }
    }
    fn bytes(min: &[u8], max: &[u8], exact: bool) -> Bounds {
        Bounds {
            min: Some(Scalar::Bytes(min.to_vec())),
            max: Some(Scalar::Bytes(max.to_vec())),
            min_exact: exact,
            max_exact: exact,
            ..ints(0, 0)
        }
    }
    fn cmp(op: CmpOp, v: Scalar) -> LeafOp {
        LeafOp::Cmp(op, v)
    }
    fn i(op: CmpOp, v: i64) -> LeafOp {
        cmp(op, Scalar::Int(v))
    }
    fn f(op: CmpOp, v: f64) -> LeafOp {
        cmp(op, Scalar::Float(v))
    }
    fn like(p: &str, negated: bool) -> LeafOp {
        LeafOp::Like {
            pattern: LikePattern::new(p, None).unwrap(),
            negated,
        }
    }
    fn in_list(v: &[i64], negated: bool) -> LeafOp {
        LeafOp::In {
            values: v.iter().map(|&x| Scalar::Int(x)).collect(),
            negated,
        }
    }

    #[test]
    fn comparisons_exact() {
        use CmpOp::*;
        let b = ints(10, 20);
        let cases = [
            (Eq, 5, NoneMatch),
            (Eq, 25, NoneMatch),
            (Eq, 15, Unknown),
            (Eq, 10, Unknown),
            (NotEq, 5, AllMatch),
            (NotEq, 15, Unknown),
            (Lt, 10, NoneMatch),
            (Lt, 11, Unknown),
            (Lt, 21, AllMatch),
            (Lt, 20, Unknown),
            (LtEq, 9, NoneMatch),
            (LtEq, 10, Unknown),
            (LtEq, 20, AllMatch),
            (Gt, 20, NoneMatch),
            (Gt, 19, Unknown),
            (Gt, 9, AllMatch),
            (Gt, 10, Unknown),
            (GtEq, 21, NoneMatch),
            (GtEq, 20, Unknown),
            (GtEq, 10, AllMatch),
        ];
        for (op, v, want) in cases {
            assert_eq!(leaf_verdict(&i(op, v), &b), want, "{op:?} {v}");
        }
        let single = ints(7, 7);
        assert_eq!(leaf_verdict(&i(Eq, 7), &single), AllMatch);
        assert_eq!(leaf_verdict(&i(NotEq, 7), &single), NoneMatch);
        assert_eq!(leaf_verdict(&i(NotEq, 8), &single), AllMatch);
    }

    #[test]
    fn nulls_block_all_match_and_all_null_prunes() {
        let mut b = ints(10, 20);
        b.null_count = Some(3);
        assert_eq!(leaf_verdict(&i(CmpOp::Gt, 0), &b), Unknown);
        assert_eq!(leaf_verdict(&i(CmpOp::Gt, 30), &b), NoneMatch);
        b.null_count = None;
        assert_eq!(leaf_verdict(&i(CmpOp::Gt, 0), &b), Unknown);
        assert_eq!(
            leaf_verdict(&LeafOp::IsNull { negated: false }, &b),
            Unknown
        );
        assert_eq!(leaf_verdict(&LeafOp::IsNull { negated: true }, &b), Unknown);

        let zero = ints(10, 20);
        assert_eq!(
            leaf_verdict(&LeafOp::IsNull { negated: false }, &zero),
            NoneMatch
        );
        assert_eq!(
            leaf_verdict(&LeafOp::IsNull { negated: true }, &zero),
            AllMatch
        );

        let all_null = Bounds {
            null_count: Some(100),
            num_values: Some(100),
            ..Bounds::unknown()
        };
        assert_eq!(
            leaf_verdict(&LeafOp::IsNull { negated: false }, &all_null),
            AllMatch
        );
        assert_eq!(
            leaf_verdict(&LeafOp::IsNull { negated: true }, &all_null),
            NoneMatch
        );
        for op in [
            i(CmpOp::Eq, 1),
            i(CmpOp::NotEq, 1),
            i(CmpOp::Lt, 1),
            in_list(&[1], false),
            in_list(&[1], true),
            like("a%", false),
            like("a%", true),
            like("%a", true),
        ] {
            assert_eq!(leaf_verdict(&op, &all_null), NoneMatch, "{op:?}");
        }
        // Nothing known: nothing proven.
        assert_eq!(leaf_verdict(&i(CmpOp::Eq, 1), &Bounds::unknown()), Unknown);
        assert_eq!(
            leaf_verdict(&LeafOp::IsNull { negated: false }, &Bounds::unknown()),
            Unknown
        );
    }

    #[test]
    fn inconsistent_or_mismatched_bounds_are_ignored() {
        let b = ints(20, 10);
        assert_eq!(leaf_verdict(&i(CmpOp::Eq, 15), &b), Unknown);
        assert_eq!(leaf_verdict(&i(CmpOp::Gt, 100), &b), Unknown);
        let b = ints(10, 20);
        assert_eq!(
            leaf_verdict(&cmp(CmpOp::Eq, Scalar::UInt(100)), &b),
            Unknown
        );
    }

    #[test]
    fn nan_is_greatest_and_keeps_rows() {
        use CmpOp::*;
        // Stats over [1.0, NaN, 2.0]: min 1, max 2, NaN possible.
        let b = floats(1.0, 2.0, true);
        assert_eq!(leaf_verdict(&f(Gt, 5.0), &b), Unknown, "NaN > 5 holds");
        assert_eq!(leaf_verdict(&f(NotEq, 5.0), &b), AllMatch, "NaN <> 5 holds");
        assert_eq!(leaf_verdict(&f(NotEq, 1.5), &b), Unknown);
        assert_eq!(
            leaf_verdict(&cmp(LtEq, Scalar::Float(f64::NAN)), &b),
            AllMatch
        );
        assert_eq!(leaf_verdict(&f(GtEq, 5.0), &b), Unknown);
        assert_eq!(leaf_verdict(&f(Eq, 5.0), &b), NoneMatch);
        assert_eq!(leaf_verdict(&f(Eq, f64::NAN), &b), Unknown);
        assert_eq!(leaf_verdict(&f(Lt, 5.0), &b), Unknown, "NaN < 5 is false");
        assert_eq!(leaf_verdict(&f(Lt, 1.0), &b), NoneMatch);
        assert_eq!(leaf_verdict(&f(GtEq, 0.0), &b), AllMatch, "NaN >= 0 holds");
        // Without NaN the max prunes.
        let b = floats(1.0, 2.0, false);
        assert_eq!(leaf_verdict(&f(Gt, 5.0), &b), NoneMatch);
        assert_eq!(leaf_verdict(&f(Lt, 5.0), &b), AllMatch);
        assert_eq!(leaf_verdict(&f(Eq, f64::NAN), &b), NoneMatch);
        assert_eq!(leaf_verdict(&f(Lt, f64::NAN), &b), AllMatch);
        assert_eq!(leaf_verdict(&f(Gt, f64::NAN), &b), NoneMatch);
        // A NaN bound is missing.
        let b = floats(f64::NAN, f64::NAN, true);
        assert_eq!(leaf_verdict(&f(Gt, 5.0), &b), Unknown);
        assert_eq!(leaf_verdict(&f(Lt, 5.0), &b), Unknown);
        let b = floats(1.0, f64::NAN, false);
        assert_eq!(leaf_verdict(&f(Gt, 5.0), &b), Unknown);
        assert_eq!(leaf_verdict(&f(Lt, 0.0), &b), NoneMatch);
        let b = floats(f64::NAN, 2.0, false);
        assert_eq!(leaf_verdict(&f(Lt, 0.0), &b), Unknown);
        assert_eq!(leaf_verdict(&f(Gt, 5.0), &b), NoneMatch);
    }

    #[test]
    fn signed_zeros_are_equal() {
        use CmpOp::*;
        let b = floats(-0.0, -0.0, false);
        assert_eq!(leaf_verdict(&f(Eq, 0.0), &b), AllMatch);
        assert_eq!(leaf_verdict(&f(Gt, 0.0), &b), NoneMatch);
        assert_eq!(leaf_verdict(&f(GtEq, 0.0), &b), AllMatch);
        let b = floats(0.0, 0.0, false);
        assert_eq!(leaf_verdict(&f(Eq, -0.0), &b), AllMatch);
        assert_eq!(leaf_verdict(&f(Lt, -0.0), &b), NoneMatch);
        let b = floats(-1.0, -0.0, false);
        assert_eq!(
            leaf_verdict(&f(Eq, 0.0), &b),
            Unknown,
            "a +0.0 may hide behind max -0.0"
        );
        assert_eq!(leaf_verdict(&f(Gt, 0.0), &b), NoneMatch);
    }

    #[test]
    fn truncated_bounds_prune_but_never_all_match() {
        use CmpOp::*;
        let s = |v: &str| Scalar::Bytes(v.as_bytes().to_vec());
        // Truncated min "ab" (≤ real min), max "ad" (≥ real max).
        let b = bytes(b"ab", b"ad", false);
        assert_eq!(leaf_verdict(&cmp(Eq, s("aa")), &b), NoneMatch);
        assert_eq!(leaf_verdict(&cmp(Eq, s("ae")), &b), NoneMatch);
        assert_eq!(leaf_verdict(&cmp(Eq, s("abc")), &b), Unknown);
        assert_eq!(leaf_verdict(&cmp(Lt, s("ab")), &b), NoneMatch);
        assert_eq!(
            leaf_verdict(&cmp(Lt, s("b")), &b),
            Unknown,
            "inexact max: no AllMatch"
        );
        assert_eq!(
            leaf_verdict(&cmp(Gt, s("a")), &b),
            Unknown,
            "inexact min: no AllMatch"
        );
        assert_eq!(leaf_verdict(&cmp(NotEq, s("z")), &b), Unknown);
        let same = bytes(b"ab", b"ab", false);
        assert_eq!(
            leaf_verdict(&cmp(NotEq, s("ab")), &same),
            Unknown,
            "inexact: no NoneMatch"
        );
        assert_eq!(leaf_verdict(&cmp(Eq, s("ab")), &same), Unknown);
        let exact = bytes(b"ab", b"ad", true);
        assert_eq!(leaf_verdict(&cmp(Lt, s("b")), &exact), AllMatch);
        assert_eq!(leaf_verdict(&cmp(Gt, s("a")), &exact), AllMatch);
        let same = bytes(b"ab", b"ab", true);
        assert_eq!(leaf_verdict(&cmp(NotEq, s("ab")), &same), NoneMatch);
        assert_eq!(leaf_verdict(&cmp(Eq, s("ab")), &same), AllMatch);
    }

    #[test]
    fn like_prefix() {
        let b = bytes(b"m", b"p", false);
        assert_eq!(leaf_verdict(&like("a%", false), &b), NoneMatch);
        assert_eq!(leaf_verdict(&like("z%", false), &b), NoneMatch);
        assert_eq!(leaf_verdict(&like("n%", false), &b), Unknown);
        assert_eq!(
            leaf_verdict(&like("p%", false), &b),
            Unknown,
            "max p matches p%"
        );
        assert_eq!(
            leaf_verdict(&like("pa%", false), &b),
            NoneMatch,
            "pa > p = max"
        );
        assert_eq!(leaf_verdict(&like("l%", false), &b), NoneMatch);
        assert_eq!(leaf_verdict(&like("m%", false), &b), Unknown);
        assert_eq!(leaf_verdict(&like("%x", false), &b), Unknown, "no prefix");
        assert_eq!(
            leaf_verdict(&like("a%", true), &b),
            Unknown,
            "NOT LIKE never prunes"
        );
        assert_eq!(leaf_verdict(&like("n_", false), &b), Unknown);
        // Exact patterns are equalities.
        assert_eq!(leaf_verdict(&like("a", false), &b), NoneMatch);
        let one = bytes(b"abc", b"abc", true);
        assert_eq!(leaf_verdict(&like("abc", false), &one), AllMatch);
        assert_eq!(leaf_verdict(&like("abc", true), &one), NoneMatch);

        // 0xFF bytes (binary values): "a\xff…" lies in ["a\xff", "b").
        let ff = |min: &[u8], max: &[u8]| bytes(min, max, false);
        assert_eq!(prefix_successor(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"\xff\xff"), None);
        assert_eq!(prefix_successor(b""), None);
        // Prefix "z\u{10FFFF}" is 7a f4 8f bf bf: successor 7a f4 8f bf c0.
        let p = LeafOp::Like {
            pattern: LikePattern::new("z\u{10FFFF}%", None).unwrap(),
            negated: false,
        };
        assert_eq!(
            leaf_verdict(&p, &ff(b"z\xf4\x8f\xbf\xc0", b"z\xff")),
            NoneMatch
        );
        assert_eq!(
            leaf_verdict(&p, &ff(b"z\xf4\x8f\xbf\xbf", b"z\xff")),
            Unknown
        );
        assert_eq!(leaf_verdict(&p, &ff(b"a", b"z\xf4\x8f\xbf\xbe")), NoneMatch);
        assert_eq!(leaf_verdict(&p, &ff(b"a", b"z\xf4\x8f\xbf\xbf")), Unknown);
    }

    #[test]
    fn in_and_not_in() {
        let b = ints(10, 20);
        assert_eq!(leaf_verdict(&in_list(&[1, 5, 25], false), &b), NoneMatch);
        assert_eq!(leaf_verdict(&in_list(&[1, 15], false), &b), Unknown);
        assert_eq!(leaf_verdict(&in_list(&[], false), &b), NoneMatch);
        assert_eq!(leaf_verdict(&in_list(&[1, 15], true), &b), Unknown);
        assert_eq!(leaf_verdict(&in_list(&[10, 20], true), &b), Unknown);
        let single = ints(7, 7);
        assert_eq!(leaf_verdict(&in_list(&[3, 7], false), &single), AllMatch);
        assert_eq!(leaf_verdict(&in_list(&[3, 7], true), &single), NoneMatch);
        let mut nulls = single.clone();
        nulls.null_count = Some(1);
        assert_eq!(leaf_verdict(&in_list(&[3, 7], false), &nulls), Unknown);
    }

    #[test]
    fn booleans() {
        let b = |min, max| Bounds {
            min: Some(Scalar::Bool(min)),
            max: Some(Scalar::Bool(max)),
            ..ints(0, 0)
        };
        let eq = |v| cmp(CmpOp::Eq, Scalar::Bool(v));
        assert_eq!(leaf_verdict(&eq(true), &b(false, false)), NoneMatch);
        assert_eq!(leaf_verdict(&eq(false), &b(false, false)), AllMatch);
        assert_eq!(leaf_verdict(&eq(true), &b(false, true)), Unknown);
        assert_eq!(
            leaf_verdict(&cmp(CmpOp::NotEq, Scalar::Bool(true)), &b(true, true)),
            NoneMatch
        );
    }
}
