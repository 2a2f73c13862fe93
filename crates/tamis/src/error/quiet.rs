//! Panics caught and reported as errors, without Rust's panic message on the terminal.
//!
//! A row-group task that panics becomes an internal error naming the file and row group; the
//! default panic hook would also print the panic (and a backtrace) to stderr, under the error
//! the user already gets. A hook installed once stays quiet while a thread runs inside
//! [`catch`], and hands every other panic to the hook that was there before.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// How many [`catch`] calls this thread is inside.
    static CATCHING: Cell<usize> = const { Cell::new(0) };
    /// Where the last panic caught on this thread was raised (for the error, as the hook would
    /// have printed it).
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Runs `f`; a panic inside it is returned as its message instead of unwinding further, and is
/// not printed.
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if CATCHING.with(Cell::get) == 0 {
                previous(info);
            } else if let Some(l) = info.location() {
                let at = format!("{}:{}", l.file(), l.line());
                LOCATION.with(|c| *c.borrow_mut() = Some(at));
            }
        }));
    });
    CATCHING.with(|c| c.set(c.get() + 1));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(c.get() - 1));
    result.map_err(|payload| match LOCATION.with(|c| c.borrow_mut().take()) {
        Some(at) => format!("{} at {at}", message(payload.as_ref())),
        None => message(payload.as_ref()),
    })
}

/// The text a panic was raised with.
fn message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caught_panic_returns_its_message() {
        assert_eq!(catch(|| 7), Ok(7));
        let e = catch(|| -> i32 { panic!("index {} out of range", 9) }).unwrap_err();
        assert!(e.starts_with("index 9 out of range at "), "{e}");
        assert!(e.contains("quiet.rs:"), "{e}");
        // Nested: the outer catch still catches after the inner one returned.
        let outer = catch(|| {
            let inner = catch(|| panic!("inner"));
            assert!(inner.unwrap_err().starts_with("inner at "));
            panic!("outer")
        });
        assert!(outer.unwrap_err().starts_with("outer at "));
        CATCHING.with(|c| assert_eq!(c.get(), 0));
    }
}
