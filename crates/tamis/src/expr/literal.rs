//! Literals in a column's domain: SQL literal text (numbers, timestamps with offsets, times,
//! special floats) read exactly, and a comparison `column op literal` converted onto the
//! column's integer grid — the operator adjusted when the literal is not exactly representable,
//! and folded when it lies outside the column's range.

use chrono::{NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use parquet::basic::Type as PhysicalType;

use super::bind::type_name;
use super::compare::Number;
use super::tree::{Expr, Literal as Lit};
use super::{CmpOp, Scalar};
use crate::error::{Error, Result};
use crate::schema::{Domain, LeafColumn, LogicalKind, Unit};

/// Outcome of converting a literal for one comparison.
pub(super) enum Bound {
    Leaf(CmpOp, Scalar),
    /// Every non-null value satisfies it.
    AllNonNull,
    /// No value satisfies it.
    Nothing,
}

/// An integer-grid value: `floor` of the literal on the column's grid and whether it is exact;
/// `Below` / `Above` when the literal is beyond any i128.
pub(super) enum Grid {
    At { floor: i128, exact: bool },
    Below,
    Above,
}

pub(crate) fn parse_f64(t: &str) -> Option<f64> {
    let l = t.trim().to_ascii_lowercase();
    match l.as_str() {
        "nan" | "+nan" | "-nan" => Some(f64::NAN),
        "inf" | "+inf" | "infinity" | "+infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        _ => l.parse::<f64>().ok().filter(|_| parse_number(&l).is_some()),
    }
}

/// `YYYY-MM-DD[( |T)HH:MM[:SS[.fff…]]][Z|UTC|±HH[:MM]]`: the naive value and UTC offset (s).
pub(crate) fn parse_timestamp(t: &str) -> Option<(NaiveDateTime, Option<i32>)> {
    let t = t.trim();
    let (body, offset) = split_offset(t)?;
    let body = body.trim();
    if let Ok(d) = NaiveDate::parse_from_str(body, "%Y-%m-%d") {
        return Some((d.and_hms_opt(0, 0, 0)?, offset));
    }
    for f in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(ts) = NaiveDateTime::parse_from_str(body, f) {
            return Some((ts, offset));
        }
    }
    None
}

/// A timestamp's microseconds since the epoch as a column of this kind holds it: on a UTC
/// column (`zoned`) a value without an offset is UTC; a wall-clock column takes no offset
/// (`None`: no instant to compare).
pub(crate) fn instant_micros(at: &NaiveDateTime, offset: Option<i32>, zoned: bool) -> Option<i64> {
    let utc = at.and_utc().timestamp_micros();
    match (zoned, offset) {
        (_, None) => Some(utc),
        (true, Some(seconds)) => utc.checked_sub(i64::from(seconds).checked_mul(1_000_000)?),
        (false, Some(_)) => None,
    }
}

/// Splits a trailing time zone (`Z`, `UTC`, `+02`, `+0200`, `-02:30`) off a timestamp.
fn split_offset(t: &str) -> Option<(&str, Option<i32>)> {
    if let Some(b) = t.strip_suffix('Z').or_else(|| t.strip_suffix('z')) {
        return Some((b, Some(0)));
    }
    if t.len() > 3 && t[t.len() - 3..].eq_ignore_ascii_case("UTC") {
        return Some((&t[..t.len() - 3], Some(0)));
    }
    // A sign after the date part (position 10) starts an offset.
    let pos = t
        .char_indices()
        .skip(10)
        .filter(|(_, c)| *c == '+' || *c == '-')
        .last();
    let Some((i, sign)) = pos else {
        return Some((t, None));
    };
    let digits: String = t[i + 1..].chars().filter(|c| *c != ':').collect();
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (h, m) = match digits.len() {
        1 | 2 => (digits.parse::<i32>().ok()?, 0),
        4 => (
            digits[..2].parse::<i32>().ok()?,
            digits[2..].parse::<i32>().ok()?,
        ),
        _ => return None,
    };
    if h > 18 || m > 59 {
        return None;
    }
    let secs = (h * 3600 + m * 60) * if sign == '-' { -1 } else { 1 };
    Some((&t[..i], Some(secs)))
}

