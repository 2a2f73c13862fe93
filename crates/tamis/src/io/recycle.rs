//! Buffers of dropped pages and reads, handed to the next ones.
//!
//! A fresh multi-megabyte buffer costs a page fault per 4 KiB (or a zeroed huge page) each
//! time the allocator has returned its memory to the system, which it does between row groups:
//! 12–18% of a warm scan of the `selectivity` suite's files was the kernel zeroing pages for
//! chunk reads and decompressed pages. A page's or a read's `Bytes` ([`bytes`]) gives its buffer
//! back here when the last reference is dropped, and [`take`] lends it to the next one of a
//! similar size: memory already mapped and written.

use std::sync::Mutex;

use bytes::Bytes;

/// Buffers waiting for the next pages or reads, at most [`POOL_BYTES`] in all: what a few row
/// groups' pages in flight take, so memory is not held beyond what the scan had in use.
static POOL: Mutex<Pool> = Mutex::new(Pool {
    buffers: Vec::new(),
    bytes: 0,
});
const POOL_BYTES: usize = 64 << 20;
const POOL_BUFFERS: usize = 256;

struct Pool {
    buffers: Vec<Vec<u8>>,
    /// The capacity of `buffers`, summed.
    bytes: usize,
}

/// A pooled buffer for `len` bytes: the smallest that holds them without wasting more than
/// their size again, its contents (up to its length) an earlier page's; `None` if none fits.
pub(crate) fn take(len: usize) -> Option<Vec<u8>> {
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    let fits = |b: &Vec<u8>| b.capacity() >= len && b.capacity() / 2 <= len.max(4096);
    let best = (0..pool.buffers.len())
        .filter(|&i| fits(&pool.buffers[i]))
        .min_by_key(|&i| pool.buffers[i].capacity())?;
    let buf = pool.buffers.swap_remove(best);
    pool.bytes -= buf.capacity();
    Some(buf)
}

/// `buf[..len]` as `Bytes` that give `buf` back to the pool when the last of them is dropped.
pub(crate) fn bytes(buf: Vec<u8>, len: usize) -> Bytes {
    debug_assert!(len <= buf.len());
    Bytes::from_owner(Recycled { buf, len })
}

struct Recycled {
    buf: Vec<u8>,
    len: usize,
}

impl AsRef<[u8]> for Recycled {
    fn as_ref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Drop for Recycled {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.buf);
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        if pool.buffers.len() < POOL_BUFFERS && pool.bytes + buf.capacity() <= POOL_BYTES {
            pool.bytes += buf.capacity();
            pool.buffers.push(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_buffer_is_lent_to_the_next_of_its_size() {
        // A size no other test uses, so that the buffer is found among a few takes.
        let len = 1_234_567;
        let mut first = take(len).unwrap_or_default();
        first.resize(len, 7);
        let at = first.as_ptr();
        drop(bytes(first, len));
        let taken: Vec<Vec<u8>> = (0..8).filter_map(|_| take(len)).collect();
        assert!(taken.iter().any(|b| b.as_ptr() == at));
        // Far smaller requests do not take a large buffer.
        assert!(take(1000).is_none_or(|b| b.capacity() < len));
    }

    #[test]
    fn bytes_show_only_their_length() {
        let mut buf = take(10).unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(b"0123456789");
        let b = bytes(buf, 4);
        assert_eq!(b.as_ref(), b"0123");
        assert_eq!(b.slice(1..3).as_ref(), b"12");
    }
}
