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

/// A scheme as the paper labels it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Variant {
    pub mode: Mode,
    pub staleness: u64,
    pub subdomains: usize,
    pub balancer: BalancerKind,
    pub lb_interval: f64,
    pub hybrid_period: u64,
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
        let mut v = Variant {
            mode: Mode::Async,
            staleness: 0,
            subdomains: 1,
            balancer: BalancerKind::None,
            lb_interval: 0.0,
            hybrid_period: 0,
        };
        if base == "sync" {
            v.mode = Mode::Sync;
        } else if let Some(args) = call(base, "ssync") {
            v.mode = Mode::Ssync;
            v.staleness = one_arg(args).ok_or_else(|| fail("ssync takes a whole number"))?;
        } else if let Some(args) = call(base, "async") {
            v.subdomains = one_arg(args)
                .filter(|&n| n > 0 && n <= crate::limits::MAX_SUBDOMAINS)
                .ok_or_else(|| fail("async takes a positive whole number of subdomains"))?;
        } else {
            return Err(fail("no such scheme"));
        }
        if let Some(lb) = balancing {
            if v.mode != Mode::Async {
                return Err(fail("only async variants can be balanced"));
            }
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
            if let Some(args) = call(lb, "split") {
                v.balancer = BalancerKind::Split;
                v.lb_interval = interval(args)?;
            } else if let Some(args) = call(lb, "joint") {
                v.balancer = BalancerKind::Joint;
                v.lb_interval = interval(args)?;
            } else if let Some(args) = call(lb, "hybrid") {
                let (f, k) = args
                    .split_once(',')
                    .ok_or_else(|| fail("hybrid takes two arguments, (f,k)"))?;
                v.balancer = BalancerKind::Hybrid;
                v.lb_interval = interval(f)?;
                v.hybrid_period = one_arg(k)
                    .filter(|&k| k > 0)
                    .ok_or_else(|| fail("hybrid's period k is a positive whole number"))?;
            } else {
                return Err(fail("no such balancer"));
            }
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
        match self.mode {
            Mode::Sync => write!(f, "sync")?,
            Mode::Ssync => write!(f, "ssync({})", self.staleness)?,
            Mode::Async => write!(f, "async({})", self.subdomains)?,
        }
        if self.mode == Mode::Async {
            match self.balancer {
                BalancerKind::None => {}
                BalancerKind::Split => write!(f, "+split({})", self.lb_interval)?,
                BalancerKind::Joint => write!(f, "+joint({})", self.lb_interval)?,
                BalancerKind::Hybrid => {
                    write!(f, "+hybrid({},{})", self.lb_interval, self.hybrid_period)?
                }
            }
        }
        Ok(())
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
        assert_eq!(v.balancer, BalancerKind::Hybrid);
        assert_eq!(v.hybrid_period, 500);
        assert_eq!(v.lb_interval, 0.001);
        assert_eq!(v.subdomains, 4);
    }

    #[test]
    fn labels_set_mode_staleness_and_subdomains() {
        let s = Variant::parse("ssync(30)").unwrap();
        assert_eq!((s.mode, s.staleness, s.subdomains), (Mode::Ssync, 30, 1));
        let a = Variant::parse("async(4)").unwrap();
        assert_eq!(
            (a.mode, a.subdomains, a.balancer),
            (Mode::Async, 4, BalancerKind::None)
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
