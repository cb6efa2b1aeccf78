//! The lab: what runs, measures and draws many runs, above the library's
//! one run (`drive`). Suites of samples run as processes into resumable
//! results files ([`experiment`]); figures ([`plot`]) and one tidy table
//! ([`table`]) drawn from those files; a strategy chooser learned from
//! them ([`learn`]); the simulator's costs measured in real runs on this
//! machine ([`calibrate`]) and the simulator checked against the machine
//! ([`validate`]), with the machine's own uncertainty ([`bootstrap`]).

pub(crate) mod bootstrap;
pub(crate) mod calibrate;
pub(crate) mod experiment;
pub(crate) mod learn;
pub(crate) mod own;
pub(crate) mod plot;
pub(crate) mod regrets;
pub(crate) mod reproduce;
pub(crate) mod table;
pub(crate) mod ulba;
pub(crate) mod validate;
