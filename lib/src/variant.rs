//! Synchronisation schemes and their paper labels (`sync`, `ssync(30)`,
//! `async(4)+hybrid(0.001,500)`, ...): parsing and printing.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub(crate) use crate::policy::Strategy;
use crate::policy::{Named, Scope};

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

impl Mode {
    /// Every scheme's name, as the `mode` key and paper labels write it:
    /// the one list of them (serde's lowercase names are held to it by a
    /// test).
    pub const NAMES: [(&'static str, Mode); 3] = [
        ("sync", Mode::Sync),
        ("ssync", Mode::Ssync),
        ("async", Mode::Async),
    ];

    /// This scheme's name.
    ///
    /// ```
    /// assert_eq!(braid::Mode::Ssync.name(), "ssync");
    /// ```
    pub fn name(self) -> &'static str {
        Mode::NAMES
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("?", |(n, _)| n)
    }
}

/// Which progressive balancing policy runs (async mode only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BalancerKind {
    /// No balancer.
    None,
    /// Every socket balanced on its own.
    Split,
    /// All cores balanced together.
    Joint,
    /// Split, plus one cross-socket move every `hybrid_period`-th call.
    Hybrid,
    /// Chosen while running from `lb_candidates`, by measured effort.
    Auto,
    /// Chosen at each call by a trained model (`learned:MODEL.json`).
    Learned,
}

/// The `balancer` key: a balancer, and for `learned` its model's file
/// (`learned:MODEL.json`).
///
/// ```
/// use braid::{BalancerKey, BalancerKind};
/// let b: BalancerKey = "learned:m.json".parse().unwrap();
/// assert_eq!((b.kind, b.to_string().as_str()), (BalancerKind::Learned, "learned:m.json"));
/// assert_eq!("joint".parse::<BalancerKey>().unwrap(), BalancerKind::Joint);
/// assert!("learned:".parse::<BalancerKey>().is_err());
/// ```
pub type BalancerKey = crate::choice::WithFile<BalancerKind>;

impl crate::choice::Choice for BalancerKind {
    const NAMES: &'static [(&'static str, BalancerKind)] = &[
        ("none", BalancerKind::None),
        ("split", BalancerKind::Split),
        ("joint", BalancerKind::Joint),
        ("hybrid", BalancerKind::Hybrid),
        ("auto", BalancerKind::Auto),
        ("learned", BalancerKind::Learned),
    ];
    const WITH_FILE: (BalancerKind, &'static str) = (BalancerKind::Learned, "MODEL.json");
}

/// A scheme as the paper labels it: a staleness only in ssync, a
/// subdomain count and a balancer only in async.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Variant {
    /// One subdomain per domain, a barrier per iteration.
    Sync,
    /// One subdomain per domain, neighbours at most `staleness` apart.
    Ssync {
        /// The bound, in updates.
        staleness: u64,
    },
    /// Bulk-synchronous and balanced (`sync(n)+BALANCER(f)`, simulated
    /// only): `subdomains` per domain, a barrier per iteration, and at the
    /// barrier a balancer whose call stalls every thread, as in the
    /// bulk-synchronous codes ULBA models (anticipating-load-imbalance-ulba.txt).
    Bulk {
        /// Subdomains per domain.
        subdomains: usize,
        /// The balancer.
        balancer: LabelBalancer,
    },
    /// `subdomains` per domain, no waiting, balanced or not.
    Async {
        /// Subdomains per domain.
        subdomains: usize,
        /// The balancer, if any.
        balancer: Option<LabelBalancer>,
    },
}

/// The balancer of a label: which one and how often it is called (`plan`
/// builds the engines' [`BalancerSettings`](crate::engine::BalancerSettings) from it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LabelBalancer {
    /// Which balancer.
    pub pick: Pick,
    /// How often it is called.
    pub interval: Interval,
}

