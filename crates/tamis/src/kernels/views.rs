//! Arrow string and binary views over decoded values, for scans that output views
//! (`Scan::string_views`). The values stay in the one buffer they were decoded into; each row
//! gets a 16-byte view of its value (inline up to 12 bytes), made in one pass over the
//! offsets. Building a `Utf8` array and casting it would write the offsets, then read them
//! again to write the views.

use arrow::array::builder::make_view;
use arrow::array::{ArrayRef, BinaryViewArray, StringViewArray};
use arrow::buffer::{Buffer, NullBuffer, ScalarBuffer};
use arrow::error::ArrowError;
use std::sync::Arc;

/// The view array of the values `offsets` delimits in `data` (value `i` is
/// `data[offsets[i]..offsets[i + 1]]`), spread over the valid rows of `nulls` when given (a
/// null row gets an empty view): a `Utf8View` when `utf8`, else a `BinaryView`.
///
/// An error when `data` is longer than a view's 32-bit offset addresses (the caller checks
/// first), the offsets do not lie in `data` in order, the values do not fill the
/// valid rows, or (`utf8`) a value is not valid UTF-8.
pub fn views(
    offsets: &[usize],
    data: Vec<u8>,
    nulls: Option<NullBuffer>,
    utf8: bool,
) -> Result<ArrayRef, ArrowError> {
    if u32::try_from(data.len()).is_err() {
        return Err(ArrowError::InvalidArgumentError(
            "over 4 GiB of values for one view buffer".to_string(),
        ));
    }
    let invalid = |what: &str| ArrowError::InvalidArgumentError(what.to_string());
    let values = offsets.len().saturating_sub(1);
    let ordered = offsets.first().is_none_or(|&o| o == 0)
        && offsets.last().is_none_or(|&o| o <= data.len())
        && offsets.windows(2).all(|w| w[0] <= w[1]);
    if !ordered {
        return Err(invalid("value offsets out of order or beyond the values"));
    }
    if utf8 {
        // The whole buffer is valid UTF-8 and every value starts on a character boundary (not
        // on a continuation byte), so every value is valid UTF-8 on its own.
        std::str::from_utf8(&data).map_err(|e| invalid(&format!("invalid UTF-8: {e}")))?;
        let split = offsets
            .iter()
            .any(|&o| data.get(o).is_some_and(|&b| (0x80..0xC0).contains(&b)));
        if split {
            return Err(invalid("a value starts inside a UTF-8 character"));
        }
    }
    let view = |w: &[usize]| make_view(&data[w[0]..w[1]], 0, w[0] as u32);
    let views: Vec<u128> = match &nulls {
        None => offsets.windows(2).map(view).collect(),
        Some(n) if n.len() - n.null_count() == values => {
            let mut it = offsets.windows(2);
            n.iter()
                .map(|valid| match valid {
                    true => it.next().map_or(0, view),
                    false => 0,
                })
                .collect()
        }
        Some(_) => return Err(invalid("value count does not match the rows")),
    };
    let views = ScalarBuffer::from(views);
    let buffers: Arc<[Buffer]> = Arc::from([Buffer::from_vec(data)]);
    // SAFETY: every view was made by `make_view` from `data[a..b]` with offset `a`, where
    // `0 <= a <= b <= data.len() <= u32::MAX` (checked above), in buffer 0, which is `data`;
    // an empty view (a null row) is inline and refers to no buffer. For strings, each value is
    // valid UTF-8 (checked above). There are as many views as rows of `nulls`.
    let array: ArrayRef = unsafe {
        if utf8 {
            Arc::new(StringViewArray::new_unchecked(views, buffers, nulls))
        } else {
            Arc::new(BinaryViewArray::new_unchecked(views, buffers, nulls))
        }
    };
    Ok(array)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, BinaryArray, StringArray};
    use arrow::datatypes::DataType;
    use proptest::prelude::*;

    /// The reference: a plain array of the same rows, cast to views by Arrow.
    fn reference(values: &[Option<Vec<u8>>], utf8: bool) -> ArrayRef {
        if utf8 {
            let s: StringArray = values
                .iter()
                .map(|v| v.as_ref().map(|b| String::from_utf8(b.clone()).unwrap()))
                .collect();
            arrow::compute::cast(&s, &DataType::Utf8View).unwrap()
        } else {
            let b: BinaryArray = values.iter().map(|v| v.as_deref()).collect();
            arrow::compute::cast(&b, &DataType::BinaryView).unwrap()
        }
    }

    fn built(values: &[Option<Vec<u8>>], utf8: bool) -> Result<ArrayRef, ArrowError> {
        let mut offsets = vec![0];
        let mut data = Vec::new();
        for v in values.iter().flatten() {
            data.extend_from_slice(v);
            offsets.push(data.len());
        }
        let validity: Vec<bool> = values.iter().map(Option::is_some).collect();
        let nulls = validity
            .contains(&false)
            .then(|| NullBuffer::from(validity));
        views(&offsets, data, nulls, utf8)
    }

    /// Strings of 0–40 characters, some multi-byte, so values straddle the 12-byte inline
    /// limit and character boundaries.
    fn string() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::sample::select(vec!["a", "é", "€", "𝄞", "z"]), 0..16)
            .prop_map(|parts| parts.concat().into_bytes())
    }

    proptest! {
        #[test]
        fn string_views_equal_arrows_cast(values in prop::collection::vec(prop::option::weighted(0.8, string()), 0..70)) {
            let got = built(&values, true).unwrap();
            let want = reference(&values, true);
            prop_assert_eq!(got.as_ref(), want.as_ref());
        }

        #[test]
        fn binary_views_equal_arrows_cast(values in prop::collection::vec(prop::option::weighted(0.8, prop::collection::vec(any::<u8>(), 0..30)), 0..70)) {
            let got = built(&values, false).unwrap();
            let want = reference(&values, false);
            prop_assert_eq!(got.as_ref(), want.as_ref());
        }
    }

    #[test]
    fn edges() {
        // Empty, all null, exactly 12 and 13 bytes, and the empty string.
        for values in [
            vec![],
            vec![None, None],
            vec![
                Some(b"twelve bytes".to_vec()),
                Some(b"thirteen byte".to_vec()),
            ],
            vec![Some(vec![]), None, Some(b"x".to_vec())],
        ] {
            let got = built(&values, true).unwrap();
            assert_eq!(got.as_ref(), reference(&values, true).as_ref());
            assert_eq!(got.len(), values.len());
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        // Invalid UTF-8, and valid bytes cut inside a character.
        let bad = vec![Some(vec![0xff, b'a'])];
        assert!(built(&bad, true).is_err());
        assert!(built(&bad, false).is_ok());
        let euro = "€".as_bytes();
        let cut = views(&[0, 1, 3], euro.to_vec(), None, true);
        assert!(cut.is_err());
        // Offsets beyond the data or decreasing, or not as many values as valid rows.
        assert!(views(&[0, 4], b"abc".to_vec(), None, false).is_err());
        assert!(views(&[0, 2, 1, 3], b"abc".to_vec(), None, false).is_err());
        let nulls = Some(NullBuffer::from(vec![true, false]));
        assert!(views(&[0, 1, 3], b"abc".to_vec(), nulls, false).is_err());
    }
}
