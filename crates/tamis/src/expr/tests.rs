//! SQL predicates end to end: text → parse → bind, against hand-built leaf columns.
use super::{parse_implied, parse_predicate, Predicate};
use crate::error::ErrorKind;
use crate::expr::render::render;
use crate::expr::{CmpOp, Leaf, LeafOp, LikePattern, Scalar};
use crate::schema::LeafColumn;
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::SchemaDescriptor;
use std::sync::Arc;

pub(crate) fn test_columns() -> Vec<LeafColumn> {
    let msg = "message t {
        optional int32 i8 (INTEGER(8,true));
        optional int32 u32 (INTEGER(32,false));
        optional int64 u64 (INTEGER(64,false));
        optional int32 i32;
        optional int64 i64;
        optional float f32;
        optional double f64;
        optional fixed_len_byte_array(2) f16 (FLOAT16);
        optional int32 d92 (DECIMAL(9,2));
        optional fixed_len_byte_array(9) d203 (DECIMAL(20,3));
        optional int32 dt (DATE);
        optional int64 ts_ms (TIMESTAMP(MILLIS,true));
        optional int64 ts_us (TIMESTAMP(MICROS,true));
        optional int64 ts_ns (TIMESTAMP(NANOS,true));
        optional int64 lts_us (TIMESTAMP(MICROS,false));
        optional int32 tm (TIME(MILLIS,true));
        optional binary s (STRING);
        optional binary b;
        optional boolean flag;
        optional int96 i96;
        optional group g { optional int32 x; }
        optional int32 Mixed;
        optional int32 dup;
        optional int32 DUP;
    }";
    let schema = SchemaDescriptor::new(Arc::new(parse_message_type(msg).unwrap()));
    crate::schema::leaf_columns(&schema)
}

fn idx(name: &str) -> usize {
    test_columns()
        .iter()
        .find(|c| c.path == name)
        .unwrap()
        .index
}
fn p(sql: &str) -> Predicate {
    parse_predicate(sql, &test_columns()).unwrap_or_else(|e| panic!("{sql}: {e}"))
}
fn err(sql: &str) -> crate::error::Error {
    parse_predicate(sql, &test_columns()).expect_err(sql)
}
fn cmp(col: &str, op: CmpOp, s: Scalar) -> Predicate {
    Predicate::Leaf(Leaf {
        column: idx(col),
        op: LeafOp::Cmp(op, s),
    })
}
fn not_null(col: &str) -> Predicate {
    Predicate::Leaf(Leaf {
        column: idx(col),
        op: LeafOp::IsNull { negated: true },
    })
}
fn is_null(col: &str) -> Predicate {
    Predicate::Leaf(Leaf {
        column: idx(col),
        op: LeafOp::IsNull { negated: false },
    })
}
use CmpOp::*;
use Scalar::{Bool as B, Bytes as By, Decimal as D, Float as F, Int as I, UInt as U};

#[test]
fn comparisons_and_flip() {
    assert_eq!(p("i32 > 5"), cmp("i32", Gt, I(5)));
    assert_eq!(p("5 > i32"), cmp("i32", Lt, I(5)));
    assert_eq!(p("-3 <= i64"), cmp("i64", GtEq, I(-3)));
    assert_eq!(p("i64 != 7"), cmp("i64", NotEq, I(7)));
    assert_eq!(p("(i64 <> +7)"), cmp("i64", NotEq, I(7)));
    assert_eq!(
        p("I32 = 1"),
        cmp("i32", Eq, I(1)),
        "case-insensitive binding"
    );
    assert_eq!(p("mixed = 1"), cmp("Mixed", Eq, I(1)));
    assert_eq!(p("\"DUP\" = 1"), cmp("DUP", Eq, I(1)));
    assert_eq!(p("u32 = 4294967295"), cmp("u32", Eq, U(u32::MAX as u64)));
    assert_eq!(
        p("u64 >= 18446744073709551615"),
        cmp("u64", GtEq, U(u64::MAX))
    );
    assert_eq!(p("i32 = '12'"), cmp("i32", Eq, I(12)));
}

