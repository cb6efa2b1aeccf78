//! The figures' visual vocabulary: how a variant is drawn in every figure.
//! A variant's colour and marker are a function of its label alone, so a
//! reader who learns that joint is orange and a triangle finds it so on
//! every page:
//!
//! * the **colour's hue** is the family's: plain async, sync, each scope of
//!   the paper's Algorithm 1 and each other strategy (the pairs set side
//!   by side, async and its balancers, split and joint, differ for
//!   colour-blind readers too);
//! * its **shade** says the parameters: lighter for fewer subdomains
//!   (async(1)) or shorter intervals, darker for more, so async(1),
//!   async(4) and async(16) are three blues;
//! * the **marker** says the kind of method: a square for the synchronous
//!   baselines, a circle for plain async, a triangle for progress-based
//!   balancing (Algorithm 1 and steal), a diamond for the load-based
//!   strategies (Charm++'s greedy and refine, ULBA, residual, gossip), a
//!   cross for those that choose among others (auto, learned, prescribed).
//!
//! Mid grey is the models' and no variant's.

use plotters::prelude::*;

use super::Mark;

/// Sixteen distinct colours (Tableau's ten, then six darker ones), so that
/// a figure of up to 16 series repeats none; readable on white.
pub(super) const PALETTE: [(u8, u8, u8); 16] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
    (0, 0, 0),
    (0, 0, 128),
    (128, 128, 0),
    (0, 128, 128),
    (128, 0, 0),
    (200, 0, 200),
];

/// The models' grey, which no variant takes.
pub(super) const MODEL_GREY: usize = 7;

/// Each family's colour (the palette's, while it has one free; a new
/// family may take any colour no other is too close to, which a test
/// checks) and marker.
const FAMILY: &[(&str, (u8, u8, u8), Mark)] = &[
    ("async", PALETTE[0], Mark::Circle),        // blue
    ("joint", PALETTE[1], Mark::Triangle),      // orange
    ("split", PALETTE[4], Mark::Triangle),      // purple
    ("hybrid", PALETTE[9], Mark::Triangle),     // cyan
    ("sync", PALETTE[10], Mark::Square),        // black
    ("ssync", PALETTE[5], Mark::Square),        // brown
    ("steal", PALETTE[2], Mark::Triangle),      // green
    ("greedy", PALETTE[3], Mark::Diamond),      // red
    ("refine", PALETTE[8], Mark::Diamond),      // olive
    ("anticipate", PALETTE[11], Mark::Diamond), // navy
    ("residual", PALETTE[14], Mark::Diamond),   // maroon
    ("gossip", PALETTE[13], Mark::Diamond),     // teal
    ("auto", PALETTE[6], Mark::Cross),          // pink
    ("learned", PALETTE[15], Mark::Cross),      // magenta
    ("prescribed", PALETTE[12], Mark::Cross),   // dark olive
];

/// How one variant is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Look {
    pub colour: RGBColor,
    pub mark: Mark,
}

/// A label's look: its family's hue in the shade of its parameters, and
/// its family's marker (a strategy over a split scope a shade darker than
/// over the joint one, over a hybrid one a shade lighter). A label that does not parse (or names no known
/// family) is drawn as plain async's first spare colour would be: the
/// palette's olive-green, a circle. Plain async is the palette's first
/// colour, its blue (a test below).
pub(super) fn look(label: &str) -> Look {
    let (hue, t, mark) = parts(label);
    Look {
        colour: shaded(hue, t),
        mark,
    }
}

/// A label's family hue, shade and marker ([`look`]).
fn parts(label: &str) -> (RGBColor, f64, Mark) {
    use braid::Variant;
    let Some(v) = Variant::parse(label).ok() else {
        return (colour(12), 0.0, Mark::Circle);
    };
    let name = family(&v);
    let &(_, (r, g, b), mark) = FAMILY
        .iter()
        .find(|(f, _, _)| *f == name)
        .unwrap_or(&FAMILY[0]);
    (RGBColor(r, g, b), shade(&v), mark)
}

/// A balanced sync variant is drawn as its balancer is in async: the
/// strategy's colour and shade (the label tells the two apart).
fn as_async(v: &braid::Variant) -> braid::Variant {
    use braid::Variant;
    match *v {
        Variant::Bulk {
            subdomains,
            balancer,
        } => Variant::Async {
            subdomains,
            balancer: Some(balancer),
        },
        v => v,
    }
}

