//! Decoded physical values of one page or dictionary: dense (nulls are not stored; validity is
//! kept beside them as a bitmap).

/// Variable-length byte strings, Arrow-style: value `i` is `data[offsets[i]..offsets[i + 1]]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ByteArrays {
    pub offsets: Vec<usize>,
    pub data: Vec<u8>,
}

impl ByteArrays {
    pub fn new() -> Self {
        ByteArrays {
            offsets: vec![0],
            data: Vec::new(),
        }
    }
    pub fn with_capacity(values: usize, bytes: usize) -> Self {
        let mut offsets = Vec::with_capacity(values + 1);
        offsets.push(0);
        ByteArrays {
            offsets,
            data: Vec::with_capacity(bytes),
        }
    }
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn push(&mut self, value: &[u8]) {
        self.data.extend_from_slice(value);
        self.offsets.push(self.data.len());
    }
    pub fn get(&self, i: usize) -> &[u8] {
        &self.data[self.offsets[i]..self.offsets[i + 1]]
    }
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.offsets.windows(2).map(move |w| &self.data[w[0]..w[1]])
    }
}

/// Dense values of one physical type. FIXED_LEN_BYTE_ARRAY values are stored as `Bytes` too
/// (every value has the column's `type_length`).
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    Bool(Vec<bool>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    /// INT96 as its three little-endian 32-bit words.
    I96(Vec<[u32; 3]>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Bytes(ByteArrays),
}

impl Values {
    pub fn len(&self) -> usize {
        match self {
            Values::Bool(v) => v.len(),
            Values::I32(v) => v.len(),
            Values::I64(v) => v.len(),
            Values::I96(v) => v.len(),
            Values::F32(v) => v.len(),
            Values::F64(v) => v.len(),
            Values::Bytes(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Values {
    /// An empty value vector of the same variant.
    pub fn empty_like(&self) -> Values {
        match self {
            Values::Bool(_) => Values::Bool(Vec::new()),
            Values::I32(_) => Values::I32(Vec::new()),
            Values::I64(_) => Values::I64(Vec::new()),
            Values::I96(_) => Values::I96(Vec::new()),
            Values::F32(_) => Values::F32(Vec::new()),
            Values::F64(_) => Values::F64(Vec::new()),
            Values::Bytes(_) => Values::Bytes(ByteArrays::new()),
        }
    }

    /// The values at `indices` (each must be in bounds).
    pub fn take(&self, indices: &[u32]) -> Values {
        fn pick<T: Copy>(v: &[T], idx: &[u32]) -> Vec<T> {
            idx.iter().map(|&i| v[i as usize]).collect()
        }
        match self {
            Values::Bool(v) => Values::Bool(pick(v, indices)),
            Values::I32(v) => Values::I32(pick(v, indices)),
            Values::I64(v) => Values::I64(pick(v, indices)),
            Values::I96(v) => Values::I96(pick(v, indices)),
            Values::F32(v) => Values::F32(pick(v, indices)),
            Values::F64(v) => Values::F64(pick(v, indices)),
            Values::Bytes(b) => {
                let mut out = ByteArrays::with_capacity(indices.len(), 0);
                for &i in indices {
                    out.push(b.get(i as usize));
                }
                Values::Bytes(out)
            }
        }
    }

    /// Appends `other` (same variant) to `self`; `false` if the variants differ.
    pub fn append(&mut self, other: Values) -> bool {
        match (self, other) {
            (Values::Bool(a), Values::Bool(b)) => a.extend(b),
            (Values::I32(a), Values::I32(b)) => a.extend(b),
            (Values::I64(a), Values::I64(b)) => a.extend(b),
            (Values::I96(a), Values::I96(b)) => a.extend(b),
            (Values::F32(a), Values::F32(b)) => a.extend(b),
            (Values::F64(a), Values::F64(b)) => a.extend(b),
            (Values::Bytes(a), Values::Bytes(b)) => {
                let base = a.data.len();
                a.data.extend_from_slice(&b.data);
                a.offsets.extend(b.offsets[1..].iter().map(|&o| o + base));
            }
            _ => return false,
        }
        true
    }

    /// Room for `more` values (byte strings: at this vector's mean length so far), so that
    /// appending a column's pages copies each value once instead of regrowing.
    pub fn reserve(&mut self, more: usize) {
        match self {
            Values::Bool(v) => v.reserve(more),
            Values::I32(v) => v.reserve(more),
            Values::I64(v) => v.reserve(more),
            Values::I96(v) => v.reserve(more),
            Values::F32(v) => v.reserve(more),
            Values::F64(v) => v.reserve(more),
            Values::Bytes(b) => {
                let mean = b.data.len() / b.len().max(1);
                b.offsets.reserve(more);
                b.data.reserve(more.saturating_mul(mean));
            }
        }
    }
}