#[test]
fn fractional_and_out_of_range_literals() {
    assert_eq!(p("i32 < 5.5"), cmp("i32", LtEq, I(5)));
    assert_eq!(p("i32 <= 5.5"), cmp("i32", LtEq, I(5)));
    assert_eq!(p("i32 > 5.5"), cmp("i32", GtEq, I(6)));
    assert_eq!(p("i32 > -5.5"), cmp("i32", GtEq, I(-5)));
    assert_eq!(p("i32 < -5.5"), cmp("i32", LtEq, I(-6)));
    assert_eq!(p("i32 = 5.5"), Predicate::False);
    assert_eq!(p("i32 <> 5.5"), not_null("i32"));
    assert_eq!(p("i32 = 5.0"), cmp("i32", Eq, I(5)));
    assert_eq!(p("i32 = 1e3"), cmp("i32", Eq, I(1000)));
    assert_eq!(p("i8 < 300"), not_null("i8"));
    assert_eq!(p("i8 = 300"), Predicate::False);
    assert_eq!(p("i8 > -129"), not_null("i8"));
    assert_eq!(p("i8 <= -200"), Predicate::False);
    assert_eq!(p("i8 = 127"), cmp("i8", Eq, I(127)));
    assert_eq!(p("u32 >= -1"), not_null("u32"));
    assert_eq!(p("u32 = -1"), Predicate::False);
    assert_eq!(p("u32 < 4294967296"), not_null("u32"));
    assert_eq!(p("i32 > 3e9"), Predicate::False);
    assert_eq!(p("i32 < 3e9"), not_null("i32"));
    assert_eq!(p("i64 < 1e40"), not_null("i64"));
    assert_eq!(
        p("i64 <> 123456789012345678901234567890123456789012"),
        not_null("i64")
    );
    assert_eq!(
        p("i64 > 0.0000000000000000000000000000000000000000001"),
        cmp("i64", GtEq, I(1))
    );
}

#[test]
fn decimals() {
    assert_eq!(p("d92 = 1.5"), cmp("d92", Eq, I(150)));
    assert_eq!(p("d92 < 0.055"), cmp("d92", LtEq, I(5)));
    assert_eq!(p("d92 > 0.055"), cmp("d92", GtEq, I(6)));
    assert_eq!(p("d92 = 0.055"), Predicate::False);
    assert_eq!(p("d92 >= -12"), cmp("d92", GtEq, I(-1200)));
    assert_eq!(
        p("d92 < 30000000"),
        not_null("d92"),
        "beyond INT32 unscaled"
    );
    assert_eq!(
        p("d203 = 12345678901234567.891"),
        cmp("d203", Eq, D(12345678901234567891))
    );
    assert_eq!(p("d203 < -0.0001"), cmp("d203", LtEq, D(-1)));
    assert_eq!(p("d203 > 1e30"), Predicate::False);
}

/// Comparisons between columns and with arithmetic bind to `Predicate::Compare`, the
/// operator negated under NOT, the SQL shown as written; a NULL side is FALSE.
#[test]
fn comparisons_between_columns() {
    use crate::expr::compare::{ArithOp, Number, Operand};
    let compare = |q: &str| match p(q) {
        Predicate::Compare(c) => (*c).clone(),
        other => panic!("{q}: {other:?}"),
    };
    let c = compare("i32 < i64");
    assert_eq!(
        (c.left, c.op, c.right),
        (Operand::Column(idx("i32")), Lt, Operand::Column(idx("i64")))
    );
    assert_eq!(compare("NOT (i32 < i64)").op, GtEq);
    let c = compare("d92 * (1 - d92) > 1000.50");
    assert_eq!(
        c.right,
        Operand::Number(Number::Exact {
            unscaled: 100050,
            scale: 2
        })
    );
    let Operand::Arith(_, ArithOp::Mul, rhs) = &c.left else {
        panic!("{:?}", c.left)
    };
    assert!(matches!(**rhs, Operand::Arith(_, ArithOp::Sub, _)));
    assert_eq!(
        compare("f64 >= i32 + 1e3").columns(),
        vec![idx("i32"), idx("f64")]
    );
    assert_eq!(p("i32 < i64 + NULL"), Predicate::False);
    assert_eq!(p("NOT (NULL * i32 = i64)"), Predicate::False);
    let rendered = |q: &str| crate::expr::render::render(&p(q), &test_columns());
    assert_eq!(
        rendered("i32 - (i64 - 2) < 3 * (f64 + 1)"),
        "i32 - (i64 - 2) < 3 * (f64 + 1)"
    );
    assert_eq!(rendered("NOT s = s"), "s <> s");
}

