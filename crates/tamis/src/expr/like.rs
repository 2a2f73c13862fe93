//! SQL LIKE patterns compiled to specialised matchers.
//!
//! `%` matches any sequence (including the empty one), `_` exactly one UTF-8 character (a byte
//! that does not start a valid UTF-8 sequence counts as one character, so binary values work
//! byte-wise). An optional escape character makes the next `%`, `_` or escape literal.
//!
//! Patterns without `_` use fast paths: exact, prefix (`abc%`), suffix (`%abc`), contains
//! (`%abc%`, memchr's `memmem`) and multi-part (`a%b%c`, greedy left-to-right search). Anything
//! else goes through an iterative two-pointer matcher with single-star backtracking (linear
//! memory, no recursion).

use memchr::memmem::Finder;

use crate::error::{Error, Result};

/// A substring searcher that compares by its needle.
#[derive(Debug, Clone)]
struct Needle(Box<Finder<'static>>);

impl Needle {
    fn new(bytes: &[u8]) -> Self {
        Needle(Box::new(Finder::new(bytes).into_owned()))
    }
    fn bytes(&self) -> &[u8] {
        self.0.needle()
    }
}

impl PartialEq for Needle {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    /// A literal run of bytes.
    Lit(Vec<u8>),
    /// `_`
    One,
    /// `%` (consecutive ones collapsed)
    Any,
}

#[derive(Debug, Clone, PartialEq)]
enum Matcher {
    Exact(Vec<u8>),
    /// `abc%` (`%` alone is `Prefix("")`).
    Prefix(Vec<u8>),
    /// `%abc`
    Suffix(Vec<u8>),
    /// `%abc%`
    Contains(Needle),
    /// `first%m1%m2%…%last` with no `_` (first / last may be empty).
    Parts {
        first: Vec<u8>,
        middle: Vec<Needle>,
        last: Vec<u8>,
    },
    General(Vec<Token>),
}

/// A compiled LIKE pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct LikePattern {
    /// The pattern as written (without SQL quoting).
    pub pattern: String,
    escape: Option<char>,
    prefix: Vec<u8>,
    matcher: Matcher,
}

/// Byte length of the character starting at `s[i]` (1 for a byte that does not start a valid
/// UTF-8 sequence). `i < s.len()`.
#[inline]
fn char_len(s: &[u8], i: usize) -> usize {
    let b = s[i];
    let n = match b {
        0x00..=0x7f => return 1,
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return 1,
    };
    if i + n > s.len() || !s[i + 1..i + n].iter().all(|&c| c & 0xc0 == 0x80) {
        return 1;
    }
    n
}