/// A variant's family: `sync`, `ssync`, `async` (no balancer), or its
/// balancer's strategy (`greedy`, `steal`, ...; over a split or hybrid
/// scope too) or scope (`joint`, `split`, `hybrid`), `auto`, `learned`.
fn family(v: &braid::Variant) -> String {
    use braid::{Pick, Variant};
    let name = match &as_async(v) {
        Variant::Sync | Variant::Bulk { .. } => "sync".to_string(),
        Variant::Ssync { .. } => "ssync".to_string(),
        Variant::Async { balancer: None, .. } => "async".to_string(),
        Variant::Async {
            balancer: Some(b), ..
        } => match b.pick {
            Pick::Auto => "auto".to_string(),
            Pick::Learned => "learned".to_string(),
            Pick::One(named) => named.to_string(),
        },
    };
    name.split(['-', '(']).next().unwrap_or(&name).to_string()
}

/// How far a variant's parameters move its colour from its family's:
/// negative lighter, positive darker, 0 at the figures' usual settings
/// (4 subdomains a domain, a call every millisecond, a hybrid period of
/// 10, a staleness of 1). Each factor of 4 in subdomains and each factor
/// of 10 in interval is one step.
fn shade(v: &braid::Variant) -> f64 {
    use braid::{Interval, Pick, Variant};
    use braid::{Scope, Strategy};
    let t = match as_async(v) {
        Variant::Sync | Variant::Bulk { .. } => 0.0,
        Variant::Ssync { staleness } => (staleness.max(1) as f64).log10(),
        Variant::Async {
            subdomains,
            balancer,
        } => {
            let mut t = (subdomains.max(1) as f64 / 4.0).log2() / 2.0;
            if let Some(b) = balancer {
                t += match b.interval {
                    Interval::Seconds(s) if s > 0.0 => (s / 1e-3).log10(),
                    _ => -1.5,
                };
                if let Pick::One(named) = b.pick {
                    let progressive = named.strategy == Strategy::PROGRESSIVE;
                    if let Scope::Hybrid { period } = named.scope {
                        t += (period.max(1) as f64 / 10.0).log10() / 2.0;
                    }
                    // Algorithm 1's scopes have hues of their own; another
                    // strategy over a split or hybrid scope is a shade of
                    // its strategy's.
                    t += match named.scope {
                        _ if progressive => 0.0,
                        Scope::Joint => 0.0,
                        Scope::Split => 1.0,
                        Scope::Hybrid { .. } => -1.0,
                    };
                }
            }
            t
        }
    };
    t.clamp(-2.0, 2.0)
}

/// `c` moved `t` steps: towards white below 0 (28% a step), towards black
/// above (25% a step).
fn shaded(c: RGBColor, t: f64) -> RGBColor {
    let RGBColor(r, g, b) = c;
    let mix = |x: u8, to: f64, by: f64| (f64::from(x) + (to - f64::from(x)) * by).round() as u8;
    let (to, by) = if t < 0.0 {
        (255.0, 0.28 * -t)
    } else {
        (0.0, 0.25 * t)
    };
    RGBColor(mix(r, to, by), mix(g, to, by), mix(b, to, by))
}

/// The colours of a figure's variants, in order: each its label's
/// [`look`]. Should two of a figure come out too close to tell apart
/// (labels whose parameters shade them alike), the later takes another
/// shade of its hue that no other series of the figure has (or, failing
/// that, a palette colour the figure leaves free), so no two series share
/// one. A test draws every committed figure and finds each variant in one
/// colour in all of them.
pub(super) fn variant_colours(labels: &[String]) -> Vec<RGBColor> {
    let own: Vec<RGBColor> = labels.iter().map(|l| look(l).colour).collect();
    let mut out: Vec<RGBColor> = Vec::with_capacity(labels.len());
    for (k, l) in labels.iter().enumerate() {
        let free = |c: RGBColor, out: &[RGBColor]| {
            !out.iter().any(|&o| too_close(o, c))
                && !own[k + 1..].iter().any(|&o| too_close(o, c))
                && !too_close(c, colour(MODEL_GREY))
        };
        let pick = if !out.iter().any(|&o| too_close(o, own[k])) {
            own[k]
        } else {
            let (hue, t, _) = parts(l);
            let shades = [-1.0, 1.0, -2.0, 2.0, -3.0, 3.0, -4.0, 4.0];
            (shades.iter().map(|d| shaded(hue, (t + d).clamp(-2.0, 2.0))))
                .chain((0..PALETTE.len()).map(colour))
                .find(|&c| free(c, &out))
                .unwrap_or(own[k])
        };
        out.push(pick);
    }
    out
}

