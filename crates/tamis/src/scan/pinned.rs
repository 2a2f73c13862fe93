//! Columns the predicate pins to one value. A top-level conjunct `c = literal` leaves a single
//! value of `c` in every selected row, so projecting `c` needs none of its pages: a lookup that
//! the sidecar's rows index answers then reads nothing of its key column, and a row group whose
//! statistics decided the conjunct does not read it either.
//!
//! Only types whose equality is equality of the stored value qualify: integers, dates, times,
//! timestamps, decimals stored as integers, booleans and byte strings. Floating-point columns do
//! not (`x = 0.0` also holds for a stored `-0.0`), nor do decimals stored as bytes (many
//! encodings of one number).

use parquet::basic::Type as PhysicalType;

use crate::expr::{CmpOp, Leaf, LeafOp, Predicate, Scalar};
use crate::schema::{Domain, LeafColumn};
use crate::values::{ByteArrays, Values};

/// The value every selected row has in `leaf`, when a top-level conjunct of `predicate` pins it
/// and the value can be rebuilt exactly (see the module comment).
pub(super) fn pinned_value(predicate: Option<&Predicate>, leaf: &LeafColumn) -> Option<Scalar> {
    let conjuncts: &[Predicate] = match predicate? {
        Predicate::And(children) => children,
        p => std::slice::from_ref(p),
    };
    conjuncts.iter().find_map(|c| match c {
        Predicate::Leaf(Leaf { column, op }) if *column == leaf.index => match op {
            LeafOp::Cmp(CmpOp::Eq, v) => Some(v),
            LeafOp::In {
                values,
                negated: false,
            } if values.len() == 1 => values.first(),
            _ => None,
        }
        .filter(|v| repeated(leaf, v, 0).is_some())
        .cloned(),
        _ => None,
    })
}

/// `n` copies of `value` as `leaf`'s physical values, or `None` when the value is not one `leaf`
/// stores exactly.
pub(super) fn repeated(leaf: &LeafColumn, value: &Scalar, n: usize) -> Option<Values> {
    if leaf.nested {
        return None;
    }
    Some(match (leaf.domain(), leaf.physical, value) {
        (Domain::Bool, PhysicalType::BOOLEAN, Scalar::Bool(b)) => Values::Bool(vec![*b; n]),
        (Domain::Int, PhysicalType::INT32, Scalar::Int(v)) => {
            Values::I32(vec![i32::try_from(*v).ok()?; n])
        }
        (Domain::Int, PhysicalType::INT64, Scalar::Int(v)) => Values::I64(vec![*v; n]),
        // Unsigned integers are stored as the bits of the signed type.
        (Domain::UInt, PhysicalType::INT32, Scalar::UInt(v)) => {
            Values::I32(vec![u32::try_from(*v).ok()? as i32; n])
        }
        (Domain::UInt, PhysicalType::INT64, Scalar::UInt(v)) => Values::I64(vec![*v as i64; n]),
        (Domain::Bytes, PhysicalType::BYTE_ARRAY, Scalar::Bytes(b)) => {
            let mut out = ByteArrays::with_capacity(n, n.checked_mul(b.len())?);
            for _ in 0..n {
                out.push(b);
            }
            Values::Bytes(out)
        }
        _ => return None,
    })
}
