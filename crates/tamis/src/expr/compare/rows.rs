//! A comparison evaluated on the rows still alive: each operand as a vector over those rows
//! (columns decoded for them, constants spread, exact arithmetic on scaled integers), then
//! compared row by row.

use super::{exact_scale, ArithOp, Number, Operand};
use crate::error::{Error, Result};
use crate::expr::{i128_from_be, CmpOp};
use crate::schema::{Domain, LeafColumn};
use crate::values::Values;

/// The decoded values of one column for the rows a comparison is evaluated on.
pub struct ColumnRows<'a> {
    pub column: &'a LeafColumn,
    /// Dense non-null values, in row order.
    pub values: Values,
    /// One flag per row.
    pub validity: Vec<bool>,
}

/// An operand's value on every row, with validity.
pub(super) struct Evaluated {
    pub(super) values: Vector,
    /// `None`: every row valid.
    pub(super) validity: Option<Vec<bool>>,
}

pub(super) enum Vector {
    Exact(Vec<i128>, u8),
    Float(Vec<f64>),
    Bytes(crate::values::ByteArrays),
    Bool(Vec<bool>),
}

impl Vector {
    pub(super) fn as_f64(&self) -> Vec<f64> {
        match self {
            Vector::Exact(v, s) => {
                let div = 10f64.powi(*s as i32);
                v.iter().map(|&x| x as f64 / div).collect()
            }
            Vector::Float(v) => v.clone(),
            _ => Vec::new(),
        }
    }
}

impl Evaluated {
    fn valid(&self, i: usize) -> bool {
        self.validity.as_ref().is_none_or(|v| v[i])
    }
}

pub(super) fn compare_into(
    out: &mut [bool],
    l: &Evaluated,
    r: &Evaluated,
    cmp: impl Fn(usize) -> std::cmp::Ordering,
    op: CmpOp,
) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = l.valid(i) && r.valid(i) && op.holds(cmp(i));
    }
}

pub(super) fn overflow() -> Error {
    Error::invalid("arithmetic overflow in a filter (the exact result does not fit 38 digits)")
}

pub(super) fn pow10(s: u8) -> Option<i128> {
    10i128.checked_pow(s as u32)
}

/// `values` (at `from` scale) at scale `to >= from`, exactly.
pub(super) fn rescaled(values: &[i128], from: u8, to: u8) -> Result<Vec<i128>> {
    if from == to {
        return Ok(values.to_vec());
    }
    let f = pow10(to - from).ok_or_else(overflow)?;
    values
        .iter()
        .map(|&v| v.checked_mul(f).ok_or_else(overflow))
        .collect()
}