/// Whether two colours are too close to tell apart in a legend: no
/// channel differs by 24 or more.
pub(super) fn too_close(a: RGBColor, b: RGBColor) -> bool {
    let d = |x: u8, y: u8| x.abs_diff(y);
    d(a.0, b.0) < 24 && d(a.1, b.1) < 24 && d(a.2, b.2) < 24
}

/// Palette colour `i` (past 16, the palette again): for series that are
/// not variants (a braid's threads, a roofline's ceilings).
pub(super) fn colour(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

/// Draws `mark` at `pt` (data coordinates), `dx` pixels to the side, of
/// half-size `size` pixels, filled or `open`.
pub(super) fn draw_mark<DB: DrawingBackend>(
    chart: &mut super::Chart<'_, DB>,
    mark: Mark,
    pt: (f64, f64),
    (dx, size): (i32, i32),
    colour: RGBColor,
    open: bool,
) -> super::DrawResult
where
    DB::ErrorType: 'static,
{
    // Small open markers (a run's repetitions) are drawn thin.
    let style = match open {
        true => colour.stroke_width(if size <= 3 { 1 } else { 3 }),
        false => colour.filled(),
    };
    let s = size;
    let at = EmptyElement::at(pt);
    match (mark, open) {
        (Mark::None, _) => {}
        (Mark::Square, _) => {
            chart.draw_series([at + Rectangle::new([(dx - s, -s), (dx + s, s)], style)])?;
        }
        (Mark::Circle, _) => {
            chart.draw_series([at + Circle::new((dx, 0), s + 1, style)])?;
        }
        (Mark::Triangle, false) => {
            chart.draw_series([at + TriangleMarker::new((dx, 0), s + 3, style)])?;
        }
        (Mark::Triangle, true) => {
            let p = vec![(dx, -s - 3), (dx + s + 2, s), (dx - s - 2, s), (dx, -s - 3)];
            chart.draw_series([at + PathElement::new(p, style)])?;
        }
        (Mark::Diamond, false) => {
            let p = vec![(dx, -s - 2), (dx + s + 1, 0), (dx, s + 2), (dx - s - 1, 0)];
            chart.draw_series([at + Polygon::new(p, style)])?;
        }
        (Mark::Diamond, true) => {
            let p = vec![
                (dx, -s - 2),
                (dx + s + 1, 0),
                (dx, s + 2),
                (dx - s - 1, 0),
                (dx, -s - 2),
            ];
            chart.draw_series([at + PathElement::new(p, style)])?;
        }
        (Mark::Cross, _) => {
            chart.draw_series([at + Cross::new((dx, 0), s, colour.stroke_width(3))])?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_async_is_the_palettes_blue_and_an_unknown_label_its_olive_green() {
        assert_eq!(look("async(4)").colour, RGBColor(31, 119, 180));
        assert_eq!(look("no such label").colour, colour(12));
        assert_ne!(colour(12), RGBColor(31, 119, 180));
    }

    /// A strategy without a family would be drawn in plain async's colour
    /// without a word: every strategy (Algorithm 1 by its scopes) and
    /// every other family a label can name has its own entry, no two look
    /// alike, and none is the models' grey.
    #[test]
    fn every_family_a_label_can_name_has_a_colour_of_its_own() {
        use braid::Strategy;
        let strategies = Strategy::all()
            .chain([Strategy::PRESCRIBED])
            .filter(|&s| s != Strategy::PROGRESSIVE)
            .map(|s| s.name());
        let others = [
            "async", "sync", "ssync", "joint", "split", "hybrid", "auto", "learned",
        ];
        for name in strategies.chain(others) {
            assert!(
                FAMILY.iter().any(|(f, _, _)| *f == name),
                "`{name}` has no colour in FAMILY"
            );
        }
        let rgb = |(r, g, b): (u8, u8, u8)| RGBColor(r, g, b);
        for (i, (a, ca, _)) in FAMILY.iter().enumerate() {
            assert!(
                !too_close(rgb(*ca), colour(MODEL_GREY)),
                "{a} is the models' grey"
            );
            for (b, cb, _) in &FAMILY[i + 1..] {
                assert!(!too_close(rgb(*ca), rgb(*cb)), "{a} and {b} look alike");
            }
        }
    }

    fn l(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_variant_looks_the_same_whatever_else_its_figure_draws() {
        let a = variant_colours(&l(&["async(4)", "async(4)+joint(0.001)", "sync"]));
        let b = variant_colours(&l(&["async(4)+split(0.001)", "async(4)+joint(0.001)"]));
        let c = variant_colours(&l(&[
            "async(1)",
            "async(16)",
            "async(4)+joint(0.001)",
            "async(4)",
        ]));
        assert_eq!(a[1], b[1]);
        assert_eq!(a[1], c[2]);
        assert_eq!(a[0], c[3], "async(4) beside async(1) keeps its colour");
        // At the usual settings a family's colour is its palette colour.
        assert_eq!(a[0], colour(0));
        assert_eq!(a[1], colour(1));
        assert_eq!(look("async(4)+greedy(0.001)").colour, colour(3));
        let g = variant_colours(&l(&[
            "async(4)+greedy(0.001)",
            "async(4)+greedy-split(0.001)",
        ]));
        assert_eq!(g[0], colour(3), "the first keeps its own");
        assert!(!too_close(g[0], g[1]), "a split scope is a darker shade");
    }

    #[test]
    fn members_of_a_family_are_shades_of_its_hue_lighter_for_fewer_subdomains() {
        let c = variant_colours(&l(&["async(1)", "async(4)", "async(16)"]));
        let sum = |c: RGBColor| u32::from(c.0) + u32::from(c.1) + u32::from(c.2);
        assert!(sum(c[0]) > sum(c[1]) && sum(c[1]) > sum(c[2]), "{c:?}");
        for (x, y) in [(0, 1), (1, 2), (0, 2)] {
            assert!(!too_close(c[x], c[y]), "{c:?}");
        }
        // An automatic interval is lighter than the usual millisecond.
        let s = variant_colours(&l(&["async(4)+split(0.001)", "async(4)+split(auto)"]));
        assert!(!too_close(s[0], s[1]));
    }

    #[test]
    fn no_two_series_of_a_figure_share_a_colour_and_none_takes_the_models_grey() {
        // joint(0.001) and joint(0.00105) shade alike: the second is
        // given a free colour.
        let c = variant_colours(&l(&["async(4)+joint(0.001)", "async(4)+joint(0.00105)"]));
        assert!(!too_close(c[0], c[1]), "{c:?}");
        assert_ne!(c[1], colour(MODEL_GREY));
        let all: Vec<String> = FAMILY
            .iter()
            .map(|(f, _, _)| match *f {
                "sync" => "sync".to_string(),
                "ssync" => "ssync(1)".to_string(),
                "async" => "async(4)".to_string(),
                "auto" => "async(4)+auto(0.001)".to_string(),
                "learned" => "async(4)+learned(0.001)".to_string(),
                "hybrid" => "async(4)+hybrid(0.001,10)".to_string(),
                f => format!("async(4)+{f}(0.001)"),
            })
            .collect();
        let c = variant_colours(&all);
        for (i, x) in c.iter().enumerate() {
            assert!(!too_close(*x, colour(MODEL_GREY)), "{}", all[i]);
            for (j, y) in c.iter().enumerate().skip(i + 1) {
                assert!(!too_close(*x, *y), "{} and {}", all[i], all[j]);
            }
        }
    }

    #[test]
    fn progress_based_and_load_based_strategies_have_different_markers() {
        let m = |s: &str| look(s).mark;
        assert_eq!(m("sync"), Mark::Square);
        assert_eq!(m("ssync(30)"), Mark::Square);
        assert_eq!(m("async(1)"), Mark::Circle);
        for s in [
            "joint(0.001)",
            "split(0.001)",
            "hybrid(0.001,5)",
            "steal(0.001)",
        ] {
            assert_eq!(m(&format!("async(4)+{s}")), Mark::Triangle, "{s}");
        }
        for s in ["greedy", "refine", "anticipate", "residual", "gossip-split"] {
            assert_eq!(m(&format!("async(4)+{s}(0.001)")), Mark::Diamond, "{s}");
        }
        assert_eq!(m("async(4)+auto(0.001)"), Mark::Cross);
    }
}
