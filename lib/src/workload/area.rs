//! The exact area a disc covers of a rectangle: how much of a subdomain's
//! cells a region of a workload holds, so that a subdomain costs the sum
//! over its cells whatever the decomposition (a cell the circle cuts counts
//! for the part inside).

/// An axis-aligned rectangle `[x0, x1] x [y0, y1]`, in cells.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rect {
    pub x0: f64,
    pub x1: f64,
    pub y0: f64,
    pub y1: f64,
}

impl Rect {
    pub(crate) fn area(&self) -> f64 {
        (self.x1 - self.x0) * (self.y1 - self.y0)
    }
}

/// The area of the disc of radius `r` about `(cx, cy)` inside `rect`.
///
/// The disc's chord at `x`, clipped to `[y0, y1]`, is integrated in closed
/// form: between the points where the circle crosses `y0` or `y1` the
/// clipped chord is one of four shapes (a constant, the circle on one side,
/// or both), each with an antiderivative.
#[inline]
pub(crate) fn disc_in_rect(cx: f64, cy: f64, r: f64, rect: Rect) -> f64 {
    if r <= 0.0 {
        return 0.0;
    }
    let (a, b) = ((rect.x0).max(cx - r), (rect.x1).min(cx + r));
    if a >= b || rect.y0 >= cy + r || rect.y1 <= cy - r {
        return 0.0;
    }
    // Wholly inside: the farthest corner is.
    let far_x = (rect.x0 - cx).abs().max((rect.x1 - cx).abs());
    let far_y = (rect.y0 - cy).abs().max((rect.y1 - cy).abs());
    if far_x * far_x + far_y * far_y <= r * r {
        return rect.area();
    }
    // Where the circle's upper or lower half crosses y0 or y1.
    let mut cuts = [a, b, a, b, a, b, a, b, a, b];
    let mut n = 2;
    for t in [rect.y1 - cy, cy - rect.y0, rect.y0 - cy, cy - rect.y1] {
        if (0.0..r).contains(&t) {
            let dx = (r * r - t * t).sqrt();
            for x in [cx - dx, cx + dx] {
                if x > a && x < b {
                    cuts[n] = x;
                    n += 1;
                }
            }
        }
    }
    let cuts = &mut cuts[..n];
    cuts.sort_by(f64::total_cmp);
    // Half the chord at x, and its antiderivative.
    let h = |x: f64| (r * r - (x - cx) * (x - cx)).max(0.0).sqrt();
    let big_h = |x: f64| {
        let u = ((x - cx) / r).clamp(-1.0, 1.0);
        0.5 * r * r * (u * (1.0 - u * u).max(0.0).sqrt() + u.asin())
    };
    let mut area = 0.0;
    for w in cuts.windows(2) {
        let (u, v) = (w[0], w[1]);
        if v <= u {
            continue;
        }
        let mid = h(0.5 * (u + v));
        let top_is_edge = cy + mid >= rect.y1;
        let bottom_is_edge = cy - mid <= rect.y0;
        let top = if top_is_edge { rect.y1 } else { cy + mid };
        let bottom = if bottom_is_edge { rect.y0 } else { cy - mid };
        if top <= bottom {
            continue;
        }
        // The integral of top - bottom over [u, v].
        let edges = (v - u)
            * (if top_is_edge { rect.y1 } else { cy } - if bottom_is_edge { rect.y0 } else { cy });
        let arcs = (!top_is_edge as u8 + !bottom_is_edge as u8) as f64 * (big_h(v) - big_h(u));
        area += edges + arcs;
    }
    area.clamp(0.0, rect.area())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    fn rect(x0: f64, x1: f64, y0: f64, y1: f64) -> Rect {
        Rect { x0, x1, y0, y1 }
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1.0)
    }

    #[test]
    fn a_disc_inside_covers_its_own_area_and_one_around_covers_the_rectangle() {
        assert!(close(
            disc_in_rect(5.0, 5.0, 2.0, rect(0.0, 10.0, 0.0, 10.0)),
            4.0 * PI,
            1e-12
        ));
        assert!(close(
            disc_in_rect(5.0, 5.0, 20.0, rect(0.0, 10.0, 0.0, 10.0)),
            100.0,
            1e-12
        ));
        assert_eq!(
            disc_in_rect(50.0, 5.0, 2.0, rect(0.0, 10.0, 0.0, 10.0)),
            0.0
        );
    }

    #[test]
    fn a_rectangle_edge_through_the_centre_takes_half_and_a_corner_a_quarter() {
        let r = 3.0;
        let half = disc_in_rect(0.0, 0.0, r, rect(0.0, 10.0, -10.0, 10.0));
        assert!(close(half, PI * r * r / 2.0, 1e-12), "{half}");
        let top = disc_in_rect(0.0, 0.0, r, rect(-10.0, 10.0, -10.0, 0.0));
        assert!(close(top, PI * r * r / 2.0, 1e-12), "{top}");
        let quarter = disc_in_rect(0.0, 0.0, r, rect(0.0, 10.0, 0.0, 10.0));
        assert!(close(quarter, PI * r * r / 4.0, 1e-12), "{quarter}");
    }

    #[test]
    fn the_area_matches_a_fine_count_of_points_for_any_cut() {
        // Points on a 1/400 lattice of each unit cell, counted inside.
        let count = |cx: f64, cy: f64, r: f64, q: Rect| {
            let k = 400.0;
            let (mut inside, mut all) = (0u64, 0u64);
            let mut x = q.x0 + 0.5 / k;
            while x < q.x1 {
                let mut y = q.y0 + 0.5 / k;
                while y < q.y1 {
                    all += 1;
                    inside += ((x - cx).powi(2) + (y - cy).powi(2) <= r * r) as u64;
                    y += 1.0 / k;
                }
                x += 1.0 / k;
            }
            q.area() * inside as f64 / all as f64
        };
        let mut rng = crate::rng::SplitMix64(42);
        for _ in 0..40 {
            let q = rect(0.0, 3.0, 0.0, 2.0);
            let (cx, cy) = (-1.0 + 5.0 * rng.unit(), -1.0 + 4.0 * rng.unit());
            let r = 0.2 + 2.5 * rng.unit();
            let exact = disc_in_rect(cx, cy, r, q);
            let counted = count(cx, cy, r, q);
            assert!(
                (exact - counted).abs() < 0.01,
                "{cx} {cy} {r}: {exact} against {counted}"
            );
        }
    }
}
