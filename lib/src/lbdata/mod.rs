//! DARMA vt's LB data files, the format that vt's OfflineLB and workload
//! replay, LBAF, vt-tv and lbsim read (defined by vt's
//! `scripts/LBDatafile_schema.py`), both ways: [`read`] checks a
//! directory of them against vt's schema and reads the loads and owners
//! braid replays (`workload = lbdata:DIR`, `lb_strategy = prescribed:DIR`);
//! [`write`] makes a traced run into them (`--lb-data DIR`). The two sit on
//! different levels: reading is a leaf that the workloads and policies
//! use, writing comes after a run's report.

pub(crate) mod read;
pub(crate) mod write;
