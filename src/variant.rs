//! Synchronisation schemes and their paper labels (`sync`, `ssync(30)`,
//! `async(4)+hybrid(0.001,500)`, ...): parsing and printing.

use std::fmt;

use serde::{Deserialize, Serialize};

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

/// The balancer of a label, with what only it needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Balanced {
    Split { interval: f64 },
    Joint { interval: f64 },
    Hybrid { interval: f64, period: u64 },
}

impl Balanced {
    pub fn kind(&self) -> BalancerKind {
        match self {
            Balanced::Split { .. } => BalancerKind::Split,
            Balanced::Joint { .. } => BalancerKind::Joint,
            Balanced::Hybrid { .. } => BalancerKind::Hybrid,
        }
    }

    /// Seconds between balancer calls.
    pub fn interval(&self) -> f64 {
        match *self {
            Balanced::Split { interval }
            | Balanced::Joint { interval }
            | Balanced::Hybrid { interval, .. } => interval,
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
     async(n)+split(f), async(n)+joint(f), async(n)+hybrid(f,k)"
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
            *balancing = Some(if let Some(args) = call(lb, "split") {
                Balanced::Split {
                    interval: interval(args)?,
                }
            } else if let Some(args) = call(lb, "joint") {
                Balanced::Joint {
                    interval: interval(args)?,
                }
            } else if let Some(args) = call(lb, "hybrid") {
                let (f, k) = args
                    .split_once(',')
                    .ok_or_else(|| fail("hybrid takes two arguments, (f,k)"))?;
                Balanced::Hybrid {
                    interval: interval(f)?,
                    period: one_arg(k)
                        .filter(|&k| k > 0)
                        .ok_or_else(|| fail("hybrid's period k is a positive whole number"))?,
                }
            } else {
                return Err(fail("no such balancer"));
            });
        }
        Ok(v)
    }
}

/// `name(args)` -> `args`.
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
                match balancing {
                    None => Ok(()),
                    Some(Balanced::Split { interval }) => write!(f, "+split({interval})"),
                    Some(Balanced::Joint { interval }) => write!(f, "+joint({interval})"),
                    Some(Balanced::Hybrid { interval, period }) => {
                        write!(f, "+hybrid({interval},{period})")
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
            Balanced::Hybrid {
                interval: 0.001,
                period: 500
            }
        );
        assert_eq!(b.interval(), 0.001);
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
        ] {
            let e = Variant::parse(bad).unwrap_err();
            assert!(e.to_string().contains(&format!("`{bad}`")), "{e}");
        }
    }
}
