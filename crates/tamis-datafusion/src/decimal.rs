//! Decimal `+`, `-` and `*` in 64-bit lanes.
//!
//! arrow computes every `Decimal128` sum, difference and product with checked 128-bit
//! arithmetic, value by value, and a checked 128-bit multiply is a call into the compiler's
//! runtime library. TPC-H Q1's `l_extendedprice * (1 - l_discount) * (1 + l_tax)` spent a
//! fifth of the query there (SF 1, one thread). The values themselves are
//! `DECIMAL(15, 2)`: every one fits in an `i64`, and a product of two `i64`s, or a sum of
//! two `i64`s each times a power of ten that fits in an `i64`, cannot overflow an `i128`.
//! So when every value of both operands fits in an `i64` (checked per batch), the exact
//! result is computed with widening 64-bit multiplies and no overflow checks; otherwise
//! arrow's own kernel runs. The result (values, nulls, precision and scale) is arrow's.
//!
//! [`NarrowDecimalArithmetic`] is the logical optimizer rule that puts these functions in
//! place of `Decimal128` arithmetic in projections and aggregates (filters are left to the
//! scan's pushdown), keeping each expression's name.

use std::sync::{Arc, LazyLock};

use arrow::array::{Array, ArrayRef, AsArray, Datum, PrimitiveArray, Scalar};
use arrow::buffer::{NullBuffer, ScalarBuffer};
use arrow::compute::kernels::numeric;
use arrow::datatypes::{
    DataType, Decimal128Type, Field, FieldRef, DECIMAL128_MAX_PRECISION, DECIMAL128_MAX_SCALE,
};
use arrow::error::ArrowError;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{plan_err, DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ReturnFieldArgs,
    ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::{ApplyOrder, OptimizerConfig, OptimizerRule};

/// The three operations computed here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DecimalOp {
    Add,
    Sub,
    Mul,
}

impl DecimalOp {
    fn of(op: Operator) -> Option<Self> {
        match op {
            Operator::Plus => Some(Self::Add),
            Operator::Minus => Some(Self::Sub),
            Operator::Multiply => Some(Self::Mul),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Add => "decimal_add",
            Self::Sub => "decimal_sub",
            Self::Mul => "decimal_mul",
        }
    }

    /// The result's precision and scale, by arrow's rule (`decimal_op`, after Hive's);
    /// `None` where arrow refuses (a product's scale above 38).
    pub fn result(self, (p1, s1): (u8, i8), (p2, s2): (u8, i8)) -> Option<(u8, i8)> {
        match self {
            Self::Add | Self::Sub => {
                let scale = s1.max(s2);
                let digits = (p1 as i8 - s1).max(p2 as i8 - s2);
                let precision = (scale.saturating_add(digits) as u8)
                    .saturating_add(1)
                    .min(DECIMAL128_MAX_PRECISION);
                Some((precision, scale))
            }
            Self::Mul => {
                let scale = s1.saturating_add(s2);
                let precision = p1.saturating_add(p2 + 1).min(DECIMAL128_MAX_PRECISION);
                (scale <= DECIMAL128_MAX_SCALE).then_some((precision, scale))
            }
        }
    }

    /// arrow's kernel for this operation (the one DataFusion's `BinaryExpr` calls), a side
    /// marked scalar taken as a constant.
    fn arrow(
        self,
        l: &ArrayRef,
        l_scalar: bool,
        r: &ArrayRef,
        r_scalar: bool,
    ) -> Result<ArrayRef, ArrowError> {
        let datum = |a: &ArrayRef, scalar: bool| -> Box<dyn Datum> {
            if scalar {
                Box::new(Scalar::new(Arc::clone(a)))
            } else {
                Box::new(Arc::clone(a))
            }
        };
        let (l, r) = (datum(l, l_scalar), datum(r, r_scalar));
        match self {
            Self::Add => numeric::add_wrapping(l.as_ref(), r.as_ref()),
            Self::Sub => numeric::sub_wrapping(l.as_ref(), r.as_ref()),
            Self::Mul => numeric::mul_wrapping(l.as_ref(), r.as_ref()),
        }
    }
}

/// One side of an operation: a column of a batch or a constant.
enum Operand<'a> {
    Array(&'a PrimitiveArray<Decimal128Type>),
    Scalar(i128),
}

impl<'a> Operand<'a> {
    /// A side of [`compute`]: `None` for a null constant (arrow's result is then all null).
    fn of(a: &'a PrimitiveArray<Decimal128Type>, scalar: bool) -> Option<Self> {
        if !scalar {
            Some(Self::Array(a))
        } else {
            a.is_valid(0).then(|| Self::Scalar(a.value(0)))
        }
    }

