//! Iceberg catalogs: which metadata file is a named table's current one.
//!
//! A catalog is named by a location of its own:
//!
//! ```text
//! iceberg+sqlite:///path/to/catalog.db?table=namespace.table[&catalog=name]
//! iceberg+http://host:port/path?table=namespace.table[&warehouse=name]     (or iceberg+https)
//! ```
//!
//! The SQL catalog (the JDBC catalog's schema, which pyiceberg's `SqlCatalog` writes to SQLite)
//! keeps one row per table in `iceberg_tables`; its `metadata_location` is the pointer a commit
//! swaps. tamis reads that row and nothing else, so a catalog location reads as the table's
//! newest committed metadata file.
//!
//! The REST catalog is asked for the table (its `LoadTable` call) through
//! `iceberg-catalog-rest`, with the catalog properties the location's query gives (all but
//! `table`) and those of the storage options named `iceberg.<property>` (`iceberg.token`,
//! `iceberg.credential`: secrets belong there, not in a location that errors print). Storage
//! credentials the catalog vends for the table are used for its metadata and data files, below
//! the storage options given.

use std::collections::HashMap;
use std::sync::Arc;

use iceberg::table::Table;
use iceberg::{Catalog as _, CatalogBuilder as _, TableIdent};
use iceberg_catalog_rest::RestCatalogBuilder;
use url::Url;

use crate::error::{Error, ErrorKind, Result};
use crate::io::location::StorageOptions;

/// The scheme that names a table in a SQL catalog on SQLite.
pub(crate) const SQLITE_SCHEME: &str = "iceberg+sqlite";

/// The prefix of the storage options that are the REST catalog's properties.
pub(crate) const PROPERTY_PREFIX: &str = "iceberg.";

/// A kind of catalog a location names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Catalog {
    Sqlite,
    Rest,
}

/// The catalog `location` names a table in, if it names one rather than a metadata file or a
/// root.
pub(crate) fn catalog_of(location: &str) -> Option<Catalog> {
    let scheme = location.split_once("://")?.0.to_ascii_lowercase();
    match scheme.as_str() {
        SQLITE_SCHEME => Some(Catalog::Sqlite),
        "iceberg+http" | "iceberg+https" => Some(Catalog::Rest),
        _ => None,
    }
}

/// The table a REST catalog location names, loaded from the catalog.
pub(crate) fn rest_table(location: &str, options: &StorageOptions) -> Result<Table> {
    let url = parse(location)?;
    let (table, ident) = table_ident(&url)?;
    let base = location.split(['?', '#']).next().unwrap_or(location);
    let uri = base.trim_end_matches('/').replacen("iceberg+", "", 1);
    let mut props: HashMap<String, String> = (url.query_pairs())
        .filter(|(k, _)| k != "table")
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    for (key, value) in &options.0 {
        if let Some(property) = key.strip_prefix(PROPERTY_PREFIX) {
            props.insert(property.to_string(), value.clone());
        }
    }
    props.insert("uri".to_string(), uri.clone());
    let factory = Arc::new(super::storage::ObjectStorageFactory {
        options: options.0.clone(),
    });
    let loaded = super::on_io_runtime(async {
        let catalog = (RestCatalogBuilder::default().with_storage_factory(factory))
            .load("tamis", props)
            .await?;
        catalog.load_table(&ident).await
    });
    loaded.map_err(|e| match e.kind() {
        iceberg::ErrorKind::TableNotFound | iceberg::ErrorKind::NamespaceNotFound => {
            Error::invalid(format!("the REST catalog at {uri} has no table '{table}'"))
        }
        _ => {
            let message = e
                .to_string()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            Error::new(
                ErrorKind::Io,
                format!("asking the REST catalog at {uri} for '{table}': {message}"),
            )
        }
    })
}

fn parse(location: &str) -> Result<Url> {
    Url::parse(location).map_err(|e| Error::invalid(format!("bad URL {location}: {e}")))
}

/// The `table=namespace.table` of a catalog location: its text, and as a table identifier (a
/// namespace of several levels is dotted: `a.b.table`).
fn table_ident(url: &Url) -> Result<(String, TableIdent)> {
    let Some(table) = (url.query_pairs())
        .find(|(k, _)| k == "table")
        .map(|(_, v)| v)
    else {
        return Err(Error::invalid("name the table (?table=namespace.table)"));
    };
    if !table.contains('.') {
        return Err(Error::invalid(format!(
            "the table '{table}' needs its namespace (namespace.table)"
        )));
    }
    let ident = TableIdent::from_strs(table.split('.'))
        .map_err(|e| Error::invalid(format!("the table '{table}': {e}")))?;
    Ok((table.into_owned(), ident))
}

/// The location as errors name it: without the values of properties that look secret.
pub(crate) fn redacted(location: &str) -> String {
    let Some((base, query)) = location.split_once('?') else {
        return location.to_string();
    };
    let pairs: Vec<String> = (query.split('&'))
        .map(|pair| match pair.split_once('=') {
            Some((k, _))
                if ["token", "credential", "secret"]
                    .iter()
                    .any(|s| k.contains(s)) =>
            {
                format!("{k}=…")
            }
            _ => pair.to_string(),
        })
        .collect();
    format!("{base}?{}", pairs.join("&"))
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
