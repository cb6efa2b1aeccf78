//! The files `braid plot` draws each as its own figure: a `validation.json`
//! of `braid validate` and the benchmark's `speed.json` and `roofline.json`.
//! Each is read whole by its own reader and checked before anything is
//! written, so a refusal leaves no folder and no half a figure behind.

use std::path::{Path, PathBuf};

use crate::lab::plot::PlotError;
use crate::lab::plot::input::Input;
use crate::lab::plot::roofline::Roofline;
use crate::lab::plot::speed::Speed;
use crate::lab::validate::{ValidateError, Validation};

/// One such file, read and checked.
pub(crate) enum OwnFigure {
    Validation(Box<Validation>),
    Speed(Box<Speed>),
    Roofline(Box<Roofline>),
}

/// Why one could not be read or drawn.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OwnError {
    #[error(transparent)]
    Validation(Box<ValidateError>),
    #[error(transparent)]
    Plot(#[from] PlotError),
    #[error("{}: {message}", path.display())]
    Draw { path: PathBuf, message: String },
}

impl From<ValidateError> for OwnError {
    fn from(e: ValidateError) -> OwnError {
        OwnError::Validation(Box::new(e))
    }
}

impl OwnError {
    /// Whether the file is at fault (exit status 2), not the output.
    pub(crate) fn is_bad_input(&self) -> bool {
        match self {
            OwnError::Validation(e) => e.is_bad_input(),
            OwnError::Plot(e) => e.is_bad_input(),
            OwnError::Draw { .. } => false,
        }
    }
}

impl OwnFigure {
    /// `path` read as `kind`; `None` for a results file, which is not
    /// drawn on its own.
    pub(crate) fn read(path: &Path, kind: Input) -> Result<Option<OwnFigure>, OwnError> {
        Ok(Some(match kind {
            Input::Results => return Ok(None),
            Input::Validation => OwnFigure::Validation(Box::new(crate::lab::validate::read(path)?)),
            Input::Speed => OwnFigure::Speed(Box::new(crate::lab::plot::speed::read(path)?)),
            Input::Roofline => {
                OwnFigure::Roofline(Box::new(crate::lab::plot::roofline::read(path)?))
            }
        }))
    }

    /// Draws it into `out` (which exists); the files written.
    pub(crate) fn draw(&self, out: &Path) -> Result<Vec<PathBuf>, OwnError> {
        Ok(match self {
            OwnFigure::Validation(v) => crate::lab::validate::redraw(v, out)?,
            OwnFigure::Speed(s) => s.draw(out, "speed")?,
            OwnFigure::Roofline(r) => {
                r.draw(out, "roofline").map_err(|message| OwnError::Draw {
                    path: out.join("roofline"),
                    message,
                })?
            }
        })
    }
}