impl LikePattern {
    /// Compiles `pattern`; `escape` makes the following `%`, `_` or escape character literal.
    pub fn new(pattern: &str, escape: Option<char>) -> Result<LikePattern> {
        let mut tokens: Vec<Token> = Vec::new();
        let mut lit: Vec<u8> = Vec::new();
        let mut chars = pattern.chars();
        let flush = |lit: &mut Vec<u8>, tokens: &mut Vec<Token>| {
            if !lit.is_empty() {
                tokens.push(Token::Lit(std::mem::take(lit)));
            }
        };
        while let Some(c) = chars.next() {
            if Some(c) == escape {
                match chars.next() {
                    Some(n) if n == '%' || n == '_' || Some(n) == escape => {
                        let mut buf = [0u8; 4];
                        lit.extend_from_slice(n.encode_utf8(&mut buf).as_bytes());
                    }
                    Some(n) => {
                        return Err(Error::invalid(format!(
                            "LIKE pattern '{pattern}': escape character '{c}' must be followed \
                             by '%', '_' or itself, not '{n}'"
                        )))
                    }
                    None => {
                        return Err(Error::invalid(format!(
                            "LIKE pattern '{pattern}' ends with the escape character '{c}'"
                        )))
                    }
                }
                continue;
            }
            match c {
                '%' => {
                    flush(&mut lit, &mut tokens);
                    if tokens.last() != Some(&Token::Any) {
                        tokens.push(Token::Any);
                    }
                }
                '_' => {
                    flush(&mut lit, &mut tokens);
                    tokens.push(Token::One);
                }
                c => {
                    let mut buf = [0u8; 4];
                    lit.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        flush(&mut lit, &mut tokens);

        let prefix = match tokens.first() {
            Some(Token::Lit(l)) => l.clone(),
            _ => Vec::new(),
        };
        let matcher = Self::plan(tokens);
        Ok(LikePattern {
            pattern: pattern.to_string(),
            escape,
            prefix,
            matcher,
        })
    }

    fn plan(tokens: Vec<Token>) -> Matcher {
        use Token::*;
        if tokens.contains(&One) {
            return Matcher::General(tokens);
        }
        match tokens.as_slice() {
            [] => return Matcher::Exact(Vec::new()),
            [Lit(l)] => return Matcher::Exact(l.clone()),
            [Any] => return Matcher::Prefix(Vec::new()),
            [Lit(l), Any] => return Matcher::Prefix(l.clone()),
            [Any, Lit(l)] => return Matcher::Suffix(l.clone()),
            [Any, Lit(l), Any] => return Matcher::Contains(Needle::new(l)),
            _ => {}
        }
        // Alternating literals and `%`, at least two `%`.
        let mut rest = tokens.as_slice();
        let first = match rest.first() {
            Some(Lit(l)) => {
                rest = &rest[1..];
                l.clone()
            }
            _ => Vec::new(),
        };
        let last = match rest.last() {
            Some(Lit(l)) => {
                rest = &rest[..rest.len() - 1];
                l.clone()
            }
            _ => Vec::new(),
        };
        let middle = rest
            .iter()
            .filter_map(|t| match t {
                Lit(l) => Some(Needle::new(l)),
                _ => None,
            })
            .collect();
        Matcher::Parts {
            first,
            middle,
            last,
        }
    }

    /// The escape character the pattern was compiled with.
    pub fn escape(&self) -> Option<char> {
        self.escape
    }

    /// The literal bytes every match starts with (the pattern up to its first wildcard).
    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    /// True if the pattern has no wildcard: it matches only [`Self::prefix`].
    pub fn is_exact(&self) -> bool {
        matches!(self.matcher, Matcher::Exact(_))
    }

    /// Whether `value` matches the pattern.
    #[inline]
    pub fn matches(&self, value: &[u8]) -> bool {
        match &self.matcher {
            Matcher::Exact(l) => value == l.as_slice(),
            Matcher::Prefix(l) => value.starts_with(l),
            Matcher::Suffix(l) => value.ends_with(l),
            Matcher::Contains(n) => n.0.find(value).is_some(),
            Matcher::Parts {
                first,
                middle,
                last,
            } => {
                // Empty anchors (`%a%b%`) are skipped: even a zero-length slice comparison
                // costs a `memcmp` call per value (42 % of a LIKE scan before this check).
                if value.len() < first.len() + last.len()
                    || (!first.is_empty() && !value.starts_with(first))
                    || (!last.is_empty() && !value.ends_with(last))
                {
                    return false;
                }
                let mut hay = &value[first.len()..value.len() - last.len()];
                for n in middle {
                    match n.0.find(hay) {
                        Some(at) => hay = &hay[at + n.bytes().len()..],
                        None => return false,
                    }
                }
                true
            }
            Matcher::General(tokens) => general(tokens, value),
        }
    }
}

/// Two-pointer wildcard matching with backtracking to the last `%` only (sufficient because a
/// later `%` can absorb whatever an earlier one would have).
fn general(tokens: &[Token], s: &[u8]) -> bool {
    let (mut t, mut i) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None; // (token after the %, value position)
    loop {
        if t < tokens.len() {
            match &tokens[t] {
                Token::Any => {
                    t += 1;
                    star = Some((t, i));
                    continue;
                }
                Token::One if i < s.len() => {
                    i += char_len(s, i);
                    t += 1;
                    continue;
                }
                Token::Lit(l) if s[i..].starts_with(l) => {
                    i += l.len();
                    t += 1;
                    continue;
                }
                _ => {}
            }
        } else if i == s.len() {
            return true;
        }
        // Mismatch (or tokens exhausted early): let the last % absorb one more character.
        match star {
            Some((st, si)) if si < s.len() => {
                let ni = si + char_len(s, si);
                star = Some((st, ni));
                t = st;
                i = ni;
            }
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Obviously-correct reference: recursion over characters with memoisation.
    fn reference(pattern: &str, escape: Option<char>, value: &str) -> bool {
        #[derive(Clone, Copy, PartialEq)]
        enum T {
            C(char),
            One,
            Any,
        }
        let mut toks = Vec::new();
        let mut it = pattern.chars();
        while let Some(c) = it.next() {
            if Some(c) == escape {
                toks.push(T::C(it.next().unwrap()));
            } else if c == '%' {
                toks.push(T::Any);
            } else if c == '_' {
                toks.push(T::One);
            } else {
                toks.push(T::C(c));
            }
        }
        let v: Vec<char> = value.chars().collect();
        // dp[i][j]: toks[i..] matches v[j..]
        let mut dp = vec![vec![false; v.len() + 1]; toks.len() + 1];
        dp[toks.len()][v.len()] = true;
        for i in (0..toks.len()).rev() {
            for j in (0..=v.len()).rev() {
                dp[i][j] = match toks[i] {
                    T::Any => dp[i + 1][j] || (j < v.len() && dp[i][j + 1]),
                    T::One => j < v.len() && dp[i + 1][j + 1],
                    T::C(c) => j < v.len() && v[j] == c && dp[i + 1][j + 1],
                };
            }
        }
        dp[0][0]
    }

    fn m(p: &str, v: &str) -> bool {
        LikePattern::new(p, None).unwrap().matches(v.as_bytes())
    }

    #[test]
    fn fast_paths() {
        assert!(m("abc", "abc"));
        assert!(!m("abc", "abcd"));
        assert!(m("", ""));
        assert!(!m("", "a"));
        assert!(m("%", ""));
        assert!(m("%", "anything"));
        assert!(m("ab%", "ab"));
        assert!(m("ab%", "abxyz"));
        assert!(!m("ab%", "a"));
        assert!(m("%yz", "xyz"));
        assert!(!m("%yz", "yzx"));
        assert!(m("%b%", "abc"));
        assert!(!m("%b%", "ac"));
        assert!(m("%%b%%", "b"));
        assert!(m("a%b%c", "abc"));
        assert!(m("a%b%c", "axxbyyc"));
        assert!(!m("a%b%c", "acb"));
        assert!(!m("ab%ba", "aba"), "first and last must not overlap");
        assert!(m("%a%b%", "xxaxxbxx"));
        assert!(!m("%a%b%", "bxa"));
        assert!(m("%special%requests%", "was special, requests"));
    }

    #[test]
    fn underscore_is_one_character() {
        assert!(m("_", "é"));
        assert!(m("_", "€"));
        assert!(m("_", "😀"));
        assert!(!m("__", "é"));
        assert!(m("a_c", "aéc"));
        assert!(!m("%__", "€"));
        assert!(m("%__", "a€"));
        assert!(m("_%_", "ab"));
        assert!(!m("_%_", "a"));
        // Binary values: invalid UTF-8 bytes count one each.
        let p = LikePattern::new("_\u{41}", None).unwrap();
        assert!(p.matches(&[0xff, 0x41]));
        assert!(p.matches(&[0xc3, 0x41]), "lone lead byte then 'A'");
    }

    #[test]
    fn escapes_and_prefix() {
        let p = LikePattern::new(r"50\%%", Some('\\')).unwrap();
        assert_eq!(p.prefix(), b"50%");
        assert!(p.matches(b"50% off"));
        assert!(!p.matches(b"500"));
        let p = LikePattern::new("a!_b", Some('!')).unwrap();
        assert!(p.is_exact());
        assert!(p.matches(b"a_b"));
        assert!(!p.matches(b"axb"));
        let p = LikePattern::new("a!!%", Some('!')).unwrap();
        assert!(p.matches(b"a!zzz"));
        assert_eq!(p.prefix(), b"a!");
        assert!(LikePattern::new("ab!", Some('!')).is_err());
        assert!(LikePattern::new("a!b", Some('!')).is_err());
        assert_eq!(LikePattern::new("ab_c%", None).unwrap().prefix(), b"ab");
        assert_eq!(LikePattern::new("%ab", None).unwrap().prefix(), b"");
        // Without an escape character, backslash is literal.
        assert!(m(r"a\%", r"a\xyz"));
    }

    #[test]
    fn backtracking_is_not_exponential() {
        let value = "a".repeat(5000);
        let pattern = format!("{}b", "%a".repeat(50));
        assert!(!m(&pattern, &value));
        let pattern = format!("{}_", "%a_".repeat(50));
        assert!(m(&pattern, &value));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        #[test]
        fn matches_reference(
            p in proptest::collection::vec(
                prop_oneof![Just("a"), Just("b"), Just("é"), Just("%"), Just("_"), Just("!%"),
                             Just("!_"), Just("!!")], 0..8),
            v in proptest::collection::vec(
                prop_oneof![Just("a"), Just("b"), Just("é"), Just("€"), Just("%"), Just("_"),
                            Just("!")], 0..10),
            use_escape in any::<bool>(),
        ) {
            let mut pattern: String = p.concat();
            if !use_escape {
                pattern = pattern.replace('!', "");
            }
            let escape = use_escape.then_some('!');
            let value: String = v.concat();
            let compiled = LikePattern::new(&pattern, escape).unwrap();
            prop_assert_eq!(
                compiled.matches(value.as_bytes()),
                reference(&pattern, escape, &value),
                "pattern {:?} value {:?}", pattern, value
            );
        }
    }
}