/// One named balancer, or `auto` (chosen while running).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pick {
    /// This strategy over this scope.
    One(Named),
    /// Chosen while running from `lb_candidates`, by measured effort.
    Auto,
    /// Chosen at each call by a trained model (`balancer = learned`).
    Learned,
}

/// Seconds between balancer calls, or `auto`: the one type for the
/// `lb_interval` key, a label's `f` and what the engines schedule by.
/// Written as a number of seconds or `auto`, in labels, `config.txt` and
/// reports alike.
///
/// ```
/// use braid::Interval;
/// use std::time::Duration;
/// assert_eq!(Interval::Seconds(0.001).to_string(), "0.001");
/// assert_eq!(Interval::Seconds(0.001).duration(), Some(Duration::from_millis(1)));
/// assert_eq!(Interval::Auto.duration(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Interval {
    /// Every this many seconds.
    Seconds(f64),
    /// `lb_interval = auto`: when the imbalance accumulated since the last
    /// call is predicted to cost what a call does (`schedule::calls`).
    Auto,
    /// `lb_interval = degradation`: ULBA's trigger in a bulk-synchronous
    /// run, when the iterations since the last call have together lost
    /// what a call costs (`schedule::degradation`).
    Degradation,
}

impl Interval {
    /// The fixed interval, or `None` for `auto`.
    pub fn duration(self) -> Option<Duration> {
        match self {
            Interval::Seconds(s) => Some(Duration::from_secs_f64(s)),
            Interval::Auto | Interval::Degradation => None,
        }
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Interval::Seconds(s) => write!(f, "{s}"),
            Interval::Auto => f.write_str("auto"),
            Interval::Degradation => f.write_str("degradation"),
        }
    }
}

impl Serialize for Interval {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Interval::Seconds(v) => s.serialize_f64(*v),
            Interval::Auto => s.serialize_str("auto"),
            Interval::Degradation => s.serialize_str("degradation"),
        }
    }
}

impl<'de> Deserialize<'de> for Interval {
    /// A number of seconds or `"auto"` (the inverse of `Serialize`).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Seconds(f64),
            Text(String),
        }
        match Repr::deserialize(d)? {
            Repr::Seconds(v) => Ok(Interval::Seconds(v)),
            Repr::Text(t) if t == "auto" => Ok(Interval::Auto),
            Repr::Text(t) if t == "degradation" => Ok(Interval::Degradation),
            Repr::Text(t) => Err(serde::de::Error::custom(format!(
                "expected auto, degradation or a number of seconds, found `{t}`"
            ))),
        }
    }
}

impl LabelBalancer {
    /// The `balancer` key's value: the scope, or auto.
    pub fn kind(&self) -> BalancerKind {
        match self.pick {
            Pick::Auto => BalancerKind::Auto,
            Pick::Learned => BalancerKind::Learned,
            Pick::One(n) => match n.scope {
                Scope::Split => BalancerKind::Split,
                Scope::Joint => BalancerKind::Joint,
                Scope::Hybrid { .. } => BalancerKind::Hybrid,
            },
        }
    }
}

impl Variant {
    /// ```
    /// use braid::{Mode, Variant};
    /// let v = Variant::parse("ssync(30)").unwrap();
    /// assert_eq!((v.mode(), v.staleness(), v.subdomains()), (Mode::Ssync, 30, 1));
    /// ```
    pub fn mode(&self) -> Mode {
        match self {
            Variant::Sync | Variant::Bulk { .. } => Mode::Sync,
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
            Variant::Async { subdomains, .. } | Variant::Bulk { subdomains, .. } => subdomains,
            _ => 1,
        }
    }

    /// The balancer, in a balanced async or sync label only.
    pub fn balancer(&self) -> Option<LabelBalancer> {
        match *self {
            Variant::Async { balancer, .. } => balancer,
            Variant::Bulk { balancer, .. } => Some(balancer),
            _ => None,
        }
    }
}

