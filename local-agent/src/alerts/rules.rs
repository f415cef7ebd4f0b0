//! Alert rules over the engine's estimates. Pure: time comes in as an argument.

use std::time::{Duration, Instant};

use super::{AlertKind, NewAlert};

/// `presence_while_away`: someone is in the home while away mode is on.
///
/// Presence must hold for [`AwayRule::sustain`] without a break before the alert is raised, so a
/// one-tick blip of the estimator raises nothing. One alert per episode: the episode ends after
/// [`AwayRule::clear`] of continuous absence, or when away mode is switched off.
#[derive(Debug, Clone)]
pub struct AwayRule {
    sustain: Duration,
    clear: Duration,
    present_since: Option<Instant>,
    absent_since: Option<Instant>,
    raised: bool,
}

impl Default for AwayRule {
    fn default() -> Self {
        Self::new(Duration::from_secs(5), Duration::from_secs(120))
    }
}

impl AwayRule {
    /// `sustain`: continuous presence needed to raise; `clear`: continuous absence that ends an
    /// episode.
    pub fn new(sustain: Duration, clear: Duration) -> Self {
        Self {
            sustain,
            clear,
            present_since: None,
            absent_since: None,
            raised: false,
        }
    }

    pub fn sustain(&self) -> Duration {
        self.sustain
    }

    pub fn clear(&self) -> Duration {
        self.clear
    }

    /// Feeds one estimate. Returns the alert to raise, at most once per episode.
    pub fn observe(&mut self, now: Instant, present: bool, away_on: bool) -> Option<NewAlert> {
        if !away_on {
            self.present_since = None;
            self.absent_since = None;
            self.raised = false;
            return None;
        }
        if !present {
            self.present_since = None;
            let since = *self.absent_since.get_or_insert(now);
            if self.raised && now.saturating_duration_since(since) >= self.clear {
                self.raised = false;
            }
            return None;
        }
        self.absent_since = None;
        let since = *self.present_since.get_or_insert(now);
        if self.raised || now.saturating_duration_since(since) < self.sustain {
            return None;
        }
        self.raised = true;
        Some(NewAlert::new(
            AlertKind::PresenceWhileAway,
            "Someone is home while you are away",
            format!(
                "Presence has been detected for {} s while away mode is on. If nobody should be \
                 there, check on your home.",
                now.saturating_duration_since(since).as_secs()
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: Duration = Duration::from_millis(100);

    /// Feeds `n` ticks of the same reading and returns how many alerts were raised.
    fn feed(
        rule: &mut AwayRule,
        t: &mut Instant,
        n: usize,
        present: bool,
        away: bool,
    ) -> Vec<NewAlert> {
        let mut out = Vec::new();
        for _ in 0..n {
            *t += TICK;
            out.extend(rule.observe(*t, present, away));
        }
        out
    }

    fn rule() -> AwayRule {
        AwayRule::new(Duration::from_secs(5), Duration::from_secs(60))
    }

    #[test]
    fn sustained_presence_while_away_raises_one_alert() {
        let mut r = rule();
        let mut t = Instant::now();
        assert!(
            feed(&mut r, &mut t, 50, true, true).is_empty(),
            "4.9 s is not enough"
        );
        let raised = feed(&mut r, &mut t, 1, true, true);
        assert_eq!(raised.len(), 1);
        assert_eq!(raised[0].kind, AlertKind::PresenceWhileAway);
        assert!(raised[0].message.contains("5 s"), "{}", raised[0].message);
        assert!(
            feed(&mut r, &mut t, 3000, true, true).is_empty(),
            "one alert per episode"
        );
    }

    #[test]
    fn blips_do_not_raise() {
        let mut r = rule();
        let mut t = Instant::now();
        for _ in 0..100 {
            assert!(feed(&mut r, &mut t, 30, true, true).is_empty());
            assert!(feed(&mut r, &mut t, 1, false, true).is_empty());
        }
    }

    #[test]
    fn nothing_is_raised_while_away_mode_is_off() {
        let mut r = rule();
        let mut t = Instant::now();
        assert!(feed(&mut r, &mut t, 1000, true, false).is_empty());
    }

    #[test]
    fn a_new_episode_needs_a_long_absence_or_a_new_away_period() {
        let mut r = rule();
        let mut t = Instant::now();
        assert_eq!(feed(&mut r, &mut t, 60, true, true).len(), 1);
        // Thirty seconds out of view is still the same visit.
        assert!(feed(&mut r, &mut t, 300, false, true).is_empty());
        assert!(feed(&mut r, &mut t, 100, true, true).is_empty());
        // A minute of absence ends the episode; the next visit raises again.
        assert!(feed(&mut r, &mut t, 601, false, true).is_empty());
        assert_eq!(feed(&mut r, &mut t, 60, true, true).len(), 1);
        // Switching away off and on again starts over too.
        assert!(feed(&mut r, &mut t, 1, true, false).is_empty());
        assert_eq!(feed(&mut r, &mut t, 60, true, true).len(), 1);
    }

    #[test]
    fn presence_already_there_when_away_turns_on_counts_from_the_switch() {
        let mut r = rule();
        let mut t = Instant::now();
        assert!(feed(&mut r, &mut t, 100, true, false).is_empty());
        assert!(feed(&mut r, &mut t, 50, true, true).is_empty());
        assert_eq!(feed(&mut r, &mut t, 1, true, true).len(), 1);
    }
}
