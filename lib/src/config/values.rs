//! The value types of keys that other modules read as they are: `auto` or
//! a value ([`AutoOr`]) and a noisy core's entry ([`NoiseCore`]).

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `auto`, or a value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AutoOr<T> {
    /// braid chooses (each key says how).
    Auto,
    /// This value.
    Value(T),
}

impl<T: Serialize> Serialize for AutoOr<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AutoOr::Auto => s.serialize_str("auto"),
            AutoOr::Value(v) => v.serialize(s),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for AutoOr<T> {
    /// `"auto"`, or a value as `T` reads it (the inverse of `Serialize`).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr<T> {
            Value(T),
            Text(String),
        }
        match Repr::<T>::deserialize(d)? {
            Repr::Value(v) => Ok(AutoOr::Value(v)),
            Repr::Text(t) if t == "auto" => Ok(AutoOr::Auto),
            Repr::Text(t) => Err(serde::de::Error::custom(format!(
                "expected auto or a value, found `{t}`"
            ))),
        }
    }
}

impl<T> AutoOr<T> {
    /// The value, or `None` for `auto`.
    ///
    /// ```
    /// use braid::AutoOr;
    /// assert_eq!(AutoOr::Value(3).value(), Some(&3));
    /// assert_eq!(AutoOr::<u8>::Auto.value(), None);
    /// ```
    pub fn value(&self) -> Option<&T> {
        match self {
            AutoOr::Auto => None,
            AutoOr::Value(v) => Some(v),
        }
    }
}

impl<T: fmt::Display> fmt::Display for AutoOr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AutoOr::Auto => write!(f, "auto"),
            AutoOr::Value(v) => write!(f, "{v}"),
        }
    }
}

/// One noisy core: its id and, at most one of, the duty cycle to aim for or
/// the trace to replay (without either, `noise_sleep_us` /
/// `noise_work_iters` as given).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseCore {
    /// `auto`: the core of the thread whose domain touches the source.
    pub core: AutoOr<usize>,
    /// The share of the core to take, in (0, 1).
    pub duty: Option<f64>,
    /// A trace in the selfish format (`braid-noise --record`), relative to
    /// the working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<PathBuf>,
}