/// A label that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown variant `{label}`: {reason}; expected sync, ssync(n), async(n), \
     async(n)+BALANCER(f) (f seconds between calls, or auto) or, simulated, \
     sync(n)+BALANCER(f) (f may also be degradation), where BALANCER is split, \
     joint or hybrid (Algorithm 1; hybrid takes (f,k)), auto, or a strategy ({}) alone \
     or with -split or -hybrid",
    label_strategies()
)]
pub struct VariantError {
    /// The label, as given.
    pub label: String,
    /// What is wrong with it.
    pub reason: String,
}

/// The strategies a label names by their own name, from the one list of
/// them (Algorithm 1 is named by its scope instead).
fn label_strategies() -> String {
    Strategy::all()
        .filter(|&s| s != Strategy::PROGRESSIVE)
        .map(|s| s.name())
        .collect::<Vec<_>>()
        .join(", ")
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
        let mut v = if base == Mode::Sync.name() {
            Variant::Sync
        } else if let Some(args) = call(base, Mode::Sync.name()) {
            let subdomains = one_arg(args)
                .filter(|&n| n > 0 && n <= crate::limits::MAX_SUBDOMAINS)
                .ok_or_else(|| fail("sync(n) takes a positive whole number of subdomains"))?;
            let Some(lb) = balancing else {
                return Err(fail(
                    "sync(n) is balanced at its barrier: sync(n)+BALANCER(f); plain sync is \
                     `sync`",
                ));
            };
            let balancer = label_balancer(lb).map_err(|reason| fail(&reason))?;
            return Ok(Variant::Bulk {
                subdomains,
                balancer,
            });
        } else if let Some(args) = call(base, Mode::Ssync.name()) {
            let staleness = one_arg(args).ok_or_else(|| fail("ssync takes a whole number"))?;
            Variant::Ssync { staleness }
        } else if let Some(args) = call(base, Mode::Async.name()) {
            let subdomains = one_arg(args)
                .filter(|&n| n > 0 && n <= crate::limits::MAX_SUBDOMAINS)
                .ok_or_else(|| fail("async takes a positive whole number of subdomains"))?;
            Variant::Async {
                subdomains,
                balancer: None,
            }
        } else if let Some(full) = balancing.is_none().then(|| as_balanced(base)).flatten() {
            // `split` alone: a balancer needs the scheme it balances.
            return Err(fail(&format!(
                "`{base}` is a balancer, not a scheme: did you mean {full}?"
            )));
        } else {
            let scheme = base.split('(').next().unwrap_or(base);
            return Err(fail(&format!(
                "no such scheme `{scheme}`{}",
                crate::suggest::hint(scheme, Mode::NAMES.map(|(n, _)| n))
            )));
        };
        if let Some(lb) = balancing {
            let Variant::Async { balancer, .. } = &mut v else {
                return Err(fail(
                    "only async(n) and sync(n) variants can be balanced (sync's barrier \
                     needs its subdomains: sync(4)+greedy(auto))",
                ));
            };
            *balancer = Some(label_balancer(lb).map_err(|reason| fail(&reason))?);
        }
        Ok(v)
    }
}

/// A label's balancer part: `name(f)`, `hybrid`-scoped `name(f,k)`, or
/// `auto(f)`.
fn label_balancer(lb: &str) -> Result<LabelBalancer, String> {
    let (name, args) = match lb
        .split_once('(')
        .and_then(|(n, a)| Some((n, a.strip_suffix(')')?)))
    {
        Some(parts) => parts,
        None => return Err(balancer_without_arguments(lb)),
    };
    let every = |f: &str| -> Result<Interval, String> {
        if f == "auto" {
            return Ok(Interval::Auto);
        }
        if f == "degradation" {
            return Ok(Interval::Degradation);
        }
        f.parse::<f64>()
            .ok()
            .filter(|f| (0.0..=crate::limits::MAX_SECONDS).contains(f))
            .map(Interval::Seconds)
            .ok_or_else(|| {
                format!(
                    "the balancing interval is auto, degradation or a number of seconds from 0 \
                     to {:e}",
                    crate::limits::MAX_SECONDS
                )
            })
    };
    if name == "auto" || name == "learned" {
        return Ok(LabelBalancer {
            pick: match name {
                "auto" => Pick::Auto,
                _ => Pick::Learned,
            },
            interval: every(args)?,
        });
    }
    let mut named: Named = name.parse().map_err(|()| unknown_balancer(name))?;
    let interval = if let Scope::Hybrid { period } = &mut named.scope {
        let (f, k) = args
            .split_once(',')
            .ok_or("hybrid takes two arguments, (f,k)")?;
        *period = one_arg(k)
            .filter(|&k| k > 0)
            .ok_or("hybrid's period k is a positive whole number")?;
        every(f)?
    } else {
        every(args)?
    };
    Ok(LabelBalancer {
        pick: Pick::One(named),
        interval,
    })
}

