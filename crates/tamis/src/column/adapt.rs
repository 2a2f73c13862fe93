//! Never slower than decode-then-filter: for every filter, each page whose rows are only partly
//! alive is evaluated either **whole** (every value of the page, in place on the encoded bytes
//! where the encoding allows, else decoded once and kept for the projection — decode-then-filter)
//! or **selected** (selection pushdown: only the alive values are selected, evaluated and the
//! result transformed back). Which one pays depends on the encoding, the bit width, the alive
//! fraction and the machine, so it is measured, not guessed:
//!
//! - cost(whole) = `w` × values of the page, cost(selected) = `s` × (alive values + values / 32)
//!   (the second term is the select's pass over the page's bitmap words);
//! - `w` and `s` are nanoseconds per unit, smoothed over the pages of the scan (EWMA), per filter;
//! - the first pages try both strategies; afterwards the cheaper one runs, and every
//!   [`REPROBE`]th page runs the other one, so that the choice follows the data if it changes
//!   (a sorted column whose later row groups are dense, a dictionary that falls back to PLAIN).
//!
//! A page whose rows are all alive is always evaluated whole (selecting everything only adds
//! work), and so is a page when the filter column's encoding offers no selected path.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::Instant;

use crate::error::{Error, Result};

/// How filters evaluate pages whose rows are only partly alive.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Evaluation {
    /// Per filter, the cheaper of whole-page and selected evaluation, by measured cost.
    #[default]
    Auto,
    /// Always selection pushdown where the encoding has it (for benchmarks and tests).
    Selected,
    /// Always the whole page: in place, or decode-then-filter (for benchmarks and tests).
    Whole,
}

impl FromStr for Evaluation {
    type Err = Error;

    /// `auto`, `selected` or `whole`.
    fn from_str(s: &str) -> Result<Evaluation> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Evaluation::Auto),
            "selected" => Ok(Evaluation::Selected),
            "whole" => Ok(Evaluation::Whole),
            other => Err(Error::invalid(format!(
                "unknown evaluation '{other}' (expected auto, selected or whole)"
            ))),
        }
    }
}

/// How a partly alive page is evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PageStrategy {
    Whole,
    Selected,
}

/// Pages each strategy runs before the measured costs are trusted.
const PROBES: u32 = 2;
/// After the probes, one page in this many runs the strategy not chosen.
const REPROBE: u64 = 16;
/// Weight of a new page's cost in the running mean.
const ALPHA: f64 = 0.25;

#[derive(Debug, Default, Clone, Copy)]
struct Mean {
    ns_per_unit: f64,
    samples: u32,
    /// The filter's page count when the last sample was taken.
    at: u64,
}

