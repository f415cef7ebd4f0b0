//! A quantile of the latest samples of a slow statistic, for references a link learns about its
//! own room (the still cue's empty-room level, the breathing band's empty-room floor).

/// The order statistic `pick(len)` (an index into the sorted samples) of the last `window`
/// samples, recomputed every `every` new samples once `min` are in. The samples are
/// per-analysis or per-tick figures, so a selection every few dozen pushes costs little.
#[derive(Debug, Clone)]
pub struct RunningQuantile {
    ring: Vec<f32>,
    pos: usize,
    fresh: usize,
    window: usize,
    min: usize,
    every: usize,
    pick: fn(usize) -> usize,
    value: Option<f32>,
    scratch: Vec<f32>,
}

impl RunningQuantile {
    /// `pick` maps the sample count to the index of the wanted order statistic (e.g.
    /// `|n| (n - 1) * 95 / 100` for the 95th percentile); it must return less than `n`.
    pub fn new(window: usize, min: usize, every: usize, pick: fn(usize) -> usize) -> Self {
        Self {
            ring: Vec::new(),
            pos: 0,
            fresh: 0,
            window: window.max(1),
            min: min.max(1),
            every: every.max(1),
            pick,
            value: None,
            scratch: Vec::new(),
        }
    }

    pub fn push(&mut self, x: f32) {
        if self.ring.len() < self.window {
            self.ring.push(x);
        } else {
            self.ring[self.pos] = x;
            self.pos = (self.pos + 1) % self.window;
        }
        self.fresh += 1;
        if self.ring.len() >= self.min && self.fresh >= self.every {
            self.fresh = 0;
            self.scratch.clone_from(&self.ring);
            let k = (self.pick)(self.scratch.len()).min(self.scratch.len() - 1);
            let (_, v, _) = self.scratch.select_nth_unstable_by(k, f32::total_cmp);
            self.value = Some(*v);
        }
    }

    /// The latest quantile; `None` until `min` samples were in at a recomputation.
    pub fn value(&self) -> Option<f32> {
        self.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_last_window_and_waits_for_its_minimum() {
        let mut q = RunningQuantile::new(10, 5, 1, |n| n / 2);
        for x in 0..4 {
            q.push(x as f32);
        }
        assert_eq!(q.value(), None);
        q.push(4.0);
        assert_eq!(q.value(), Some(2.0));
        // Ten high samples push every low one out of the window.
        for _ in 0..10 {
            q.push(100.0);
        }
        assert_eq!(q.value(), Some(100.0));
    }

    #[test]
    fn recomputes_only_every_so_many_samples() {
        let mut q = RunningQuantile::new(100, 1, 3, |n| n - 1);
        q.push(1.0);
        q.push(2.0);
        assert_eq!(q.value(), None);
        q.push(3.0);
        assert_eq!(q.value(), Some(3.0));
        q.push(9.0);
        assert_eq!(q.value(), Some(3.0), "not yet recomputed");
    }
}
