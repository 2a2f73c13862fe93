//! One error type for the whole engine.
//!
//! Every error carries its category (what the caller can do about it) and a one-line message that
//! names the file, row group, column and what was wrong. Pruning fails open (a missing statistic
//! keeps the row group); decoding fails closed (a corrupt page is an error, never a panic).

use std::fmt;

pub(crate) mod quiet;

/// What went wrong, by what the caller can do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The file is not valid Parquet (bad footer, page header, levels, lengths, codes…).
    CorruptFile,
    /// Valid Parquet (or SQL) that tamis does not handle, e.g. encrypted files.
    Unsupported,
    /// The request is wrong: unknown column, bad predicate, type mismatch, bad option.
    InvalidArgument,
    /// The operating system failed us (missing file, permission, short read).
    Io,
    /// A header asked for more memory than the limits allow.
    ResourceLimit,
    /// A bug in tamis.
    Internal,
    /// The scan was stopped (`Canceller::cancel`, Ctrl-C in Python) before it ended.
    Cancelled,
}

impl ErrorKind {
    fn label(self) -> &'static str {
        match self {
            ErrorKind::CorruptFile => "corrupt file",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::InvalidArgument => "invalid argument",
            ErrorKind::Io => "I/O error",
            ErrorKind::ResourceLimit => "resource limit",
            ErrorKind::Internal => "internal error",
            ErrorKind::Cancelled => "cancelled",
        }
    }
}

/// Where in the data an error happened; each part is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// The file's path or URL.
    pub file: Option<String>,
    /// The row group's number in its file, from 0.
    pub row_group: Option<usize>,
    /// The column's dotted path (or its name in an option or a predicate).
    pub column: Option<String>,
    /// The data page's number in its column chunk, from 0.
    pub page: Option<usize>,
}

/// The tamis error: a category, a message and where it happened.
#[derive(Debug, Clone, thiserror::Error)]
pub struct Error {
    /// What the caller can do about it.
    pub kind: ErrorKind,
    /// What was wrong, without the place (see [`Error::context`]); `Display` shows both.
    pub message: String,
    /// Where it happened.
    pub context: Context,
    /// The operating system's error kind, for `Io` errors that came from one.
    pub io_kind: Option<std::io::ErrorKind>,
}

/// `Result` with tamis's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error of `kind`, without context.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            context: Context::default(),
            io_kind: None,
        }
    }
    /// A [`ErrorKind::CorruptFile`] error.
    pub fn corrupt(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::CorruptFile, message)
    }
    /// An [`ErrorKind::Unsupported`] error.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported, message)
    }
    /// An [`ErrorKind::InvalidArgument`] error.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }
    /// An [`ErrorKind::Internal`] error.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }
    /// A [`ErrorKind::ResourceLimit`] error.
    pub fn resource(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::ResourceLimit, message)
    }

    /// Adds the file name unless one is already set (the innermost context wins).
    pub fn in_file(mut self, file: impl fmt::Display) -> Self {
        self.context.file.get_or_insert_with(|| file.to_string());
        self
    }
    /// Adds the row group unless one is already set.
    pub fn in_row_group(mut self, row_group: usize) -> Self {
        self.context.row_group.get_or_insert(row_group);
        self
    }
    /// Adds the column unless one is already set.
    pub fn in_column(mut self, column: impl fmt::Display) -> Self {
        self.context
            .column
            .get_or_insert_with(|| column.to_string());
        self
    }
    /// Adds the page unless one is already set.
    pub fn in_page(mut self, page: usize) -> Self {
        self.context.page.get_or_insert(page);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.kind.label())?;
        let c = &self.context;
        let mut place = Vec::new();
        if let Some(file) = &c.file {
            place.push(file.clone());
        }
        if let Some(rg) = c.row_group {
            place.push(format!("row group {rg}"));
        }
        if let Some(col) = &c.column {
            place.push(format!("column '{col}'"));
        }
        if let Some(page) = c.page {
            place.push(format!("page {page}"));
        }
        if !place.is_empty() {
            write!(f, "{}: ", place.join(", "))?;
        }
        // Keep the message on one line, whatever the source said.
        write!(f, "{}", self.message.replace('\n', " "))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        let mut err = Error::new(ErrorKind::Io, e.to_string());
        err.io_kind = Some(e.kind());
        err
    }
}

impl From<parquet::errors::ParquetError> for Error {
    fn from(e: parquet::errors::ParquetError) -> Self {
        use parquet::errors::ParquetError as P;
        match e {
            P::NYI(m) => Error::unsupported(m),
            P::External(inner) => match inner.downcast::<std::io::Error>() {
                Ok(io) => Error::from(*io),
                Err(other) => Error::corrupt(other.to_string()),
            },
            P::ArrowError(m) => Error::corrupt(m),
            P::General(m) if m.to_lowercase().contains("encrypt") => Error::unsupported(m),
            P::NeedMoreData(_) | P::NeedMoreDataRange(_) => {
                Error::corrupt(format!("file is truncated ({e})"))
            }
            other => Error::corrupt(other.to_string()),
        }
    }
}

impl From<arrow::error::ArrowError> for Error {
    fn from(e: arrow::error::ArrowError) -> Self {
        use arrow::error::ArrowError as A;
        match e {
            A::IoError(m, io) => {
                let mut err = Error::new(ErrorKind::Io, format!("{m}: {io}"));
                err.io_kind = Some(io.kind());
                err
            }
            A::NotYetImplemented(m) => Error::unsupported(m),
            A::ExternalError(inner) => Error::internal(inner.to_string()),
            other => Error::corrupt(other.to_string()),
        }
    }
}
