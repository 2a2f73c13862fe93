//! The cost model of filter ordering (paper 001 §4.4, Eq. 1) and the order it picks.
//!
//! ```text
//! cost(f1..fn) ∝ Σ_{i≥2} k_i/w + Σ_{i≥2} Π_{j<i} s_j        (Eq. 1, w = 64)
//! ```
//!
//! `k_i` is the bits per value the select operator reads for filter i and `s_i` the fraction of
//! rows passing it (for a negated filter, `1 − s_i`). The optimal order under the model tries
//! each filter first and sorts the rest by ascending selectivity ([`greedy_order`]). Where `k`
//! and `s` come from is [`super::estimate`]; how they are corrected as the scan runs is
//! [`super::order::Planner`].

/// Word width of the bit-parallel select (`w` in Eq. 1).
pub(crate) const WORD_BITS: f64 = 64.0;

/// What Eq. 1 knows about one filter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FilterCost {
    /// Bits per value the select reads (`k`).
    pub bits: f64,
    /// Fraction of the input rows the filter keeps (`s`).
    pub selectivity: f64,
}

/// Eq. 1 without the constant first-filter term: `Σ_{i≥2} k_i/w + Σ_{i≥2} Π_{j<i} s_j`.
pub(crate) fn cost(sequence: &[FilterCost]) -> f64 {
    let mut total = 0.0;
    let mut passing = 1.0;
    for (i, f) in sequence.iter().enumerate() {
        if i > 0 {
            total += f.bits / WORD_BITS + passing;
        }
        passing *= f.selectivity;
    }
    total
}

/// The order minimising [`cost`]: for each candidate first filter, the rest by ascending
/// selectivity; the cheapest wins (ties: the earlier candidate, so equal filters keep their
/// written order). Returns indices into `filters`.
pub(crate) fn greedy_order(filters: &[FilterCost]) -> Vec<usize> {
    let n = filters.len();
    let mut rest: Vec<usize> = (0..n).collect();
    rest.sort_by(|&a, &b| filters[a].selectivity.total_cmp(&filters[b].selectivity));
    let mut best: Option<(f64, Vec<usize>)> = None;
    for first in 0..n {
        let order: Vec<usize> = std::iter::once(first)
            .chain(rest.iter().copied().filter(|&i| i != first))
            .collect();
        let seq: Vec<FilterCost> = order.iter().map(|&i| filters[i]).collect();
        let c = cost(&seq);
        if best.as_ref().is_none_or(|(b, _)| c < *b) {
            best = Some((c, order));
        }
    }
    best.map(|(_, o)| o).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TPC-H Q6: shipdate, discount, quantity (notes §2.4).
    const Q6: [(&str, FilterCost); 3] = [
        (
            "shipdate",
            FilterCost {
                bits: 12.0,
                selectivity: 0.152,
            },
        ),
        (
            "discount",
            FilterCost {
                bits: 4.0,
                selectivity: 0.273,
            },
        ),
        (
            "quantity",
            FilterCost {
                bits: 6.0,
                selectivity: 0.46,
            },
        ),
    ];

    fn permutations(n: usize) -> Vec<Vec<usize>> {
        if n == 0 {
            return vec![vec![]];
        }
        let mut out = Vec::new();
        for p in permutations(n - 1) {
            for at in 0..=p.len() {
                let mut q = p.clone();
                q.insert(at, n - 1);
                out.push(q);
            }
        }
        out
    }

    #[test]
    fn q6_orders_rank_as_in_the_notes() {
        let mut ranked: Vec<(f64, String)> = permutations(3)
            .into_iter()
            .map(|p| {
                let seq: Vec<FilterCost> = p.iter().map(|&i| Q6[i].1).collect();
                let names: Vec<&str> = p.iter().map(|&i| Q6[i].0).collect();
                (cost(&seq), names.join(","))
            })
            .collect();
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
        let expected = [
            ("shipdate,discount,quantity", 0.3497),
            ("shipdate,quantity,discount", 0.3782),
            ("discount,shipdate,quantity", 0.5957),
            ("discount,quantity,shipdate", 0.6798),
            ("quantity,shipdate,discount", 0.7799),
            ("quantity,discount,shipdate", 0.8356),
        ];
        for ((c, names), (want_names, want_cost)) in ranked.iter().zip(expected) {
            assert_eq!(names, want_names);
            assert!((c - want_cost).abs() < 5e-5, "{names}: {c} vs {want_cost}");
        }
        let costs: Vec<FilterCost> = Q6.iter().map(|x| x.1).collect();
        assert_eq!(greedy_order(&costs), vec![0, 1, 2]);
        // Whatever the written order, the same order is picked.
        for p in permutations(3) {
            let written: Vec<FilterCost> = p.iter().map(|&i| costs[i]).collect();
            let picked: Vec<usize> = greedy_order(&written).iter().map(|&i| p[i]).collect();
            assert_eq!(picked, vec![0, 1, 2], "written as {p:?}");
        }
    }

    /// The greedy algorithm is optimal under the model: it matches exhaustive search.
    #[test]
    fn greedy_matches_exhaustive_search() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..500 {
            let n = 1 + round % 6;
            let filters: Vec<FilterCost> = (0..n)
                .map(|_| FilterCost {
                    bits: (next() % 65) as f64,
                    selectivity: (next() % 1001) as f64 / 1000.0,
                })
                .collect();
            let best = permutations(n)
                .into_iter()
                .map(|p| cost(&p.iter().map(|&i| filters[i]).collect::<Vec<_>>()))
                .fold(f64::INFINITY, f64::min);
            let order = greedy_order(&filters);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..n).collect::<Vec<_>>());
            let got = cost(&order.iter().map(|&i| filters[i]).collect::<Vec<_>>());
            assert!((got - best).abs() < 1e-12, "{filters:?}: {got} vs {best}");
        }
        assert!(greedy_order(&[]).is_empty());
    }
}