pub(crate) fn parse_time(t: &str) -> Option<NaiveTime> {
    ["%H:%M:%S%.f", "%H:%M"]
        .iter()
        .find_map(|f| NaiveTime::parse_from_str(t.trim(), f).ok())
}

/// An exact decimal number: `mantissa * 10^exp`, or `None` if `t` is not a plain number.
pub(crate) fn parse_number(t: &str) -> Option<(bool, Vec<u8>, i64)> {
    let t = t.trim();
    let (neg, rest) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let (mant, exp) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
        None => (rest, 0),
    };
    let (int, frac) = match mant.find('.') {
        Some(i) => (&mant[..i], &mant[i + 1..]),
        None => (mant, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
    Some((neg, digits, exp.checked_sub(frac.len() as i64)?))
}

/// A number literal as an exact scaled integer (at most 38 digits and scale 38).
pub(super) fn exact_number(text: &str) -> Result<Number> {
    let too_big = || {
        Error::unsupported(format!(
            "number {text} in arithmetic has more than 38 digits or decimal places"
        ))
    };
    let (neg, mut digits, mut exp) =
        parse_number(text).ok_or_else(|| Error::invalid(format!("`{text}` is not a number")))?;
    let lead = digits.iter().take_while(|&&d| d == 0).count();
    digits.drain(..lead);
    // Trailing zeros of a fraction are kept (1.50 has scale 2, as in SQL); of an integer they
    // are folded into a positive exponent below.
    let mut unscaled: i128 = 0;
    for &d in &digits {
        unscaled = unscaled
            .checked_mul(10)
            .and_then(|v| v.checked_add(d as i128))
            .ok_or_else(too_big)?;
    }
    while exp > 0 {
        unscaled = unscaled.checked_mul(10).ok_or_else(too_big)?;
        exp -= 1;
    }
    let scale = u8::try_from(-exp)
        .ok()
        .filter(|&s| s <= 38)
        .ok_or_else(too_big)?;
    Ok(Number::Exact {
        unscaled: if neg { -unscaled } else { unscaled },
        scale,
    })
}

/// The literal number on the integer grid of `scale` decimal places: floor and exactness.
fn number_grid(text: &str, scale: i64) -> Option<Grid> {
    let (neg, mut digits, exp) = parse_number(text)?;
    // Drop leading zeros; fold trailing zeros into the exponent.
    let lead = digits.iter().take_while(|&&d| d == 0).count();
    digits.drain(..lead);
    let mut exp = exp + scale;
    while digits.last() == Some(&0) {
        digits.pop();
        exp += 1;
    }
    if digits.is_empty() {
        return Some(Grid::At {
            floor: 0,
            exact: true,
        });
    }
    let beyond = if neg { Grid::Below } else { Grid::Above };
    // Integer part (digits shifted by exp) and whether a fraction remains.
    let (int_digits, frac_nonzero): (&[u8], bool) = if exp >= 0 {
        (&digits, false)
    } else {
        let cut = digits.len() as i64 + exp;
        if cut <= 0 {
            (&[], true)
        } else {
            (&digits[..cut as usize], true)
        }
    };
    let mut v: i128 = 0;
    for &d in int_digits {
        v = match v.checked_mul(10).and_then(|x| x.checked_add(d as i128)) {
            Some(x) => x,
            None => return Some(beyond),
        };
    }
    if exp > 0 {
        for _ in 0..exp {
            v = match v.checked_mul(10) {
                Some(x) => x,
                None => return Some(beyond),
            };
        }
    }
    Some(if neg {
        if frac_nonzero {
            Grid::At {
                floor: -v - 1,
                exact: false,
            }
        } else {
            Grid::At {
                floor: -v,
                exact: true,
            }
        }
    } else {
        Grid::At {
            floor: v,
            exact: !frac_nonzero,
        }
    })
}

/// Floor division of a count of nanoseconds by `div` nanoseconds.
fn grid_div(nanos: i128, div: i128) -> Grid {
    Grid::At {
        floor: nanos.div_euclid(div),
        exact: nanos.rem_euclid(div) == 0,
    }
}

pub(crate) fn nanos_per(unit: Unit) -> i128 {
    1_000_000_000 / unit.per_second() as i128
}

const NANOS_PER_DAY: i128 = 86_400_000_000_000;

fn timestamp_nanos(ts: &NaiveDateTime, offset: Option<i32>) -> i128 {
    let utc = ts.and_utc();
    utc.timestamp() as i128 * 1_000_000_000 + utc.timestamp_subsec_nanos() as i128
        - offset.unwrap_or(0) as i128 * 1_000_000_000
}

/// The range of values a column can hold, on its integer grid.
fn int_range(col: &LeafColumn) -> (i128, i128) {
    match (&col.logical, col.physical) {
        (LogicalKind::Integer { bits, signed: true }, _) => {
            let b = (*bits).clamp(1, 64) as u32;
            (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1)
        }
        (
            LogicalKind::Integer {
                bits,
                signed: false,
            },
            _,
        ) => (0, (1i128 << (*bits).clamp(1, 64) as u32) - 1),
        (_, PhysicalType::INT32) => (i32::MIN as i128, i32::MAX as i128),
        (_, PhysicalType::INT64) => (i64::MIN as i128, i64::MAX as i128),
        (_, PhysicalType::FIXED_LEN_BYTE_ARRAY) if (1..16).contains(&col.type_length) => {
            let b = 8 * col.type_length as u32;
            (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1)
        }
        _ => (i128::MIN, i128::MAX),
    }
}

/// Converts `col op lit` into the column's domain.
pub(super) fn convert(col: &LeafColumn, op: CmpOp, lit: &Lit, e: &Expr) -> Result<Bound> {
    if *lit == Lit::Null {
        return Ok(Bound::Nothing);
    }
    let mismatch = || {
        Error::invalid(format!(
            "type mismatch: column '{}' is {}, literal {e} is {}",
            col.path,
            type_name(col),
            lit.kind()
        ))
    };
    let domain = col.domain();
    match domain {
        Domain::Bool => match lit {
            Lit::Bool(b) => Ok(Bound::Leaf(op, Scalar::Bool(*b))),
            Lit::String(s) if s.eq_ignore_ascii_case("true") => {
                Ok(Bound::Leaf(op, Scalar::Bool(true)))
            }
            Lit::String(s) if s.eq_ignore_ascii_case("false") => {
                Ok(Bound::Leaf(op, Scalar::Bool(false)))
            }
            _ => Err(mismatch()),
        },
        Domain::Float => {
            let f = match lit {
                Lit::Float(f) => *f,
                Lit::Number(n) => parse_f64(n).ok_or_else(mismatch)?,
                Lit::String(s) => parse_f64(s).ok_or_else(mismatch)?,
                _ => return Err(mismatch()),
            };
            Ok(Bound::Leaf(op, Scalar::Float(f)))
        }
        Domain::Bytes => match lit {
            Lit::String(s) => Ok(Bound::Leaf(op, Scalar::Bytes(s.as_bytes().to_vec()))),
            Lit::Binary(h) if col.logical == LogicalKind::Binary => {
                Ok(Bound::Leaf(op, Scalar::Bytes(h.clone())))
            }
            _ => Err(mismatch()),
        },
        Domain::Int | Domain::UInt | Domain::Decimal => {
            let grid = match (&col.logical, lit) {
                (LogicalKind::Integer { .. } | LogicalKind::Decimal { .. }, _) => {
                    let scale = match col.logical {
                        LogicalKind::Decimal { scale, .. } => scale as i64,
                        _ => 0,
                    };
                    match lit {
                        Lit::Number(n) => number_grid(n, scale).ok_or_else(mismatch)?,
                        Lit::String(s) => float_grid(s, scale)
                            .or_else(|| number_grid(s, scale))
                            .ok_or_else(mismatch)?,
                        Lit::Float(f) => float_grid(&f.to_string(), scale).ok_or_else(mismatch)?,
                        _ => return Err(mismatch()),
                    }
                }
                (LogicalKind::Date, Lit::Date(d)) => Grid::At {
                    floor: d.signed_duration_since(NaiveDate::default()).num_days() as i128,
                    exact: true,
                },
                (LogicalKind::Date, Lit::Timestamp(ts, off)) => {
                    grid_div(timestamp_nanos(ts, *off), NANOS_PER_DAY)
                }
                (LogicalKind::Date, Lit::String(s)) => {
                    let (ts, off) = parse_timestamp(s).ok_or_else(mismatch)?;
                    grid_div(timestamp_nanos(&ts, off), NANOS_PER_DAY)
                }
                (LogicalKind::Timestamp { unit, .. }, Lit::Date(d)) => grid_div(
                    timestamp_nanos(&d.and_hms_opt(0, 0, 0).expect("midnight"), None),
                    nanos_per(*unit),
                ),
                (LogicalKind::Timestamp { unit, .. }, Lit::Timestamp(ts, off)) => {
                    grid_div(timestamp_nanos(ts, *off), nanos_per(*unit))
                }
                (LogicalKind::Timestamp { unit, .. }, Lit::String(s)) => {
                    let (ts, off) = parse_timestamp(s).ok_or_else(mismatch)?;
                    grid_div(timestamp_nanos(&ts, off), nanos_per(*unit))
                }
                (LogicalKind::Time { unit }, Lit::Time(_) | Lit::String(_)) => {
                    let t = match lit {
                        Lit::String(s) => parse_time(s).ok_or_else(mismatch)?,
                        Lit::Time(t) => *t,
                        _ => unreachable!("matched above"),
                    };
                    let nanos = t.num_seconds_from_midnight() as i128 * 1_000_000_000
                        + t.nanosecond() as i128;
                    grid_div(nanos, nanos_per(*unit))
                }
                _ => return Err(mismatch()),
            };
            Ok(on_grid(col, op, grid))
        }
        Domain::None => Err(Error::unsupported(format!(
            "predicate on column '{}' of type {} is not supported",
            col.path,
            type_name(col)
        ))),
    }
}

/// Strings on numeric columns: special float values (`'inf'`, `'NaN'`).
fn float_grid(s: &str, scale: i64) -> Option<Grid> {
    let f = parse_f64(s)?;
    if f.is_nan() || f == f64::INFINITY {
        // NaN sorts above every number.
        Some(Grid::Above)
    } else if f == f64::NEG_INFINITY {
        Some(Grid::Below)
    } else {
        number_grid(s, scale).or_else(|| number_grid(&format!("{f:e}"), scale))
    }
}

/// Applies the operator to a grid position, folding out-of-range and in-between literals.
fn on_grid(col: &LeafColumn, op: CmpOp, grid: Grid) -> Bound {
    let (min, max) = int_range(col);
    // Normalise to an integer comparison `x op v`; `None` means beyond i128 (side from grid).
    let (op, v): (CmpOp, Option<i128>) = match grid {
        Grid::At { floor, exact: true } => (op, Some(floor)),
        Grid::At {
            floor,
            exact: false,
        } => match op {
            // floor < literal < floor + 1
            CmpOp::Eq => return Bound::Nothing,
            CmpOp::NotEq => return Bound::AllNonNull,
            CmpOp::Lt | CmpOp::LtEq => (CmpOp::LtEq, Some(floor)),
            CmpOp::Gt | CmpOp::GtEq => (CmpOp::GtEq, floor.checked_add(1)),
        },
        Grid::Below => (op, None),
        Grid::Above => (op, None),
    };
    let below_min = matches!(grid, Grid::Below) || v.is_some_and(|x| x < min);
    let above_max =
        matches!(grid, Grid::Above) || v.is_none_or(|x| x > max) && !matches!(grid, Grid::Below);
    if below_min {
        return match op {
            CmpOp::Eq | CmpOp::Lt | CmpOp::LtEq => Bound::Nothing,
            CmpOp::NotEq | CmpOp::Gt | CmpOp::GtEq => Bound::AllNonNull,
        };
    }
    if above_max {
        return match op {
            CmpOp::Eq | CmpOp::Gt | CmpOp::GtEq => Bound::Nothing,
            CmpOp::NotEq | CmpOp::Lt | CmpOp::LtEq => Bound::AllNonNull,
        };
    }
    let v = v.expect("in range");
    let scalar = match col.domain() {
        Domain::UInt => Scalar::UInt(v as u64),
        Domain::Decimal => Scalar::Decimal(v),
        _ => Scalar::Int(v as i64),
    };
    Bound::Leaf(op, scalar)
}