/// `split` alone: a known balancer that lacks its arguments, or an unknown
/// one.
fn balancer_without_arguments(lb: &str) -> String {
    let name = lb.split('(').next().unwrap_or(lb);
    if name == "auto" || name == "learned" || name.parse::<Named>().is_ok() {
        let (args, example) = match name.ends_with("hybrid") {
            true => ("(f,k)", "(0.001,5)"),
            false => ("(f)", "(0.001)"),
        };
        return format!(
            "`{name}` needs its balancing interval f in seconds (or auto): \
             {name}{args}, e.g. {name}{example}"
        );
    }
    unknown_balancer(name)
}

/// `lb` (a balancer named alone, as in `split` or `greedy(auto)`) as the
/// label a user most likely meant: it balancing async(4), with the paper's
/// interval where `lb` gives none.
fn as_balanced(lb: &str) -> Option<String> {
    let name = lb.split('(').next().unwrap_or(lb);
    if !(name == "auto" || name == "learned" || name.parse::<Named>().is_ok()) {
        return None;
    }
    let full = match lb.contains('(') {
        true => lb.to_string(),
        false if name.ends_with("hybrid") => format!("{name}(0.001,500)"),
        false => format!("{name}(0.001)"),
    };
    let label = format!("async(4)+{full}");
    Variant::parse(&label).is_ok().then_some(label)
}

/// `no such balancer `x``, with the nearest known name.
fn unknown_balancer(name: &str) -> String {
    let known = Named::names();
    let known = known.iter().map(String::as_str).chain(["auto", "learned"]);
    format!(
        "no such balancer `{name}`{}",
        crate::suggest::hint(name, known)
    )
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
            Variant::Sync => f.write_str(Mode::Sync.name()),
            Variant::Ssync { staleness } => write!(f, "{}({staleness})", Mode::Ssync.name()),
            Variant::Bulk {
                subdomains,
                balancer,
            } => write!(f, "{}({subdomains})+{balancer}", Mode::Sync.name()),
            Variant::Async {
                subdomains,
                balancer,
            } => {
                write!(f, "{}({subdomains})", Mode::Async.name())?;
                match balancer {
                    Some(b) => write!(f, "+{b}"),
                    None => Ok(()),
                }
            }
        }
    }
}

