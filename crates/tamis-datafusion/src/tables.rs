//! The tables of a `tamis sql` session, located at once and opened when a query names them.
//!
//! A call names every table it may use (`--tables DIR`: all eight of TPC-H), and opening one
//! reads its footers: 33 ms for a 1 001-row-group `lineitem`, spent even by a query that does
//! not read it. Locating every table first keeps a missing path an error of the call; reading
//! the footers only of the tables the query names, in parallel, keeps the rest off its time.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::common::TableReference;
use datafusion::error::{DataFusionError, Result};
use tamis::io::StorageOptions;

use crate::sql::{one_line, squeeze, RunOptions};
use crate::TamisTable;

/// A table given to the session.
#[derive(Debug)]
enum Slot {
    /// Located; its footers not read yet.
    Located {
        path: String,
        location: tamis::DatasetLocation,
    },
    /// Open (or registered by a statement).
    Open(Arc<dyn TableProvider>),
}

/// The session's `public` schema: the given tables, opened on first use, and whatever a
/// statement registers (`CREATE VIEW`, with statements allowed).
#[derive(Debug)]
pub struct SessionTables {
    slots: Mutex<BTreeMap<String, Slot>>,
    runtime_filters: bool,
    row_group_slices: bool,
    /// The first table that failed to open, as `table 'NAME': why`: DataFusion wraps the
    /// error it gets from [`SchemaProvider::table`], the session reports this line instead.
    failed: Mutex<Option<String>>,
}

impl SessionTables {
    /// Locates each (name, path): lists directories and globs, finds a table's format; a
    /// path that names nothing fails here, whether a query reads it or not.
    pub fn locate(
        tables: &[(String, String)],
        options: &StorageOptions,
        run: &RunOptions,
    ) -> std::result::Result<SessionTables, String> {
        let mut slots = BTreeMap::new();
        for (given, path) in tables {
            // As DataFusion registers a name: unquoted parts folded to lower case.
            let name = match TableReference::from(given.as_str()) {
                TableReference::Bare { table } => table.to_string(),
                _ => {
                    return Err(format!(
                        "table '{given}': a table name may not hold a '.' (it would name a schema)"
                    ))
                }
            };
            let location = tamis::Dataset::locate(path, options)
                .map_err(|e| format!("table '{given}': {}", squeeze(&e.to_string())))?;
            let slot = Slot::Located {
                path: path.clone(),
                location,
            };
            if slots.insert(name, slot).is_some() {
                return Err(format!(
                    "table '{given}': a table of that name is given twice"
                ));
            }
        }
        Ok(SessionTables {
            slots: Mutex::new(slots),
            runtime_filters: run.runtime_filters,
            row_group_slices: run.row_group_slices,
            failed: Mutex::new(None),
        })
    }

    /// Opens the named tables not open yet, each on its own thread (a query's tables are
    /// opened before DataFusion plans it, which asks for them one by one). Names the session
    /// does not have are left to the planner; an error is kept for [`SessionTables::failed`].
    pub fn open_all(&self, names: &[String]) {
        let pending: Vec<(String, String, tamis::DatasetLocation)> = {
            let slots = self.slots.lock().expect("tables lock");
            let mut pending = Vec::new();
            for name in names {
                if let Some(Slot::Located { path, location }) = slots.get(name) {
                    if !pending.iter().any(|(n, _, _)| n == name) {
                        pending.push((name.clone(), path.clone(), location.clone()));
                    }
                }
            }
            pending
        };
        let opened: Vec<_> = if pending.len() < 2 {
            (pending.iter())
                .map(|(name, path, location)| self.open(name, path, location))
                .collect()
        } else {
            std::thread::scope(|s| {
                let handles: Vec<_> = (pending.iter())
                    .map(|(name, path, location)| s.spawn(|| self.open(name, path, location)))
                    .collect();
                (handles.into_iter().zip(&pending))
                    .map(|(h, (name, _, _))| {
                        h.join()
                            .unwrap_or_else(|_| Err(format!("table '{name}': opening it panicked")))
                    })
                    .collect()
            })
        };
        for ((name, _, _), result) in pending.iter().zip(opened) {
            self.settle(name, result);
        }
    }

    /// The first table that failed to open, as `table 'NAME': why`.
    pub fn failed(&self) -> Option<String> {
        self.failed.lock().expect("failed lock").clone()
    }

    fn open(
        &self,
        name: &str,
        path: &str,
        location: &tamis::DatasetLocation,
    ) -> std::result::Result<Arc<dyn TableProvider>, String> {
        let dataset = location
            .open(None)
            .map_err(|e| format!("table '{name}': {}", squeeze(&e.to_string())))?;
        let table = TamisTable::from_dataset(Arc::new(dataset), path)
            .map_err(|e| format!("table '{name}': {}", one_line(&e)))?
            .with_runtime_filters(self.runtime_filters)
            .with_row_group_slices(self.row_group_slices);
        Ok(Arc::new(table))
    }

    /// Keeps an opened table, or the first failure.
    fn settle(&self, name: &str, result: std::result::Result<Arc<dyn TableProvider>, String>) {
        match result {
            Ok(table) => {
                let mut slots = self.slots.lock().expect("tables lock");
                if let Some(slot @ Slot::Located { .. }) = slots.get_mut(name) {
                    *slot = Slot::Open(table);
                }
            }
            Err(message) => {
                self.failed
                    .lock()
                    .expect("failed lock")
                    .get_or_insert(message);
            }
        }
    }

    /// The table `name`, opened now if it was only located.
    fn get(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        let located = match self.slots.lock().expect("tables lock").get(name) {
            None => return Ok(None),
            Some(Slot::Open(table)) => return Ok(Some(Arc::clone(table))),
            Some(Slot::Located { path, location }) => (path.clone(), location.clone()),
        };
        let result = self.open(name, &located.0, &located.1);
        self.settle(name, result.clone());
        result
            .map(Some)
            .map_err(|message| DataFusionError::External(message.into()))
    }
}

#[async_trait]
impl SchemaProvider for SessionTables {
    fn table_names(&self) -> Vec<String> {
        let slots = self.slots.lock().expect("tables lock");
        slots.keys().cloned().collect()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        self.get(name)
    }

    fn register_table(
        &self,
        name: String,
        table: Arc<dyn TableProvider>,
    ) -> Result<Option<Arc<dyn TableProvider>>> {
        let mut slots = self.slots.lock().expect("tables lock");
        if slots.contains_key(&name) {
            return Err(DataFusionError::Execution(format!(
                "The table {name} already exists"
            )));
        }
        slots.insert(name, Slot::Open(table));
        Ok(None)
    }

    fn deregister_table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        // A table only located is opened to be handed back (DataFusion's `DROP TABLE` reads
        // "not found" from `None`).
        let table = self.get(name)?;
        self.slots.lock().expect("tables lock").remove(name);
        Ok(table)
    }

    fn table_exist(&self, name: &str) -> bool {
        self.slots.lock().expect("tables lock").contains_key(name)
    }
}
