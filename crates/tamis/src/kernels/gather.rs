//! Gathers of dictionary entries by code into an Arrow array, for dense projections of
//! dictionary columns kept as codes (`column::project`).

use arrow::array::{Array, GenericByteArray, UInt32Array};
use arrow::buffer::{OffsetBuffer, ScalarBuffer};
use arrow::datatypes::ByteArrayType;

/// Entries of at most this many bytes are copied as one fixed-size block.
const WIDE: usize = 16;

/// Arrow's `take` of `entries` by `indices`, for entries of at most 16 bytes (flags, statuses,
/// modes, short codes): each value is one fixed 16-byte copy of its zero-padded entry and the
/// end moves by the entry's length, where `take` copies each value with a call sized at run
/// time, and no value is validated again. `None` when an entry is longer or NULL (dictionaries
/// have none), an index is out of range, or the values outgrow 32-bit offsets.
pub fn take_short<T: ByteArrayType<Offset = i32>>(
    entries: &GenericByteArray<T>,
    indices: &UInt32Array,
) -> Option<GenericByteArray<T>> {
    if entries.null_count() > 0 {
        return None;
    }
    // Each entry zero-padded, and its length.
    let mut table = Vec::with_capacity(entries.len());
    for i in 0..entries.len() {
        let e: &[u8] = entries.value(i).as_ref();
        let mut padded = [0u8; WIDE];
        padded.get_mut(..e.len())?.copy_from_slice(e);
        table.push((padded, e.len()));
    }
    let longest = table.iter().map(|t| t.1).max().unwrap_or(0);
    let bound = indices.len().checked_mul(longest)?.checked_add(WIDE)?;
    if bound > i32::MAX as usize {
        return None;
    }
    let mut data = vec![0u8; bound];
    let mut offsets = vec![0i32; indices.len() + 1];
    let mut end = 0usize;
    let codes = indices.values();
    match indices.nulls() {
        None => {
            for (o, &code) in offsets[1..].iter_mut().zip(codes.iter()) {
                let (padded, len) = table.get(code as usize)?;
                data.get_mut(end..end + WIDE)?.copy_from_slice(padded);
                end += len;
                *o = end as i32;
            }
        }
        Some(nulls) => {
            for ((o, &code), valid) in offsets[1..].iter_mut().zip(codes.iter()).zip(nulls) {
                if valid {
                    let (padded, len) = table.get(code as usize)?;
                    data.get_mut(end..end + WIDE)?.copy_from_slice(padded);
                    end += len;
                }
                *o = end as i32;
            }
        }
    }
    data.truncate(end);
    // SAFETY: the offsets start at 0, never decrease (each step adds an entry's length) and end
    // at `data.len()`; value `i` is exactly one entry of `entries` (or empty), and the entries
    // are values of a `GenericByteArray<T>`, so each satisfies `T`'s invariant (valid UTF-8 for
    // strings). A concatenation of valid UTF-8 strings is valid UTF-8, and every offset falls
    // between two entries, so on a character boundary. The null buffer is the indices' own, of
    // `indices.len()` rows, as many as the offsets describe.
    let array = unsafe {
        let offsets = OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets));
        GenericByteArray::<T>::new_unchecked(offsets, data.into(), indices.nulls().cloned())
    };
    Some(array)
}

#[cfg(test)]
mod tests {
    use arrow::array::{Array, BinaryArray, StringArray, UInt32Array};
    use arrow::compute::take;
    use proptest::prelude::*;

    use super::take_short;

    proptest! {
        /// The same array as Arrow's `take`: every entry length from 0 to 16 bytes (multi-byte
        /// characters included), null indices, no indices.
        #[test]
        fn matches_arrows_take(
            entries in prop::collection::vec("[a-zé€😀]{0,4}".prop_map(Some), 1..40),
            picks in prop::collection::vec((any::<u32>(), any::<bool>()), 0..300),
            with_nulls in any::<bool>(),
        ) {
            let strings: StringArray = entries.iter().map(|e| e.as_deref()).collect();
            let indices: UInt32Array = picks
                .iter()
                .map(|&(c, v)| (v || !with_nulls).then_some(c % entries.len() as u32))
                .collect();
            let want = take(&strings, &indices, None).unwrap();
            let got = take_short(&strings, &indices).unwrap();
            got.to_data().validate_full().unwrap();
            prop_assert_eq!(&got, want.as_any().downcast_ref::<StringArray>().unwrap());

            let bytes: BinaryArray = entries.iter().map(|e| e.as_deref().map(str::as_bytes)).collect();
            let want = take(&bytes, &indices, None).unwrap();
            let got = take_short(&bytes, &indices).unwrap();
            prop_assert_eq!(&got, want.as_any().downcast_ref::<BinaryArray>().unwrap());
        }
    }

    #[test]
    fn declines_long_entries_and_bad_indices() {
        let long = StringArray::from(vec!["a", "seventeen bytes!!"]);
        assert!(take_short(&long, &UInt32Array::from(vec![0u32])).is_none());
        let short = StringArray::from(vec!["a", "b"]);
        assert!(take_short(&short, &UInt32Array::from(vec![0u32, 2])).is_none());
        let empty = take_short(&short, &UInt32Array::from(Vec::<u32>::new())).unwrap();
        assert_eq!(empty.len(), 0);
        let with_null = StringArray::from(vec![Some("a"), None]);
        assert!(take_short(&with_null, &UInt32Array::from(vec![0u32])).is_none());
    }
}