impl fmt::Display for LabelBalancer {
    /// A label's balancer part: `greedy(0.001)`, `hybrid(0.001,5)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = self.interval;
        match self.pick {
            Pick::Auto => write!(f, "auto({i})"),
            Pick::Learned => write!(f, "learned({i})"),
            Pick::One(n) => match n.scope {
                Scope::Hybrid { period } => write!(f, "{n}({i},{period})"),
                _ => write!(f, "{n}({i})"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// serde's names (reports, records) are the one list's: a scheme
    /// renamed in one place and not the other fails here.
    #[test]
    fn every_scheme_is_written_and_read_by_its_one_name() {
        for (name, mode) in Mode::NAMES {
            assert_eq!(serde_json::to_string(&mode).unwrap(), format!("\"{name}\""));
            assert_eq!(mode.name(), name);
        }
        assert_eq!(Variant::parse("sync").unwrap().to_string(), "sync");
        assert_eq!(Variant::parse("ssync(2)").unwrap().to_string(), "ssync(2)");
        assert_eq!(Variant::parse("async(4)").unwrap().to_string(), "async(4)");
    }

    #[test]
    fn a_bad_label_is_told_every_strategy_it_could_have_named() {
        let e = VariantError {
            label: "async(4)+nope(0.001)".into(),
            reason: "no such balancer".into(),
        }
        .to_string();
        for s in crate::policy::Strategy::all() {
            let named = match s {
                s if s == crate::policy::Strategy::PROGRESSIVE => "split",
                s => s.name(),
            };
            assert!(e.contains(named), "{named} missing: {e}");
        }
    }

    /// `split` alone is a balancer without its scheme: the message names
    /// the label that was most likely meant, and that label parses.
    #[test]
    fn a_balancer_named_alone_is_answered_with_the_label_it_needs() {
        for (given, meant) in [
            ("split", "async(4)+split(0.001)"),
            ("hybrid", "async(4)+hybrid(0.001,500)"),
            ("greedy(auto)", "async(4)+greedy(auto)"),
            ("steal-split", "async(4)+steal-split(0.001)"),
        ] {
            let e = Variant::parse(given).unwrap_err().to_string();
            assert!(e.contains(&format!("did you mean {meant}?")), "{e}");
            Variant::parse(meant).unwrap();
        }
        let e = Variant::parse("spilt").unwrap_err().to_string();
        assert!(!e.contains("did you mean async"), "{e}");
    }

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
            "async(4)+greedy(0.001)",
            "async(4)+refine-split(0.01)",
            "async(4)+anticipate-hybrid(auto,50)",
            "async(4)+residual(0.001)",
            "async(4)+auto(0.001)",
            "async(4)+auto(auto)",
            "async(4)+split(auto)",
            "sync(16)+greedy(auto)",
            "sync(4)+anticipate(0.001)",
            "sync(4)+hybrid(0.001,5)",
            "sync(16)+anticipate(degradation)",
        ] {
            assert_eq!(Variant::parse(label).unwrap().to_string(), label);
        }
    }

    #[test]
    fn labels_with_spaces_as_printed_in_the_paper_parse() {
        let v = Variant::parse("async(4) + hybrid(0.001, 500)").unwrap();
        let b = v.balancer().unwrap();
        assert_eq!(b.kind(), BalancerKind::Hybrid);
        assert_eq!(
            b,
            LabelBalancer {
                pick: Pick::One(Named {
                    strategy: Strategy::PROGRESSIVE,
                    scope: Scope::Hybrid { period: 500 },
                }),
                interval: Interval::Seconds(0.001),
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
            (a.mode(), a.subdomains(), a.balancer()),
            (Mode::Async, 4, None)
        );
        let b = Variant::parse("sync(16)+greedy(auto)").unwrap();
        assert_eq!((b.mode(), b.subdomains()), (Mode::Sync, 16));
        assert_eq!(b.balancer().unwrap().interval, Interval::Auto);
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
            "sync(4)",
            "sync(0)+greedy(0.1)",
            "sync(4)+greedy",
            "async(4)+split",
            "async(4)+split(-1)",
            "async(4)+hybrid(0.1)",
            "async(4)+hybrid(0.1,0)",
            "async(4)+greedy(0.1,2)",
            "async(4)+(0.1)",
            "async(4)+steal",
            "async(4)+steal-(0.1)",
            "async(4)+progressive(0.1)",
            "async(4)+greedy-joint-split(0.1)",
            "async(4)+auto(0.1,5)",
            "async(4)+auto(never)",
            "async(4)+split(auto",
        ] {
            let e = Variant::parse(bad).unwrap_err();
            assert!(e.to_string().contains(&format!("`{bad}`")), "{e}");
        }
    }
}
