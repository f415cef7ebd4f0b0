//! Resampling irregular arrivals onto a uniform time grid.
//!
//! Spectra assume uniform sampling; CSI arrives with jitter, bursts and gaps at a rate that
//! differs per node. Each stream is therefore integrated into fixed-length grid cells (a box-car
//! anti-alias before decimation): every cell is the mean of the frames that arrived in it, empty
//! cells are bridged by holding the last value for short gaps, and a long gap restarts the series.
//! Estimates downstream then see the same grid whatever the node's real rate.

/// Result of feeding one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GridStep {
    /// The sample fell in the current cell.
    Accumulated,
    /// One or more cells completed: read [`UniformGrid::completed`]; it stands for `cells`
    /// consecutive grid cells (1 plus the empty cells bridged by holding its value).
    Completed { cells: u32 },
    /// The gap before this sample was too long to bridge; the series restarts with it.
    Restarted,
}

/// Accumulates fixed-width vectors into uniform cells of `period_s`.
#[derive(Debug, Clone)]
pub struct UniformGrid {
    period_s: f64,
    max_bridge_cells: u32,
    cell: Option<i64>,
    sum: Vec<f32>,
    count: u32,
    completed: Vec<f32>,
}

impl UniformGrid {
    /// `max_bridge_s`: longest gap bridged by holding the last value.
    pub fn new(period_s: f64, max_bridge_s: f64) -> Self {
        let period_s = if period_s.is_finite() && period_s > 0.0 {
            period_s
        } else {
            0.1
        };
        Self {
            period_s,
            max_bridge_cells: (max_bridge_s / period_s).round().max(0.0) as u32,
            cell: None,
            sum: Vec::new(),
            count: 0,
            completed: Vec::new(),
        }
    }

    pub fn period_s(&self) -> f64 {
        self.period_s
    }

    /// The mean vector of the most recently completed cell.
    pub fn completed(&self) -> &[f32] {
        &self.completed
    }

    /// Forgets the partial cell (after a clock reset).
    pub fn reset(&mut self) {
        self.cell = None;
        self.count = 0;
    }

    /// Adds the sample `values` taken at `t_s`. Samples must come in non-decreasing time; the
    /// vector width is fixed by the first sample after a reset (a different width restarts).
    pub fn push(&mut self, t_s: f64, values: &[f32]) -> GridStep {
        let idx = (t_s / self.period_s).floor();
        if !idx.is_finite() {
            return GridStep::Accumulated;
        }
        let idx = idx as i64;
        let Some(cur) = self.cell else {
            self.start(idx, values);
            return GridStep::Accumulated;
        };
        if values.len() != self.sum.len() {
            self.start(idx, values);
            return GridStep::Restarted;
        }
        if idx <= cur {
            self.add(values);
            return GridStep::Accumulated;
        }
        let missing = idx.saturating_sub(cur).saturating_sub(1);
        let inv = 1.0 / self.count.max(1) as f32;
        self.completed.clear();
        self.completed.extend(self.sum.iter().map(|s| s * inv));
        if missing > i64::from(self.max_bridge_cells) {
            self.start(idx, values);
            return GridStep::Restarted;
        }
        self.cell = Some(idx);
        self.sum.iter_mut().for_each(|s| *s = 0.0);
        self.count = 0;
        self.add(values);
        GridStep::Completed {
            cells: 1 + missing as u32,
        }
    }

    fn start(&mut self, idx: i64, values: &[f32]) {
        self.cell = Some(idx);
        self.sum.clear();
        self.sum.resize(values.len(), 0.0);
        self.count = 0;
        self.add(values);
    }

    fn add(&mut self, values: &[f32]) {
        for (s, v) in self.sum.iter_mut().zip(values) {
            *s += *v;
        }
        self.count += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn averages_cells_and_bridges_short_gaps() {
        let mut g = UniformGrid::new(0.1, 0.5);
        let mut cells = 0;
        let mut values = Vec::new();
        for i in 0..100 {
            let t = i as f64 * 0.02 + 0.001;
            if (40..55).contains(&i) {
                continue; // 0.3 s gap
            }
            if let GridStep::Completed { cells: c } = g.push(t, &[t as f32]) {
                cells += c;
                values.push(g.completed()[0]);
            }
        }
        assert_eq!(cells, 19);
        assert!((values[0] - 0.041).abs() < 1e-3);
        assert_eq!(g.push(100.0, &[0.0]), GridStep::Restarted);
        assert_eq!(g.push(100.0, &[0.0, 1.0]), GridStep::Restarted);
    }
}
