//! What tamis knows about each leaf column: its place in the schema and the domain its values are
//! compared in.
//!
//! Predicates are bound once to a [`LeafColumn`]; literals are converted into the column's
//! [`Domain`] at bind time, so the hot loops compare plain integers, floats or bytes.

use parquet::basic::{ConvertedType, LogicalType, TimeUnit, Type as PhysicalType};
use parquet::schema::types::{ColumnDescPtr, SchemaDescriptor};

/// The unit of a time or timestamp column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Millis,
    Micros,
    Nanos,
}

impl Unit {
    /// Ticks of this unit in one second.
    pub fn per_second(self) -> i64 {
        match self {
            Unit::Millis => 1_000,
            Unit::Micros => 1_000_000,
            Unit::Nanos => 1_000_000_000,
        }
    }
}

/// The logical meaning of a leaf column, as far as predicates care.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogicalKind {
    Boolean,
    /// Integer of `bits` bits, signed or not (plain INT32/INT64 are signed 32/64).
    Integer {
        bits: u8,
        signed: bool,
    },
    Float16,
    Float32,
    Float64,
    Decimal {
        precision: i32,
        scale: i32,
    },
    /// Days since 1970-01-01.
    Date,
    Time {
        unit: Unit,
    },
    Timestamp {
        unit: Unit,
        utc: bool,
    },
    /// UTF-8 text (STRING, ENUM, JSON).
    String,
    /// Opaque bytes (BYTE_ARRAY without annotation, BSON, FIXED_LEN_BYTE_ARRAY, UUID).
    Binary,
    /// INT96 timestamps (deprecated) — readable, not filterable.
    Int96,
    /// INTERVAL and other types tamis reads but cannot compare.
    Opaque,
}

/// The value domain predicates on a column are evaluated in. Literals are converted to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Domain {
    Bool,
    /// Signed integers of any width, dates, times, timestamps, decimals on INT32/INT64 (unscaled).
    Int,
    /// Unsigned integers (stored as INT32/INT64 bit patterns).
    UInt,
    /// FLOAT, DOUBLE and FLOAT16, compared with NaN greatest and -0.0 = 0.0.
    Float,
    /// Decimals on FIXED_LEN_BYTE_ARRAY / BYTE_ARRAY: big-endian two's complement, unscaled.
    Decimal,
    /// Byte strings compared bytewise (UTF-8 bytewise order is code point order).
    Bytes,
    /// Cannot be filtered on.
    None,
}

/// One leaf (primitive) column of the file schema.
#[derive(Debug, Clone)]
pub struct LeafColumn {
    /// Index among the file's leaf columns (the column chunk index in each row group).
    pub index: usize,
    /// Dotted path, e.g. `a.b.c`; for top-level columns just the name.
    pub path: String,
    /// Index of the top-level field this leaf belongs to.
    pub root: usize,
    pub physical: PhysicalType,
    /// Byte width of FIXED_LEN_BYTE_ARRAY values (0 otherwise).
    pub type_length: usize,
    pub logical: LogicalKind,
    pub max_def: i16,
    pub max_rep: i16,
    /// True if the leaf sits below a group (struct, list or map): projected but not filterable.
    pub nested: bool,
    pub descr: ColumnDescPtr,
}

impl LeafColumn {
    /// The domain predicates on this column are evaluated in.
    pub fn domain(&self) -> Domain {
        if self.nested {
            return Domain::None;
        }
        match (&self.logical, self.physical) {
            (LogicalKind::Boolean, _) => Domain::Bool,
            (LogicalKind::Integer { signed: false, .. }, _) => Domain::UInt,
            (LogicalKind::Integer { .. }, _) => Domain::Int,
            (LogicalKind::Float16 | LogicalKind::Float32 | LogicalKind::Float64, _) => {
                Domain::Float
            }
            (LogicalKind::Decimal { .. }, PhysicalType::INT32 | PhysicalType::INT64) => Domain::Int,
            (LogicalKind::Decimal { .. }, _) => Domain::Decimal,
            (LogicalKind::Date | LogicalKind::Time { .. } | LogicalKind::Timestamp { .. }, _) => {
                Domain::Int
            }
            (LogicalKind::String | LogicalKind::Binary, _) => Domain::Bytes,
            (LogicalKind::Int96 | LogicalKind::Opaque, _) => Domain::None,
        }
    }

    /// Whether the column is nullable at the leaf (flat columns only).
    pub fn optional(&self) -> bool {
        self.max_def > 0
    }
}