pub(super) fn eval_operand(o: &Operand, rows: &[ColumnRows<'_>], n: usize) -> Result<Evaluated> {
    match o {
        Operand::Number(Number::Exact { unscaled, scale }) => Ok(Evaluated {
            values: Vector::Exact(vec![*unscaled; n], *scale),
            validity: None,
        }),
        Operand::Number(Number::Float(f)) => Ok(Evaluated {
            values: Vector::Float(vec![*f; n]),
            validity: None,
        }),
        Operand::Constant(k) => {
            if k.value.len() != 1 {
                return Err(Error::internal("a constant without its one value"));
            }
            let values = match &k.value {
                Values::Bool(v) => Values::Bool(vec![v[0]; n]),
                Values::I32(v) => Values::I32(vec![v[0]; n]),
                Values::I64(v) => Values::I64(vec![v[0]; n]),
                Values::F32(v) => Values::F32(vec![v[0]; n]),
                Values::F64(v) => Values::F64(vec![v[0]; n]),
                Values::Bytes(b) => {
                    let one = b.get(0);
                    let mut out = crate::values::ByteArrays::with_capacity(n, one.len() * n);
                    (0..n).for_each(|_| out.push(one));
                    Values::Bytes(out)
                }
                Values::I96(_) => return Err(Error::internal("an INT96 constant")),
            };
            let rows = ColumnRows {
                column: &k.column,
                values,
                validity: vec![true; n],
            };
            column_vector(&rows, n)
        }
        Operand::Column(c) => {
            let col = rows
                .iter()
                .find(|r| r.column.index == *c)
                .ok_or_else(|| Error::internal(format!("leaf {c} not decoded")))?;
            column_vector(col, n)
        }
        Operand::Arith(a, op, b) => {
            let (a, b) = (eval_operand(a, rows, n)?, eval_operand(b, rows, n)?);
            let validity = match (a.validity, b.validity) {
                (None, v) | (v, None) => v,
                (Some(x), Some(y)) => Some(x.iter().zip(&y).map(|(p, q)| *p && *q).collect()),
            };
            let values = match (a.values, b.values) {
                (Vector::Exact(x, sx), Vector::Exact(y, sy)) => {
                    exact_arith(&x, sx, &y, sy, *op, validity.as_deref())?
                }
                (
                    x @ (Vector::Exact(..) | Vector::Float(_)),
                    y @ (Vector::Exact(..) | Vector::Float(_)),
                ) => {
                    let (x, y) = (x.as_f64(), y.as_f64());
                    Vector::Float(
                        x.iter()
                            .zip(&y)
                            .map(|(p, q)| match op {
                                ArithOp::Add => p + q,
                                ArithOp::Sub => p - q,
                                ArithOp::Mul => p * q,
                            })
                            .collect(),
                    )
                }
                _ => return Err(Error::internal("arithmetic on a non-number")),
            };
            Ok(Evaluated { values, validity })
        }
    }
}

/// Exact `x op y`; rows that are NULL on either side are 0 (never an overflow).
pub(super) fn exact_arith(
    x: &[i128],
    sx: u8,
    y: &[i128],
    sy: u8,
    op: ArithOp,
    validity: Option<&[bool]>,
) -> Result<Vector> {
    let live = |i: usize| validity.is_none_or(|v| v[i]);
    match op {
        ArithOp::Mul => {
            let out = (0..x.len())
                .map(|i| {
                    if live(i) {
                        x[i].checked_mul(y[i]).ok_or_else(overflow)
                    } else {
                        Ok(0)
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Vector::Exact(out, sx + sy))
        }
        ArithOp::Add | ArithOp::Sub => {
            let s = sx.max(sy);
            let (fx, fy) = (
                pow10(s - sx).ok_or_else(overflow)?,
                pow10(s - sy).ok_or_else(overflow)?,
            );
            let out = (0..x.len())
                .map(|i| {
                    if !live(i) {
                        return Ok(0);
                    }
                    let (a, b) = (x[i].checked_mul(fx), y[i].checked_mul(fy));
                    match (a, b, op) {
                        (Some(a), Some(b), ArithOp::Add) => a.checked_add(b),
                        (Some(a), Some(b), _) => a.checked_sub(b),
                        _ => None,
                    }
                    .ok_or_else(overflow)
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Vector::Exact(out, s))
        }
    }
}

/// A column's rows as a vector: dense values spread over the rows (NULL rows hold a default).
pub(super) fn column_vector(col: &ColumnRows<'_>, n: usize) -> Result<Evaluated> {
    if col.validity.len() != n {
        return Err(Error::internal(format!(
            "column '{}' decoded {} rows for a comparison over {n}",
            col.column.path,
            col.validity.len()
        )));
    }
    let all_valid = col.validity.iter().all(|&v| v);
    let dense_len = col.values.len();
    if col.validity.iter().filter(|&&v| v).count() != dense_len {
        return Err(Error::internal(
            "comparison values do not match their validity",
        ));
    }
    let c = col.column;
    let unsigned = c.domain() == Domain::UInt;
    let validity = &col.validity;
    let values = match &col.values {
        Values::I32(v) if unsigned => {
            Vector::Exact(spread(validity, 0, |k| v[k] as u32 as i128), exact_scale(c))
        }
        Values::I32(v) => Vector::Exact(spread(validity, 0, |k| v[k] as i128), exact_scale(c)),
        Values::I64(v) if unsigned => {
            Vector::Exact(spread(validity, 0, |k| v[k] as u64 as i128), exact_scale(c))
        }
        Values::I64(v) => Vector::Exact(spread(validity, 0, |k| v[k] as i128), exact_scale(c)),
        Values::F32(v) => Vector::Float(spread(validity, 0.0, |k| v[k] as f64)),
        Values::F64(v) => Vector::Float(spread(validity, 0.0, |k| v[k])),
        Values::Bool(v) => Vector::Bool(spread(validity, false, |k| v[k])),
        Values::Bytes(b) => match c.domain() {
            Domain::Decimal => {
                let mut bad = false;
                let out = spread(validity, 0, |k| {
                    i128_from_be(b.get(k)).unwrap_or_else(|| {
                        bad = true;
                        0
                    })
                });
                if bad {
                    return Err(Error::corrupt(format!(
                        "column '{}' holds a decimal wider than 128 bits",
                        c.path
                    )));
                }
                Vector::Exact(out, exact_scale(c))
            }
            Domain::Float => {
                // FLOAT16.
                Vector::Float(spread(validity, 0.0, |k| {
                    <[u8; 2]>::try_from(b.get(k))
                        .map_or(f64::NAN, |x| half::f16::from_le_bytes(x).to_f64())
                }))
            }
            _ => {
                let mut out = crate::values::ByteArrays::with_capacity(n, b.data.len());
                let mut k = 0;
                for &valid in validity {
                    out.push(if valid { b.get(k) } else { &[] });
                    k += valid as usize;
                }
                Vector::Bytes(out)
            }
        },
        Values::I96(_) => {
            return Err(Error::unsupported(format!(
                "comparison on INT96 column '{}'",
                c.path
            )))
        }
    };
    Ok(Evaluated {
        values,
        validity: (!all_valid).then(|| col.validity.clone()),
    })
}

/// One value per row: `value(k)` of the `k`-th dense value at valid rows, `default` at NULL rows.
pub(super) fn spread<T>(validity: &[bool], default: T, mut value: impl FnMut(usize) -> T) -> Vec<T>
where
    T: Copy,
{
    let mut k = 0;
    validity
        .iter()
        .map(|&valid| {
            if !valid {
                return default;
            }
            k += 1;
            value(k - 1)
        })
        .collect()
}