#[test]
fn floats() {
    assert_eq!(p("f64 > 1"), cmp("f64", Gt, F(1.0)));
    assert_eq!(p("f32 <= -1.5e3"), cmp("f32", LtEq, F(-1500.0)));
    match p("f64 = 'NaN'::DOUBLE") {
        Predicate::Leaf(Leaf {
            op: LeafOp::Cmp(Eq, F(x)),
            ..
        }) => assert!(x.is_nan()),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        p("f64 < CAST('inf' AS DOUBLE)"),
        cmp("f64", Lt, F(f64::INFINITY))
    );
    assert_eq!(
        p("f64 > -CAST('infinity' AS DOUBLE)"),
        cmp("f64", Gt, F(f64::NEG_INFINITY))
    );
    assert_eq!(p("f16 >= 0.5"), cmp("f16", GtEq, F(0.5)));
}

#[test]
fn dates_times_timestamps() {
    assert_eq!(p("dt >= DATE '1994-01-01'"), cmp("dt", GtEq, I(8766)));
    assert_eq!(p("dt < '1970-01-02'"), cmp("dt", Lt, I(1)));
    assert_eq!(p("dt < CAST('1969-12-31' AS DATE)"), cmp("dt", Lt, I(-1)));
    assert_eq!(
        p("dt > TIMESTAMP '1970-01-02 12:00:00'"),
        cmp("dt", GtEq, I(2))
    );
    let s = 8766 * 86400i64 + 12 * 3600;
    assert_eq!(
        p("ts_ms = TIMESTAMP '1994-01-01 12:00:00'"),
        cmp("ts_ms", Eq, I(s * 1000))
    );
    assert_eq!(
        p("ts_us = TIMESTAMP '1994-01-01 12:00:00.000001'"),
        cmp("ts_us", Eq, I(s * 1_000_000 + 1))
    );
    assert_eq!(
        p("ts_ns = TIMESTAMP '1994-01-01 12:00:00.123456789'"),
        cmp("ts_ns", Eq, I(s * 1_000_000_000 + 123_456_789))
    );
    assert_eq!(
        p("ts_ms < TIMESTAMP '1994-01-01 12:00:00.0005'"),
        cmp("ts_ms", LtEq, I(s * 1000))
    );
    assert_eq!(
        p("ts_ms = TIMESTAMP '1994-01-01 12:00:00.0005'"),
        Predicate::False
    );
    assert_eq!(
        p("ts_us >= TIMESTAMP '1994-01-01 14:00:00+02:00'"),
        cmp("ts_us", GtEq, I(s * 1_000_000))
    );
    assert_eq!(
        p("ts_us >= TIMESTAMPTZ '1994-01-01 10:00:00-02'"),
        cmp("ts_us", GtEq, I(s * 1_000_000))
    );
    assert_eq!(
        p("lts_us = '1994-01-01 12:00:00'"),
        cmp("lts_us", Eq, I(s * 1_000_000))
    );
    assert_eq!(
        p("ts_ms >= DATE '1994-01-01'"),
        cmp("ts_ms", GtEq, I(8766 * 86_400_000))
    );
    assert_eq!(p("tm < TIME '01:00:00.5'"), cmp("tm", Lt, I(3_600_500)));
}

#[test]
fn strings_binary_bool() {
    assert_eq!(p("s = 'it''s'"), cmp("s", Eq, By(b"it's".to_vec())));
    assert_eq!(p("b = X'0A0B'"), cmp("b", Eq, By(vec![10, 11])));
    assert_eq!(p("b >= 'ab'"), cmp("b", GtEq, By(b"ab".to_vec())));
    assert_eq!(p("flag"), cmp("flag", Eq, B(true)));
    assert_eq!(p("NOT flag"), cmp("flag", Eq, B(false)));
    assert_eq!(p("flag = FALSE"), cmp("flag", Eq, B(false)));
    assert_eq!(p("flag IS TRUE"), cmp("flag", Eq, B(true)));
    assert_eq!(
        p("flag IS NOT TRUE"),
        Predicate::Or(vec![cmp("flag", Eq, B(false)), is_null("flag")])
    );
    assert_eq!(p("NOT (flag IS NOT FALSE)"), cmp("flag", Eq, B(false)));
}

