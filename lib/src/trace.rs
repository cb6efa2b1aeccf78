//! One sample of a run's trace: every subdomain's update count and owner at
//! one moment, and its object loads so far. Both engines write it, the
//! report carries it, and writing vt's LB data reads it, so it sits below
//! all of them (a leaf: it imports nothing of braid).

use serde::{Deserialize, Serialize};

/// Every subdomain's update count and owner at one moment, and, when the
/// run records them (`--lb-data`), its object loads so far.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TraceSample {
    /// When, seconds from the start.
    pub t_s: f64,
    /// Every subdomain's update count.
    pub counts: Vec<u64>,
    /// Every subdomain's owning thread.
    pub owners: Vec<usize>,
    /// Every subdomain's time spent updating it so far, seconds (empty
    /// unless recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub busy_s: Vec<f64>,
    /// Every subdomain's own work so far, seconds: its busy time less what
    /// noise took from it. Only the simulator knows it exactly (empty
    /// otherwise, and unless recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub work_s: Vec<f64>,
    /// Every thread's time so far off its core, seconds: what noise took
    /// (the simulator's stolen time while working; the runtime's wall time
    /// less CPU time). Empty unless recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost_s: Vec<f64>,
}
