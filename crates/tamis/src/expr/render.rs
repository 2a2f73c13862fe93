//! Bound predicate → readable SQL, in each column's own terms (for explain output).

use chrono::{NaiveDate, NaiveTime};

use super::literal::nanos_per;
use super::{Leaf, LeafOp, Predicate, Scalar};
use crate::schema::{LeafColumn, LogicalKind};

/// A readable SQL-like form of a bound predicate (for explain output).
pub(crate) fn render(p: &Predicate, columns: &[LeafColumn]) -> String {
    match p {
        Predicate::True => "TRUE".into(),
        Predicate::False => "FALSE".into(),
        Predicate::Leaf(l) => render_leaf(l, columns),
        Predicate::Compare(c) => c.render(columns),
        Predicate::And(c) | Predicate::Or(c) => {
            let and = matches!(p, Predicate::And(_));
            let parts: Vec<String> = c
                .iter()
                .map(|x| match x {
                    Predicate::Or(_) if and => format!("({})", render(x, columns)),
                    Predicate::And(_) if !and => format!("({})", render(x, columns)),
                    _ => render(x, columns),
                })
                .collect();
            parts.join(if and { " AND " } else { " OR " })
        }
    }
}

fn render_leaf(l: &Leaf, columns: &[LeafColumn]) -> String {
    let Some(col) = columns.iter().find(|c| c.index == l.column) else {
        return format!("#{} {:?}", l.column, l.op);
    };
    let name = &col.path;
    match &l.op {
        LeafOp::Cmp(op, s) => format!("{name} {} {}", op.sql(), render_scalar(col, s)),
        LeafOp::In { values, negated } => {
            let vals: Vec<String> = values.iter().map(|s| render_scalar(col, s)).collect();
            format!(
                "{name} {}IN ({})",
                if *negated { "NOT " } else { "" },
                vals.join(", ")
            )
        }
        LeafOp::IsNull { negated } => {
            format!("{name} IS {}NULL", if *negated { "NOT " } else { "" })
        }
        LeafOp::InKeys(f) => format!("{name} IN KEYS({}: {} keys)", f.label(), f.keys()),
        LeafOp::Like { pattern, negated } => {
            let esc = pattern
                .escape()
                .map(|c| format!(" ESCAPE {}", quote(&c.to_string())));
            format!(
                "{name} {}LIKE {}{}",
                if *negated { "NOT " } else { "" },
                quote(&pattern.pattern),
                esc.unwrap_or_default()
            )
        }
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A literal in the column's own terms (dates as dates, decimals scaled).
pub(crate) fn render_scalar(col: &LeafColumn, s: &Scalar) -> String {
    let decimal = |v: i128, scale: i32| -> String {
        if scale <= 0 {
            return v.to_string();
        }
        let digits = v.unsigned_abs().to_string();
        let scale = scale as usize;
        let padded = format!("{digits:0>width$}", width = scale + 1);
        let (i, f) = padded.split_at(padded.len() - scale);
        format!("{}{i}.{f}", if v < 0 { "-" } else { "" })
    };
    match (s, &col.logical) {
        (Scalar::Int(v), LogicalKind::Decimal { scale, .. }) => decimal(*v as i128, *scale),
        (Scalar::Decimal(v), LogicalKind::Decimal { scale, .. }) => decimal(*v, *scale),
        (Scalar::Int(v), LogicalKind::Date) => {
            match NaiveDate::default().checked_add_signed(chrono::TimeDelta::days(*v)) {
                Some(d) => format!("DATE '{d}'"),
                None => v.to_string(),
            }
        }
        (Scalar::Int(v), LogicalKind::Timestamp { unit, utc }) => {
            let per = unit.per_second();
            let (secs, sub) = (v.div_euclid(per), v.rem_euclid(per));
            let nanos = (sub as i128 * nanos_per(*unit)) as u32;
            match chrono::DateTime::from_timestamp(secs, nanos) {
                Some(t) => {
                    let t = t.naive_utc().format("%Y-%m-%d %H:%M:%S%.f");
                    format!("TIMESTAMP{} '{t}'", if *utc { "TZ" } else { "" })
                }
                None => v.to_string(),
            }
        }
        (Scalar::Int(v), LogicalKind::Time { unit }) => {
            let nanos = *v as i128 * nanos_per(*unit);
            let secs = nanos.div_euclid(1_000_000_000) as u32;
            let sub = nanos.rem_euclid(1_000_000_000) as u32;
            match NaiveTime::from_num_seconds_from_midnight_opt(secs, sub) {
                Some(t) => format!("TIME '{}'", t.format("%H:%M:%S%.f")),
                None => v.to_string(),
            }
        }
        (Scalar::Int(v), _) => v.to_string(),
        (Scalar::UInt(v), _) => v.to_string(),
        (Scalar::Decimal(v), _) => v.to_string(),
        (Scalar::Bool(b), _) => if *b { "TRUE" } else { "FALSE" }.into(),
        (Scalar::Float(f), _) => {
            if f.is_finite() {
                format!("{f:?}")
            } else {
                format!("'{f}'::DOUBLE")
            }
        }
        (Scalar::Bytes(b), LogicalKind::String) => match std::str::from_utf8(b) {
            Ok(s) => quote(s),
            Err(_) => hex(b),
        },
        (Scalar::Bytes(b), _) => match std::str::from_utf8(b) {
            Ok(s) if s.chars().all(|c| !c.is_control()) => quote(s),
            _ => hex(b),
        },
    }
}

fn hex(b: &[u8]) -> String {
    let h: String = b.iter().map(|x| format!("{x:02X}")).collect();
    format!("X'{h}'")
}
