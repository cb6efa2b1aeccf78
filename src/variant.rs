//! Synchronisation schemes and their paper labels (`sync`, `ssync(30)`,
//! `async(4)+hybrid(0.001,500)`, ...): parsing and printing.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::policy::Scope;

/// How updates are synchronised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Global barrier after every iteration.
    Sync,
    /// Bounded staleness: neighbours at most `staleness` updates behind.
    Ssync,
    /// No waiting at all.
    Async,
}

/// Which progressive balancing policy runs (async mode only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BalancerKind {
    None,
    /// Every socket balanced on its own.
    Split,
    /// All cores balanced together.
    Joint,
    /// Split, plus one cross-socket move every `hybrid_period`-th call.
    Hybrid,
}

/// A scheme as the paper labels it: a staleness only in ssync, a
/// subdomain count and a balancer only in async.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Variant {
    /// One subdomain per domain, a barrier per iteration.
    Sync,
    /// One subdomain per domain, neighbours at most `staleness` apart.
    Ssync { staleness: u64 },
    Async {
        subdomains: usize,
        balancing: Option<Balanced>,
    },
}

/// Which balancing strategy runs (async only; `lb_strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// The paper's Algorithm 1 (`policy::Progressive`).
    Progressive,
    /// Receiver-initiated stealing by measured rate (`policy::Steal`).
    Steal,
}

/// The balancer of a label: its strategy, scope and call interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Balanced {
    pub strategy: Strategy,
    pub scope: Scope,
    /// Seconds between balancer calls.
    pub interval: f64,
}

impl Balanced {
    /// The `balancer` key's value: the scope.
    pub fn kind(&self) -> BalancerKind {
        match self.scope {
            Scope::Split => BalancerKind::Split,
            Scope::Joint => BalancerKind::Joint,
            Scope::Hybrid { .. } => BalancerKind::Hybrid,
        }
    }
}

impl Variant {
    /// ```
    /// use braid::variant::{Mode, Variant};
    /// let v = Variant::parse("ssync(30)").unwrap();
    /// assert_eq!((v.mode(), v.staleness(), v.subdomains()), (Mode::Ssync, 30, 1));
    /// ```
    pub fn mode(&self) -> Mode {
        match self {
            Variant::Sync => Mode::Sync,
            Variant::Ssync { .. } => Mode::Ssync,
            Variant::Async { .. } => Mode::Async,
        }
    }

    /// The staleness bound (0 outside ssync, as the `staleness` key).
    pub fn staleness(&self) -> u64 {
        match *self {
            Variant::Ssync { staleness } => staleness,
            _ => 0,
        }
    }

    /// Subdomains per domain: the paper's sync and ssync use one.
    pub fn subdomains(&self) -> usize {
        match *self {
            Variant::Async { subdomains, .. } => subdomains,
            _ => 1,
        }
    }

    pub fn balancing(&self) -> Option<Balanced> {
        match *self {
            Variant::Async { balancing, .. } => balancing,
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown variant `{label}`: {reason}; expected one of sync, ssync(n), async(n), \
     async(n)+split(f), async(n)+joint(f), async(n)+hybrid(f,k), async(n)+steal(f), \
     async(n)+steal-split(f), async(n)+steal-hybrid(f,k)"
)]
pub struct VariantError {
    pub label: String,
    pub reason: String,
}

impl Variant {
    /// Parses a paper label. Spaces are ignored, so the paper's
    /// `async(4) + hybrid(0.001, 500)` is accepted as written.
    pub fn parse(label: &str) -> Result<Variant, VariantError> {
        let compact: String = label.chars().filter(|c| !c.is_whitespace()).collect();
        let fail = |reason: &str| VariantError {
            label: label.to_string(),
            reason: reason.to_string(),
        };
        let (base, balancing) = match compact.split_once('+') {
            Some((b, l)) => (b, Some(l)),
            None => (compact.as_str(), None),
        };
        let mut v = if base == "sync" {
            Variant::Sync
        } else if let Some(args) = call(base, "ssync") {
            let staleness = one_arg(args).ok_or_else(|| fail("ssync takes a whole number"))?;
            Variant::Ssync { staleness }
        } else if let Some(args) = call(base, "async") {
            let subdomains = one_arg(args)
                .filter(|&n| n > 0 && n <= crate::limits::MAX_SUBDOMAINS)
                .ok_or_else(|| fail("async takes a positive whole number of subdomains"))?;
            Variant::Async {
                subdomains,
                balancing: None,
            }
        } else {
            return Err(fail("no such scheme"));
        };
        if let Some(lb) = balancing {
            let Variant::Async { balancing, .. } = &mut v else {
                return Err(fail("only async variants can be balanced"));
            };
            let interval = |args: &str| -> Result<f64, VariantError> {
                args.parse::<f64>()
                    .ok()
                    .filter(|f| (0.0..=crate::limits::MAX_SECONDS).contains(f))
                    .ok_or_else(|| {
                        fail(&format!(
                            "the balancing interval is a number of seconds from 0 to {:e}",
                            crate::limits::MAX_SECONDS
                        ))
                    })
            };
            // Algorithm 1 is named by its scope alone (the paper's labels);
            // another strategy by its name, then `-split`/`-hybrid`.
            let (strategy, rest) = match lb.strip_prefix("steal") {
                Some(rest) if rest.starts_with('(') => (Strategy::Steal, rest),
                Some(rest) => match rest.strip_prefix('-') {
                    Some(scoped) if !scoped.starts_with('(') => (Strategy::Steal, scoped),
                    _ => return Err(fail("no such balancer")),
                },
                None => (Strategy::Progressive, lb),
            };
            let (scope, interval) = if let Some(args) = call(rest, "split") {
                (Scope::Split, interval(args)?)
            } else if let Some(args) = call(rest, "joint") {
                (Scope::Joint, interval(args)?)
            } else if let Some(args) = call(rest, "hybrid") {
                let (f, k) = args
                    .split_once(',')
                    .ok_or_else(|| fail("hybrid takes two arguments, (f,k)"))?;
                let period = one_arg(k)
                    .filter(|&k| k > 0)
                    .ok_or_else(|| fail("hybrid's period k is a positive whole number"))?;
                (Scope::Hybrid { period }, interval(f)?)
            } else if let Some(args) = call(rest, "").filter(|_| strategy != Strategy::Progressive)
            {
                (Scope::Joint, interval(args)?)
            } else {
                return Err(fail("no such balancer"));
            };
            *balancing = Some(Balanced {
                strategy,
                scope,
                interval,
            });
        }
        Ok(v)
    }
}

/// `name(args)` -> `args` (`name` may be empty: `(args)`).
fn call<'a>(s: &'a str, name: &str) -> Option<&'a str> {
    s.strip_prefix(name)?.strip_prefix('(')?.strip_suffix(')')
}

