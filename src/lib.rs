//! braid: a shared-memory asynchronous 2D Jacobi solver with progressive
//! load balancing (Zarins & Weiland, IA3 2017), built for experiments on
//! multi-socket nodes.
//!
//! Data flows one way: [`config`] -> [`problem`] + [`topology`] -> [`plan`]
//! -> [`runtime`] -> [`report`] -> [`cli`].

pub mod calibrate;
pub mod child;
pub mod cli;
pub mod config;
pub mod engine;
pub mod experiment;
pub mod files;
pub mod interrupt;
pub mod kernel;
pub mod limits;
pub mod model;
pub mod noise;
pub mod plan;
pub mod plot;
pub mod policy;
pub mod problem;
pub mod report;
pub mod runtime;
pub mod schedule;
pub mod sim;
pub mod subdomain;
pub mod topology;
pub mod variant;