#[test]
fn between_in_null_like() {
    assert_eq!(
        p("i32 BETWEEN 1 AND 10"),
        Predicate::And(vec![cmp("i32", GtEq, I(1)), cmp("i32", LtEq, I(10))])
    );
    assert_eq!(
        p("i32 NOT BETWEEN 1 AND 10"),
        Predicate::Or(vec![cmp("i32", Lt, I(1)), cmp("i32", Gt, I(10))])
    );
    assert_eq!(
        p("i32 IN (3, 1, NULL, 1)"),
        Predicate::Leaf(Leaf {
            column: idx("i32"),
            op: LeafOp::In {
                values: vec![I(1), I(3)],
                negated: false
            }
        })
    );
    assert_eq!(p("i32 IN (1, NULL)"), cmp("i32", Eq, I(1)));
    assert_eq!(p("i32 NOT IN (1, NULL)"), Predicate::False);
    assert_eq!(p("i32 NOT IN (1, 2.5)"), cmp("i32", NotEq, I(1)));
    assert_eq!(p("i32 IN (2.5)"), Predicate::False);
    assert_eq!(
        p("NOT i32 IN (1, 2)"),
        Predicate::Leaf(Leaf {
            column: idx("i32"),
            op: LeafOp::In {
                values: vec![I(1), I(2)],
                negated: true
            }
        })
    );
    assert_eq!(p("i32 = NULL"), Predicate::False);
    assert_eq!(p("NOT (i32 <> NULL)"), Predicate::False);
    assert_eq!(p("i32 IS NULL"), is_null("i32"));
    assert_eq!(p("NOT i32 IS NULL"), not_null("i32"));
    assert_eq!(p("i32 > 1 OR NULL"), cmp("i32", Gt, I(1)));
    assert_eq!(p("i32 > 1 AND TRUE"), cmp("i32", Gt, I(1)));
    let like = |pat: &str, esc: Option<char>, negated: bool| {
        Predicate::Leaf(Leaf {
            column: idx("s"),
            op: LeafOp::Like {
                pattern: LikePattern::new(pat, esc).unwrap(),
                negated,
            },
        })
    };
    assert_eq!(p("s LIKE 'a%'"), like("a%", None, false));
    assert_eq!(
        p("s NOT LIKE 'a!%%' ESCAPE '!'"),
        like("a!%%", Some('!'), true)
    );
    assert_eq!(p("NOT (s NOT LIKE '%x')"), like("%x", None, false));
}

#[test]
fn implied_predicates_drop_only_what_weakens() {
    let implied = |sql: &str| parse_implied(sql, &test_columns());
    assert_eq!(implied("i32 > 1 AND zz = 3"), Some(cmp("i32", Gt, I(1))));
    assert_eq!(
        implied("zz = 3 AND NOT i32 <= 1"),
        Some(cmp("i32", Gt, I(1)))
    );
    assert_eq!(implied("i32 > 1 OR zz = 3"), None);
    assert_eq!(
        implied("NOT (i32 > 1 OR zz = 3)"),
        Some(cmp("i32", LtEq, I(1)))
    );
    assert_eq!(implied("NOT (i32 > 1 AND zz = 3)"), None);
    assert_eq!(
        implied("(i32 > 1 OR i64 = 2) AND zz AND i32 = 'x'"),
        Some(Predicate::Or(vec![
            cmp("i32", Gt, I(1)),
            cmp("i64", Eq, I(2))
        ]))
    );
    assert_eq!(implied("zz = 1"), None);
    assert_eq!(implied("i32 >"), None);
    assert_eq!(implied("i32 > 1 zz"), None);
}

#[test]
fn negation_normal_form() {
    assert_eq!(
        p("NOT (i32 > 5 AND (s = 'x' OR i64 IS NULL))"),
        Predicate::Or(vec![
            cmp("i32", LtEq, I(5)),
            Predicate::And(vec![cmp("s", NotEq, By(b"x".to_vec())), not_null("i64")]),
        ])
    );
    assert_eq!(
        p("i32 > 1 AND (i32 < 9 AND i64 = 2)"),
        Predicate::And(vec![
            cmp("i32", Gt, I(1)),
            cmp("i32", Lt, I(9)),
            cmp("i64", Eq, I(2))
        ])
    );
    assert_eq!(p("NOT NOT i32 = 1"), cmp("i32", Eq, I(1)));
}

