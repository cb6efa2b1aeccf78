//! braid's integration tests, one binary (one link of the crate, not one
//! per file): whole runs through the command line, the docs and figures
//! checked against today's braid, and the code's layers. Each file is a
//! module named for its subject; `common` holds what they share.

#[allow(dead_code)]
mod common;

mod balance;
mod docs;
mod engines;
mod experiment;
mod figures;
mod first_hour;
mod full_disk;
mod hardening;
mod kill;
mod layers;
mod lbdata;
mod learned;
#[cfg(feature = "mpi")]
mod mpi;
mod noise;
mod replay;
mod reproduce;
mod run;
mod sim;
mod topology;
mod validate;
mod workload;