fn one_arg<T: std::str::FromStr>(s: &str) -> Option<T> {
    s.parse().ok()
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Variant::Sync => write!(f, "sync"),
            Variant::Ssync { staleness } => write!(f, "ssync({staleness})"),
            Variant::Async {
                subdomains,
                balancing,
            } => {
                write!(f, "async({subdomains})")?;
                let Some(b) = balancing else {
                    return Ok(());
                };
                let i = b.interval;
                match (b.strategy, b.scope) {
                    (Strategy::Progressive, Scope::Split) => write!(f, "+split({i})"),
                    (Strategy::Progressive, Scope::Joint) => write!(f, "+joint({i})"),
                    (Strategy::Progressive, Scope::Hybrid { period }) => {
                        write!(f, "+hybrid({i},{period})")
                    }
                    (Strategy::Steal, Scope::Split) => write!(f, "+steal-split({i})"),
                    (Strategy::Steal, Scope::Joint) => write!(f, "+steal({i})"),
                    (Strategy::Steal, Scope::Hybrid { period }) => {
                        write!(f, "+steal-hybrid({i},{period})")
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_paper_label_round_trips() {
        for label in [
            "sync",
            "ssync(1)",
            "ssync(30)",
            "async(1)",
            "async(4)",
            "async(4)+split(0.001)",
            "async(4)+joint(0.001)",
            "async(4)+hybrid(0.001,500)",
            "async(4)+split(0.01)",
            "async(4)+steal(0.001)",
            "async(4)+steal-split(0.001)",
            "async(4)+steal-hybrid(0.001,50)",
        ] {
            assert_eq!(Variant::parse(label).unwrap().to_string(), label);
        }
    }

    #[test]
    fn labels_with_spaces_as_printed_in_the_paper_parse() {
        let v = Variant::parse("async(4) + hybrid(0.001, 500)").unwrap();
        let b = v.balancing().unwrap();
        assert_eq!(b.kind(), BalancerKind::Hybrid);
        assert_eq!(
            b,
            Balanced {
                strategy: Strategy::Progressive,
                scope: Scope::Hybrid { period: 500 },
                interval: 0.001,
            }
        );
        assert_eq!(v.subdomains(), 4);
    }

    #[test]
    fn labels_set_mode_staleness_and_subdomains() {
        let s = Variant::parse("ssync(30)").unwrap();
        assert_eq!(
            (s.mode(), s.staleness(), s.subdomains()),
            (Mode::Ssync, 30, 1)
        );
        let a = Variant::parse("async(4)").unwrap();
        assert_eq!(
            (a.mode(), a.subdomains(), a.balancing()),
            (Mode::Async, 4, None)
        );
    }

    #[test]
    fn malformed_labels_are_rejected_with_the_label_named() {
        for bad in [
            "",
            "synch",
            "async",
            "async(0)",
            "async(x)",
            "ssync(-1)",
            "sync+split(0.1)",
            "async(4)+split",
            "async(4)+split(-1)",
            "async(4)+hybrid(0.1)",
            "async(4)+hybrid(0.1,0)",
            "async(4)+greedy(0.1)",
            "async(4)+(0.1)",
            "async(4)+steal",
            "async(4)+steal-(0.1)",
        ] {
            let e = Variant::parse(bad).unwrap_err();
            assert!(e.to_string().contains(&format!("`{bad}`")), "{e}");
        }
    }
}