    fn fits_i64(&self) -> bool {
        match self {
            Self::Array(a) => all_fit_i64(a.values()),
            Self::Scalar(v) => i64::try_from(*v).is_ok(),
        }
    }
}

/// Whether every value (null slots included) fits in an `i64`: one pass, no branches.
fn all_fit_i64(values: &[i128]) -> bool {
    tamis::kernels::narrow::fits_i64(values)
}

/// `f` over the pairs of values, each narrowed to `i64`. The caller checked they fit.
fn lanes(l: &Operand, r: &Operand, f: impl Fn(i64, i64) -> i128) -> Vec<i128> {
    match (l, r) {
        (Operand::Array(a), Operand::Array(b)) => a
            .values()
            .iter()
            .zip(b.values().iter())
            .map(|(&x, &y)| f(x as i64, y as i64))
            .collect(),
        (Operand::Scalar(x), Operand::Array(b)) => {
            let x = *x as i64;
            b.values().iter().map(|&y| f(x, y as i64)).collect()
        }
        (Operand::Array(a), Operand::Scalar(y)) => {
            let y = *y as i64;
            a.values().iter().map(|&x| f(x as i64, y)).collect()
        }
        (Operand::Scalar(x), Operand::Scalar(y)) => vec![f(*x as i64, *y as i64)],
    }
}

/// `l op r` in 64-bit lanes, or `None` where a value or a rescaling factor does not fit in
/// an `i64` (the caller then runs arrow's kernel). Never overflows: `|x·y| < 2^126` and
/// `|x·a ± y·b| < 2^127` for `x, y, a, b` in `i64`.
fn narrow(
    op: DecimalOp,
    l: &Operand,
    (p1, s1): (u8, i8),
    r: &Operand,
    (p2, s2): (u8, i8),
) -> Option<PrimitiveArray<Decimal128Type>> {
    let (precision, scale) = op.result((p1, s1), (p2, s2))?;
    if let (Operand::Array(a), Operand::Array(b)) = (l, r) {
        if a.len() != b.len() {
            return None; // arrow's error
        }
    }
    if !l.fits_i64() || !r.fits_i64() {
        return None;
    }
    let values = match op {
        DecimalOp::Mul => lanes(l, r, |x, y| x as i128 * y as i128),
        DecimalOp::Add | DecimalOp::Sub => {
            // Rescaling factors: 10^(scale - s), at most 10^18 to stay in an i64.
            let factor = |s: i8| 10i64.checked_pow(u32::try_from(scale - s).ok()?);
            let (a, b) = (factor(s1)? as i128, factor(s2)? as i128);
            match (op, a == 1 && b == 1) {
                (DecimalOp::Add, true) => lanes(l, r, |x, y| x as i128 + y as i128),
                (DecimalOp::Sub, true) => lanes(l, r, |x, y| x as i128 - y as i128),
                (DecimalOp::Add, false) => lanes(l, r, |x, y| x as i128 * a + y as i128 * b),
                _ => lanes(l, r, |x, y| x as i128 * a - y as i128 * b),
            }
        }
    };
    let nulls = match (l, r) {
        (Operand::Array(a), Operand::Array(b)) => NullBuffer::union(a.nulls(), b.nulls()),
        (Operand::Array(a), _) | (_, Operand::Array(a)) => a.nulls().cloned(),
        _ => None,
    };
    PrimitiveArray::<Decimal128Type>::new(ScalarBuffer::from(values), nulls)
        .with_precision_and_scale(precision, scale)
        .ok()
}

/// `l op r` for two `Decimal128` arrays (either may be a one-row scalar), exactly as arrow
/// computes it, in 64-bit lanes where the values allow.
pub fn compute(
    op: DecimalOp,
    l: &ArrayRef,
    l_scalar: bool,
    r: &ArrayRef,
    r_scalar: bool,
) -> Result<ArrayRef, ArrowError> {
    let fast = match (l.data_type(), r.data_type()) {
        (&DataType::Decimal128(p1, s1), &DataType::Decimal128(p2, s2)) => {
            let (l, r) = (
                l.as_primitive::<Decimal128Type>(),
                r.as_primitive::<Decimal128Type>(),
            );
            match (Operand::of(l, l_scalar), Operand::of(r, r_scalar)) {
                (Some(lo), Some(ro)) => narrow(op, &lo, (p1, s1), &ro, (p2, s2)),
                _ => None,
            }
        }
        _ => None,
    };
    if let Some(array) = fast {
        return Ok(Arc::new(array));
    }
    op.arrow(l, l_scalar, r, r_scalar)
}

/// A scalar function computing one [`DecimalOp`] on two `Decimal128` arguments.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct DecimalArithmetic {
    op: DecimalOp,
    signature: Signature,
}