/// All leaf columns of a schema, in column-chunk order.
pub(crate) fn leaf_columns(schema: &SchemaDescriptor) -> Vec<LeafColumn> {
    (0..schema.num_columns())
        .map(|i| {
            let descr = schema.column(i);
            let path = descr.path().parts().join(".");
            let nested = descr.path().parts().len() > 1 || descr.max_rep_level() > 0;
            LeafColumn {
                index: i,
                path,
                root: schema.get_column_root_idx(i),
                physical: descr.physical_type(),
                type_length: descr.type_length().max(0) as usize,
                logical: logical_kind(&descr),
                max_def: descr.max_def_level(),
                max_rep: descr.max_rep_level(),
                nested,
                descr,
            }
        })
        .collect()
}

fn unit(u: &TimeUnit) -> Unit {
    match u {
        TimeUnit::MILLIS => Unit::Millis,
        TimeUnit::MICROS => Unit::Micros,
        _ => Unit::Nanos,
    }
}

/// Derives the logical kind from the logical type, else the legacy converted type, else the
/// physical type.
fn logical_kind(descr: &ColumnDescPtr) -> LogicalKind {
    use LogicalKind as K;
    let physical = descr.physical_type();
    if let Some(lt) = descr.logical_type_ref() {
        match lt {
            LogicalType::String | LogicalType::Enum | LogicalType::Json => return K::String,
            LogicalType::Bson | LogicalType::Uuid => return K::Binary,
            LogicalType::Decimal(d) => {
                return K::Decimal {
                    precision: d.precision,
                    scale: d.scale,
                };
            }
            LogicalType::Date => return K::Date,
            LogicalType::Time(t) => {
                return K::Time {
                    unit: unit(&t.unit),
                }
            }
            LogicalType::Timestamp(t) => {
                return K::Timestamp {
                    unit: unit(&t.unit),
                    utc: t.is_adjusted_to_u_t_c,
                };
            }
            LogicalType::Integer(i) => {
                return K::Integer {
                    bits: i.bit_width as u8,
                    signed: i.is_signed,
                };
            }
            LogicalType::Float16 => return K::Float16,
            LogicalType::Unknown => {}
            _ => return K::Opaque,
        }
    }
    match descr.converted_type() {
        ConvertedType::UTF8 | ConvertedType::ENUM | ConvertedType::JSON => return K::String,
        ConvertedType::BSON => return K::Binary,
        ConvertedType::DECIMAL => {
            return K::Decimal {
                precision: descr.type_precision(),
                scale: descr.type_scale(),
            };
        }
        ConvertedType::DATE => return K::Date,
        ConvertedType::TIME_MILLIS => return K::Time { unit: Unit::Millis },
        ConvertedType::TIME_MICROS => return K::Time { unit: Unit::Micros },
        ConvertedType::TIMESTAMP_MILLIS => {
            return K::Timestamp {
                unit: Unit::Millis,
                utc: true,
            }
        }
        ConvertedType::TIMESTAMP_MICROS => {
            return K::Timestamp {
                unit: Unit::Micros,
                utc: true,
            }
        }
        ConvertedType::UINT_8 => {
            return K::Integer {
                bits: 8,
                signed: false,
            }
        }
        ConvertedType::UINT_16 => {
            return K::Integer {
                bits: 16,
                signed: false,
            }
        }
        ConvertedType::UINT_32 => {
            return K::Integer {
                bits: 32,
                signed: false,
            }
        }
        ConvertedType::UINT_64 => {
            return K::Integer {
                bits: 64,
                signed: false,
            }
        }
        ConvertedType::INT_8 => {
            return K::Integer {
                bits: 8,
                signed: true,
            }
        }
        ConvertedType::INT_16 => {
            return K::Integer {
                bits: 16,
                signed: true,
            }
        }
        ConvertedType::INT_32 => {
            return K::Integer {
                bits: 32,
                signed: true,
            }
        }
        ConvertedType::INT_64 => {
            return K::Integer {
                bits: 64,
                signed: true,
            }
        }
        ConvertedType::INTERVAL => return K::Opaque,
        _ => {}
    }
    match physical {
        PhysicalType::BOOLEAN => K::Boolean,
        PhysicalType::INT32 => K::Integer {
            bits: 32,
            signed: true,
        },
        PhysicalType::INT64 => K::Integer {
            bits: 64,
            signed: true,
        },
        PhysicalType::INT96 => K::Int96,
        PhysicalType::FLOAT => K::Float32,
        PhysicalType::DOUBLE => K::Float64,
        PhysicalType::BYTE_ARRAY | PhysicalType::FIXED_LEN_BYTE_ARRAY => K::Binary,
    }
}
