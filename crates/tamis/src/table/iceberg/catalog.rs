//! Iceberg catalogs: which metadata file is a named table's current one.
//!
//! The SQL catalog (the JDBC catalog's schema, which pyiceberg's `SqlCatalog` writes to SQLite)
//! keeps one row per table in `iceberg_tables`; its `metadata_location` is the pointer a commit
//! swaps. tamis reads that row and nothing else, so a catalog location reads as the table's
//! newest committed metadata file. A catalog is named by a location of its own:
//!
//! ```text
//! iceberg+sqlite:///path/to/catalog.db?table=namespace.table[&catalog=name]
//! ```

use url::Url;

use crate::error::{Error, Result};

/// The scheme that names a table in a SQL catalog on SQLite.
pub(crate) const SQLITE_SCHEME: &str = "iceberg+sqlite";

/// Whether `location` names a table in a catalog rather than a metadata file or a root.
pub(crate) fn is_catalog(location: &str) -> bool {
    location.starts_with(&format!("{SQLITE_SCHEME}:"))
}

/// The metadata file of the table a catalog location names.
pub(crate) fn metadata_location(location: &str) -> Result<String> {
    let url =
        Url::parse(location).map_err(|e| Error::invalid(format!("bad URL {location}: {e}")))?;
    let query = |key: &str| {
        (url.query_pairs())
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    };
    let Some(table) = query("table") else {
        return Err(Error::invalid("name the table (?table=namespace.table)"));
    };
    let Some((namespace, name)) = table.rsplit_once('.') else {
        return Err(Error::invalid(format!(
            "the table '{table}' needs its namespace (namespace.table)"
        )));
    };
    let path = url
        .to_file_path()
        .map_err(|_| Error::invalid("the catalog is not a local SQLite file"))?;
    if !path.is_file() {
        return Err(Error::invalid(format!(
            "no SQLite catalog at {}",
            path.display()
        )));
    }
    let db = rusqlite::Connection::open_with_flags(
        &path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sqlite_error)?;
    let mut statement = db
        .prepare(
            "SELECT catalog_name, metadata_location FROM iceberg_tables \
             WHERE table_namespace = ?1 AND table_name = ?2",
        )
        .map_err(sqlite_error)?;
    let rows = statement
        .query_map([namespace, name], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
        })
        .map_err(sqlite_error)?;
    let mut found = Vec::new();
    for row in rows {
        found.push(row.map_err(sqlite_error)?);
    }
    let catalog = query("catalog");
    found.retain(|(c, _)| catalog.as_ref().is_none_or(|want| want == c));
    match found.as_slice() {
        [(_, Some(metadata))] => Ok(metadata.clone()),
        [(_, None)] => Err(Error::invalid(format!(
            "the catalog holds '{table}' without a metadata location (a view?)"
        ))),
        [] => Err(Error::invalid(format!(
            "the catalog has no table '{table}'{}",
            catalog.map_or(String::new(), |c| format!(" in catalog '{c}'"))
        ))),
        several => Err(Error::invalid(format!(
            "catalogs {} each hold a table '{table}'; say which (&catalog=name)",
            several
                .iter()
                .map(|(c, _)| format!("'{c}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

fn sqlite_error(e: rusqlite::Error) -> Error {
    Error::invalid(format!("reading the SQL catalog (iceberg_tables): {e}"))
}