impl Mean {
    /// Smooths consecutive samples; a sample after a gap (a probe of the strategy not chosen)
    /// replaces the stale mean, which was measured on other data.
    fn add(&mut self, ns: f64, units: f64, page: u64) {
        let x = ns / units.max(1.0);
        self.ns_per_unit = if self.samples == 0 || page > self.at + 1 {
            x
        } else {
            (1.0 - ALPHA) * self.ns_per_unit + ALPHA * x
        };
        self.samples = self.samples.saturating_add(1);
        self.at = page;
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Costs {
    whole: Mean,
    selected: Mean,
    pages: u64,
}

/// Measured costs per filter (keyed like the order planner's measured selectivities), shared by
/// the row-group workers of a scan.
#[derive(Debug, Default)]
pub(crate) struct Adaptive {
    mode: Evaluation,
    costs: Mutex<HashMap<u64, Costs>>,
}

fn units(strategy: PageStrategy, values: usize, alive: usize) -> f64 {
    match strategy {
        PageStrategy::Whole => values as f64,
        PageStrategy::Selected => alive as f64 + values as f64 / 32.0,
    }
}

impl Adaptive {
    pub(crate) fn new(mode: Evaluation) -> Adaptive {
        Adaptive {
            mode,
            ..Adaptive::default()
        }
    }

    /// The strategy for a page of `values` values of which `alive` are alive (0 < alive < values).
    pub(crate) fn choose(&self, key: u64, values: usize, alive: usize) -> PageStrategy {
        match self.mode {
            Evaluation::Auto => {}
            Evaluation::Selected => return PageStrategy::Selected,
            Evaluation::Whole => return PageStrategy::Whole,
        }
        let mut costs = self.costs.lock().unwrap_or_else(|e| e.into_inner());
        let c = costs.entry(key).or_default();
        c.pages += 1;
        if c.whole.samples < PROBES || c.selected.samples < PROBES {
            return if c.selected.samples <= c.whole.samples {
                PageStrategy::Selected
            } else {
                PageStrategy::Whole
            };
        }
        let whole = c.whole.ns_per_unit * units(PageStrategy::Whole, values, alive);
        let selected = c.selected.ns_per_unit * units(PageStrategy::Selected, values, alive);
        let best = if selected < whole {
            PageStrategy::Selected
        } else {
            PageStrategy::Whole
        };
        if c.pages.is_multiple_of(REPROBE) {
            match best {
                PageStrategy::Whole => PageStrategy::Selected,
                PageStrategy::Selected => PageStrategy::Whole,
            }
        } else {
            best
        }
    }

    /// Records what a page evaluated with `strategy` cost, from `start` until now.
    pub(crate) fn record(
        &self,
        key: u64,
        strategy: PageStrategy,
        values: usize,
        alive: usize,
        start: Instant,
    ) {
        let ns = start.elapsed().as_nanos() as f64;
        let mut costs = self.costs.lock().unwrap_or_else(|e| e.into_inner());
        let c = costs.entry(key).or_default();
        c.add(strategy, ns, units(strategy, values, alive));
    }
}

impl Costs {
    fn add(&mut self, strategy: PageStrategy, ns: f64, units: f64) {
        let page = self.pages;
        match strategy {
            PageStrategy::Whole => self.whole.add(ns, units, page),
            PageStrategy::Selected => self.selected.add(ns, units, page),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(a: &Adaptive, key: u64, s: PageStrategy, ns: f64, values: usize, alive: usize) {
        let mut costs = a.costs.lock().unwrap();
        costs
            .entry(key)
            .or_default()
            .add(s, ns, units(s, values, alive));
    }

    #[test]
    fn probes_both_then_picks_the_cheaper_and_reprobes() {
        let a = Adaptive::default();
        let mut seen = Vec::new();
        for _ in 0..4 {
            let s = a.choose(1, 1000, 10);
            seen.push(s);
            // Whole costs 1 ns per value, selected 2 ns per unit: at 10 alive of 1000 the
            // selected path (2 × (10 + 31)) beats the whole page (1000).
            let ns = match s {
                PageStrategy::Whole => 1000.0,
                PageStrategy::Selected => 2.0 * units(s, 1000, 10),
            };
            feed(&a, 1, s, ns, 1000, 10);
        }
        assert_eq!(
            seen.iter().filter(|&&s| s == PageStrategy::Whole).count(),
            2
        );
        let later: Vec<PageStrategy> = (0..32).map(|_| a.choose(1, 1000, 10)).collect();
        let whole = later.iter().filter(|&&s| s == PageStrategy::Whole).count();
        assert_eq!(whole, 2, "only the reprobes run the dearer strategy");
        // Dense pages flip the choice: 900 alive of 1000 costs 2 × 931 > 1000.
        assert_eq!(a.choose(1, 1000, 900), PageStrategy::Whole);
        // Other filters are independent.
        assert_eq!(a.choose(2, 1000, 10), PageStrategy::Selected);
    }

    #[test]
    fn follows_the_data_when_costs_change() {
        let a = Adaptive::default();
        for _ in 0..2 * PROBES {
            let s = a.choose(7, 1000, 500);
            feed(
                &a,
                7,
                s,
                if s == PageStrategy::Whole { 100.0 } else { 1e6 },
                1000,
                500,
            );
        }
        assert_eq!(a.choose(7, 1000, 500), PageStrategy::Whole);
        // The selected path becomes cheap (e.g. the data got sparse); reprobes pick it up.
        for _ in 0..64 {
            let s = a.choose(7, 1000, 500);
            let ns = if s == PageStrategy::Whole { 100.0 } else { 1.0 };
            feed(&a, 7, s, ns, 1000, 500);
        }
        assert_eq!(a.choose(7, 1000, 500), PageStrategy::Selected);
    }
}
