//! A `tamis.Dataset` as a table of the `datafusion` Python package, through DataFusion's
//! foreign table protocol (`datafusion-ffi`): the package calls
//! `__datafusion_table_provider__(session)` and receives a PyCapsule holding an
//! `FFI_TableProvider`. Filters cross as serialized expressions and reach the same provider as
//! `tamis.sql`, so pruning and selection pushdown work in the package's own queries.
//!
//! The FFI structs are stable only within one DataFusion major version: the Python half checks
//! the installed package against [`ffi_major`] before it asks for a capsule.

use std::sync::Arc;

use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::table_provider::FFI_TableProvider;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

const PROVIDER_CAPSULE: &std::ffi::CStr = c"datafusion_table_provider";
const CODEC_CAPSULE: &std::ffi::CStr = c"datafusion_logical_extension_codec";
const CODEC_METHOD: &str = "__datafusion_logical_extension_codec__";

/// The DataFusion major version whose FFI layout this build speaks.
pub fn ffi_major() -> u64 {
    datafusion_ffi::version()
}

/// The capsule `__datafusion_table_provider__` returns for `dataset`.
pub fn capsule<'py>(
    py: Python<'py>,
    dataset: &Arc<tamis::Dataset>,
    location: &str,
    session: Bound<'py, PyAny>,
    runtime_filters: bool,
) -> PyResult<Bound<'py, PyCapsule>> {
    let codec = logical_codec(session)?;
    let table = tamis_datafusion::TamisTable::from_dataset(Arc::clone(dataset), location)
        .map_err(|e| PyValueError::new_err(e.to_string()))?
        .with_runtime_filters(runtime_filters);
    // Filters cross (serialized by the codec): tamis answers Exact/Inexact/Unsupported for each,
    // as in-process. No runtime handle: the scan runs on threads of its own and its stream is
    // a channel any executor can poll.
    let provider = FFI_TableProvider::new_with_ffi_codec(Arc::new(table), true, None, codec);
    PyCapsule::new_with_value(py, provider, PROVIDER_CAPSULE)
}

/// The host's logical extension codec: `session` is a session context (with a method that
/// returns the codec's capsule) or the capsule itself, depending on where the package
/// registers the table.
fn logical_codec(session: Bound<'_, PyAny>) -> PyResult<FFI_LogicalExtensionCodec> {
    let capsule = if session.hasattr(CODEC_METHOD)? {
        session.getattr(CODEC_METHOD)?.call0()?
    } else {
        session
    };
    let capsule = capsule.cast::<PyCapsule>().map_err(|_| {
        PyTypeError::new_err(
            "datafusion passed no datafusion_logical_extension_codec capsule to \
             __datafusion_table_provider__",
        )
    })?;
    // Fails (a Python ValueError) unless the capsule carries exactly this name.
    let pointer = capsule.pointer_checked(Some(CODEC_CAPSULE))?;
    // SAFETY: a capsule named `datafusion_logical_extension_codec` holds an
    // `FFI_LogicalExtensionCodec` of the package's DataFusion major version, and the Python half
    // checked that it equals ours, so the layout matches. The pointer is used at once, while
    // `capsule` is alive and no Python code runs; the codec is copied out through its own FFI
    // clone function.
    let codec = unsafe { pointer.cast::<FFI_LogicalExtensionCodec>().as_ref() };
    Ok(codec.clone())
}