impl DecimalArithmetic {
    pub fn new(op: DecimalOp) -> Self {
        Self {
            op,
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for DecimalArithmetic {
    fn name(&self) -> &str {
        self.op.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args {
            [DataType::Decimal128(p1, s1), DataType::Decimal128(p2, s2)] => {
                match self.op.result((*p1, *s1), (*p2, *s2)) {
                    Some((p, s)) => Ok(DataType::Decimal128(p, s)),
                    None => plan_err!("{}: the result's scale exceeds 38", self.name()),
                }
            }
            _ => plan_err!(
                "{} takes two Decimal128 arguments, got {args:?}",
                self.name()
            ),
        }
    }

    /// Nullable as the operator it replaces is: where either side is.
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let types: Vec<DataType> = args
            .arg_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let nullable = args.arg_fields.iter().any(|f| f.is_nullable());
        Ok(Arc::new(Field::new(
            self.name(),
            self.return_type(&types)?,
            nullable,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [l, r] = args.args.as_slice() else {
            return plan_err!("{} takes two arguments", self.name());
        };
        let both_scalar = matches!((l, r), (ColumnarValue::Scalar(_), ColumnarValue::Scalar(_)));
        let array = |v: &ColumnarValue| -> Result<(ArrayRef, bool)> {
            Ok(match v {
                ColumnarValue::Array(a) => (Arc::clone(a), false),
                ColumnarValue::Scalar(s) => (s.to_array_of_size(1)?, true),
            })
        };
        let ((la, ls), (ra, rs)) = (array(l)?, array(r)?);
        let out = compute(self.op, &la, ls, &ra, rs)?;
        Ok(if both_scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
        } else {
            ColumnarValue::Array(out)
        })
    }
}

/// The functions, made once.
static FUNCTIONS: LazyLock<[Arc<ScalarUDF>; 3]> = LazyLock::new(|| {
    [DecimalOp::Add, DecimalOp::Sub, DecimalOp::Mul]
        .map(|op| Arc::new(ScalarUDF::new_from_impl(DecimalArithmetic::new(op))))
});

fn function(op: DecimalOp) -> Arc<ScalarUDF> {
    Arc::clone(&FUNCTIONS[op as usize])
}

/// Replaces `Decimal128` `+`, `-` and `*` in projections and aggregates with
/// [`DecimalArithmetic`] (see the module documentation). Names are kept, so output columns
/// and the plans above are unchanged.
#[derive(Debug, Default)]
pub struct NarrowDecimalArithmetic;

impl OptimizerRule for NarrowDecimalArithmetic {
    fn name(&self) -> &str {
        "tamis_narrow_decimal_arithmetic"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::BottomUp)
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        if !matches!(plan, LogicalPlan::Projection(_) | LogicalPlan::Aggregate(_)) {
            return Ok(Transformed::no(plan));
        }
        let schema = Arc::clone(plan.inputs()[0].schema());
        let names = NamePreserver::new(&plan);
        let rewritten = plan.map_expressions(|expr| {
            let name = names.save(&expr);
            let out = expr.transform_up(|e| replace(e, &schema))?;
            Ok(if out.transformed {
                out.update_data(|e| name.restore(e))
            } else {
                out
            })
        })?;
        if rewritten.transformed {
            rewritten.map_data(|p| p.recompute_schema())
        } else {
            Ok(rewritten)
        }
    }
}

/// `e` with its operator replaced, if it is `Decimal128` arithmetic whose type arrow's rule
/// gives (any other type DataFusion assigns is left to DataFusion).
fn replace(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &e else {
        return Ok(Transformed::no(e));
    };
    let Some(dop) = DecimalOp::of(*op) else {
        return Ok(Transformed::no(e));
    };
    let types = (
        left.get_type(schema)?,
        right.get_type(schema)?,
        e.get_type(schema)?,
    );
    let (DataType::Decimal128(p1, s1), DataType::Decimal128(p2, s2), DataType::Decimal128(p, s)) =
        types
    else {
        return Ok(Transformed::no(e));
    };
    if dop.result((p1, s1), (p2, s2)) != Some((p, s)) {
        return Ok(Transformed::no(e));
    }
    let args = vec![left.as_ref().clone(), right.as_ref().clone()];
    Ok(Transformed::yes(Expr::ScalarFunction(
        ScalarFunction::new_udf(function(dop), args),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Decimal128Array;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    const OPS: [DecimalOp; 3] = [DecimalOp::Add, DecimalOp::Sub, DecimalOp::Mul];

    /// Values around every edge: zero, ±1, the ends of i64 and one past them, the ends of
    /// i128, and everyday decimals.
    fn value(rng: &mut StdRng) -> i128 {
        const EDGES: [i128; 12] = [
            0,
            1,
            -1,
            i64::MAX as i128,
            i64::MIN as i128,
            i64::MAX as i128 + 1,
            i64::MIN as i128 - 1,
            i128::MAX,
            i128::MIN,
            10_494_950,
            -999_999_999_999_999,
            1 << 62,
        ];
        match rng.random_range(0..4) {
            0 => EDGES[rng.random_range(0..EDGES.len())],
            1 => rng.random_range(-1_000_000_000i128..1_000_000_000),
            2 => rng.random::<i64>() as i128,
            _ => rng.random::<i128>() >> rng.random_range(0..127),
        }
    }

    fn array(rng: &mut StdRng, len: usize, wide: bool, nulls: bool, p: u8, s: i8) -> ArrayRef {
        let values = (0..len).map(|_| {
            let v = if wide {
                value(rng)
            } else {
                rng.random_range(-10_000_000_000i128..10_000_000_000)
            };
            (!nulls || rng.random_bool(0.8)).then_some(v)
        });
        Arc::new(
            values
                .collect::<Decimal128Array>()
                .with_precision_and_scale(p, s)
                .unwrap(),
        )
    }

    /// The kernel against arrow's own, over random arrays and constants on either side,
    /// with and without nulls, narrow and wide values, every precision-scale pair class.
    #[test]
    fn equals_arrow_for_random_operands() {
        let mut rng = StdRng::seed_from_u64(42);
        let mut narrow_runs = 0;
        for case in 0..3000 {
            let op = OPS[case % 3];
            let len = [0, 1, 2, 7, 63, 64, 65, 1000][rng.random_range(0..8)];
            let (p1, p2) = (rng.random_range(1..=38u8), rng.random_range(1..=38u8));
            let s1 = rng.random_range(-5..=p1 as i8);
            let s2 = rng.random_range(-5..=p2 as i8);
            let wide = rng.random_bool(0.3);
            let (ls, rs) = match rng.random_range(0..4) {
                0 => (true, false),
                1 => (false, true),
                _ => (false, false),
            };
            let nulls = rng.random_bool(0.5);
            let l = array(&mut rng, if ls { 1 } else { len }, wide, nulls, p1, s1);
            let r = array(&mut rng, if rs { 1 } else { len }, wide, nulls, p2, s2);
            let ours = compute(op, &l, ls, &r, rs);
            let theirs = op.arrow(&l, ls, &r, rs);
            match (&ours, &theirs) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a.data_type(), b.data_type(), "case {case} {op:?}");
                    assert_eq!(a.as_ref(), b.as_ref(), "case {case} {op:?}");
                }
                (Err(_), Err(_)) => {}
                _ => panic!("case {case} {op:?}: ours {ours:?}, arrow {theirs:?}"),
            }
            let (la, ra) = (l.as_primitive(), r.as_primitive());
            if let (Some(lo), Some(ro)) = (Operand::of(la, ls), Operand::of(ra, rs)) {
                narrow_runs += narrow(op, &lo, (p1, s1), &ro, (p2, s2)).is_some() as usize;
            }
        }
        // Both paths ran: the 64-bit lanes for most cases, arrow's for the rest.
        assert!(narrow_runs > 1000, "narrow path ran {narrow_runs} times");
    }

    #[test]
    fn fits_i64_at_the_edges() {
        assert!(all_fit_i64(&[]));
        assert!(all_fit_i64(&[i64::MAX as i128, i64::MIN as i128, 0, -1]));
        for bad in [
            i64::MAX as i128 + 1,
            i64::MIN as i128 - 1,
            i128::MAX,
            i128::MIN,
            1 << 64,
        ] {
            // At every position of a 64-value run and after it.
            for at in [0, 31, 63, 64] {
                let mut v = vec![7i128; 65];
                v[at] = bad;
                assert!(!all_fit_i64(&v), "{bad} at {at}");
            }
        }
    }

    /// Rescaling factors past 10^18 take arrow's path, with arrow's result.
    #[test]
    fn large_rescaling_takes_arrows_path() {
        let l: ArrayRef = Arc::new(
            Decimal128Array::from(vec![Some(5), None, Some(-3)])
                .with_precision_and_scale(38, 0)
                .unwrap(),
        );
        let r: ArrayRef = Arc::new(
            Decimal128Array::from(vec![Some(1), Some(2), Some(3)])
                .with_precision_and_scale(38, 30)
                .unwrap(),
        );
        let lo = Operand::Array(l.as_primitive());
        let ro = Operand::Array(r.as_primitive());
        assert!(narrow(DecimalOp::Add, &lo, (38, 0), &ro, (38, 30)).is_none());
        let ours = compute(DecimalOp::Add, &l, false, &r, false).unwrap();
        let theirs = numeric::add_wrapping(&l, &r).unwrap();
        assert_eq!(ours.as_ref(), theirs.as_ref());
    }
}