#[test]
fn errors() {
    let e = err("foo = 1");
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(
        e.message
            .starts_with("unknown column 'foo' in predicate (columns: i8, u32,"),
        "{e}"
    );
    let e = err("i32 = 'abc'");
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert_eq!(
        e.message,
        "type mismatch: column 'i32' is INT32, literal 'abc' is a string"
    );
    let e = err("s = DATE '1994-01-01'");
    assert_eq!(
        e.message,
        "type mismatch: column 's' is STRING, literal DATE '1994-01-01' is a date"
    );
    let e = err("dt = 5");
    assert_eq!(
        e.message,
        "type mismatch: column 'dt' is DATE, literal 5 is a number"
    );
    let e = err("upper(s) = 'X'");
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert_eq!(e.message, "function call in predicate: `upper(s) = 'X'`");
    let e = err("i32 / 2 > 5");
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert_eq!(e.message, "arithmetic in predicate: `i32 / 2 > 5`");
    let e = err("i32 + 1");
    assert_eq!(e.message, "arithmetic in predicate: `i32 + 1`");
    let e = err("dt < i32");
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert_eq!(
        e.message,
        "type mismatch: cannot compare column 'dt' (DATE) with column 'i32' (INT32)"
    );
    let e = err("dt + 1 > dt");
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert_eq!(e.message, "arithmetic on column 'dt' (DATE)");
    let e = err("s < i32 + 1");
    assert_eq!(
        e.message,
        "type mismatch: cannot compare column 's' (STRING) with `i32 + 1` (a number)"
    );
    let e = err("i32 + 'a' > i64");
    assert_eq!(
        e.message,
        "a string in arithmetic or a comparison between columns: `(i32 + 'a') > i64`"
    );
    let e = err("1 + 2 > 3");
    assert_eq!(
        e.message,
        "comparison without a column in predicate: `(1 + 2) > 3`"
    );
    let e = err("i32 IN (SELECT 1)");
    assert_eq!(e.kind, ErrorKind::Unsupported);
    let e = err("g.x = 1");
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert_eq!(
        e.message,
        "predicate on column 'g.x' of type INT32 (nested) is not supported"
    );
    let e = err("i96 = 1");
    assert!(
        e.message
            .starts_with("predicate on column 'i96' of type INT96"),
        "{e}"
    );
    assert_eq!(p("dup = 1"), cmp("dup", Eq, I(1)), "exact match wins");
    let e = err("Dup = 1");
    assert!(
        e.message
            .contains("ambiguous column 'Dup' in predicate (matches: dup, DUP)"),
        "{e}"
    );
    let e = err("i32 = ");
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(e.message.starts_with("cannot parse predicate"), "{e}");
    let e = err("i32 = 1 i64");
    assert!(e.message.contains("unexpected"), "{e}");
    assert!(!err("i32 > 1 AND\n foo(").to_string().contains('\n'));
    let e = err("i32 LIKE 'a%'");
    assert!(
        e.message
            .starts_with("type mismatch: column 'i32' is INT32"),
        "{e}"
    );
    assert!(err("i32").message.contains("cannot be used as a condition"));
}

#[test]
fn renders() {
    let cols = test_columns();
    let r = |sql: &str| render(&p(sql), &cols);
    assert_eq!(
        r("d92 > 1.5 AND (dt = DATE '1994-01-01' OR s LIKE 'a%')"),
        "d92 > 1.50 AND (dt = DATE '1994-01-01' OR s LIKE 'a%')"
    );
    assert_eq!(
        r("ts_ms >= '1994-01-01 12:00:00.5' OR b = X'00FF'"),
        "ts_ms >= TIMESTAMPTZ '1994-01-01 12:00:00.500' OR b = X'00FF'"
    );
    assert_eq!(
        r("i32 NOT IN (1, 2) AND f64 IS NOT NULL"),
        "i32 NOT IN (1, 2) AND f64 IS NOT NULL"
    );
    assert_eq!(r("d203 = -0.5"), "d203 = -0.500");
}
