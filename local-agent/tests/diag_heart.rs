//! Diagnostic, not a pass/fail test (`#[ignore]`d): where the heart rate is lost on the
//! ECG-timed streams of `accuracy_heart_ecg`, window by window (every 2 s after 35 s).
//!
//! ```sh
//! PHYSIO_SITE_PACKAGES=... cargo test -p local-agent --test diag_heart -- --ignored --nocapture
//! ```
//!
//! Environment: `VISIBLE=1` the 1.5–2.5 mm pulse streams (else 0.2–0.5 mm), `SPLIT=tune|test`
//! one half of the streams (seeds k = 0, 1 / the rest), `VERBOSE=1` one line per window,
//! `NOBREATH=1` no breathing, `SNR=dB`, `AGC_LOCKED=1`, `NO_PHASE_OFFSETS=1` to switch off one
//! impairment at a time.
//!
//! For each window it reports the estimator's heart diagnostics (spectral peak and its gate
//! figures, beat-interval rate and regularity, the harmonic guard) and an oracle: the same
//! stream is simulated a second time without the heartbeat (same seed, so the same noise and
//! breathing), and the difference of the two runs is the heartbeat alone in every series. The
//! oracle SNR of a series is the heartbeat's power at the true rate (±1 bin) over the median
//! heart-band power of the heartbeat-free run with the breath model removed; "top-8 sum" adds
//! the 8 best series' SNRs (what a maximum-ratio combination would reach if their noise were
//! independent). It also scores two alternative combinations (breath-derived weights;
//! arc demodulation of the sanitised complex CSI) and the peak SNR distribution of the
//! heartbeat-free run (what a false peak reaches).

mod arc_support;
mod ecg_support;

use arc_support as arc;
use ecg_support::{Stream, records, stream};
use local_agent::sensing::dsp::filter::BandPass;
use local_agent::sensing::dsp::harmonics::BreathModel;
use local_agent::sensing::dsp::spectrum::{Spectrum, SpectrumAnalyzer};
use local_agent::sensing::pipeline::{Pipeline, PipelineConfig};
use local_agent::sensing::source::simulator::{Activity, Simulator};
use local_agent::sensing::vitals::{GRID_HZ, HEART_BAND};

fn spectrum(x: &[f32]) -> Spectrum {
    let mut an = SpectrumAnalyzer::new(1024);
    let mut v = x.to_vec();
    let m = v.iter().sum::<f32>() / v.len() as f32;
    v.iter_mut().for_each(|a| *a -= m);
    let mut s = Spectrum::default();
    an.power(&mut v, GRID_HZ, &mut s);
    s
}

fn bin(s: &Spectrum, f: f32) -> usize {
    (f / s.df).round() as usize
}

/// Max power within ±`w` bins of f.
fn near(s: &Spectrum, f: f32, w: usize) -> f32 {
    let i = bin(s, f);
    s.power[i.saturating_sub(w)..=(i + w).min(s.power.len() - 1)]
        .iter()
        .copied()
        .fold(0.0, f32::max)
}

fn band_median(s: &Spectrum) -> f32 {
    let mut v: Vec<f32> = s.power[bin(s, HEART_BAND.0)..=bin(s, HEART_BAND.1)].to_vec();
    v.sort_by(f32::total_cmp);
    v[v.len() / 2].max(1e-30)
}

fn clean(x: &[f32]) -> Option<Vec<f32>> {
    if x.iter().any(|v| !v.is_finite()) {
        return None;
    }
    Some(x.to_vec())
}

#[derive(Default)]
struct Tally {
    windows: usize,
    est_snr: Vec<f32>,
    best_snr: Vec<f32>,
    mrc_snr: Vec<f32>,
    raw_best: Vec<f32>,
    local_best: Vec<f32>,
    spec_ok: usize,
    beat_ok: usize,
    gated: usize,
    agree: usize,
    harm: usize,
    regular: usize,
    candidates: usize,
    no_breath: usize,
    alt_snr: Vec<f32>,
    arc_snr: Vec<f32>,
    false_peaks: Vec<f32>,
    est_peaks: Vec<(f32, f32, f32, bool, bool)>,
    all_sum: Vec<f32>,
    orc_snr: Vec<f32>,
    orc_peaks: Vec<(f32, bool, f32)>,
    orc_false: Vec<f32>,
    arc_peaks: Vec<(f32, bool, f32)>,
    /// (peak SNR, correct) of the alternative combination's peak
    alt_peaks: Vec<(f32, bool, f32)>,
}

fn med(v: &mut [f32]) -> f32 {
    if v.is_empty() {
        return f32::NAN;
    }
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}
fn q(v: &mut [f32], p: f32) -> f32 {
    if v.is_empty() {
        return f32::NAN;
    }
    v.sort_by(f32::total_cmp);
    v[((v.len() - 1) as f32 * p) as usize]
}

/// Breath-derived maximum-ratio combination: weights g_k / σ²_k with g_k the series' breathing
/// regression on the strongest breathing series and σ²_k its white-noise level.
fn alt_combination(w: &[Vec<f32>], fb: f32) -> Option<Vec<f32>> {
    let n = w.first()?.len();
    let lo = (0.6 * fb).max(0.07);
    let hi = (1.6 * fb).min(0.7);
    let mut bps = Vec::new();
    let mut best: Option<(f32, usize)> = None;
    for (k, x) in w.iter().enumerate() {
        let Some(x) = clean(x) else {
            bps.push(None);
            continue;
        };
        let m = x.iter().sum::<f32>() / n as f32;
        let x: Vec<f32> = x.iter().map(|v| v - m).collect();
        let mut tmp = Vec::new();
        let mut bp = Vec::new();
        BandPass::new(GRID_HZ, lo, hi)?.filter_series(&x, &mut tmp);
        tmp.reverse();
        BandPass::new(GRID_HZ, lo, hi)?.filter_series(&tmp, &mut bp);
        bp.reverse();
        let d2: f32 = (2..n)
            .map(|i| (x[i] - 2.0 * x[i - 1] + x[i - 2]).powi(2))
            .sum::<f32>()
            / (n - 2) as f32;
        let s2 = (d2 / 6.0).max(1e-20);
        let eb: f32 = bp.iter().map(|v| v * v).sum::<f32>() / n as f32;
        let q = eb / s2;
        if best.is_none_or(|(bq, _)| q > bq) {
            best = Some((q, k));
        }
        bps.push(Some((x, bp, s2)));
    }
    let (_, kb) = best?;
    let r = bps[kb].as_ref()?.1.clone();
    let rr: f32 = r.iter().map(|v| v * v).sum::<f32>().max(1e-20);
    let mut c = vec![0.0f32; n];
    for e in bps.iter().flatten() {
        let (x, bp, s2) = e;
        let g: f32 = bp.iter().zip(&r).map(|(a, b)| a * b).sum::<f32>() / rr;
        let wk = g / s2;
        for (ci, xi) in c.iter_mut().zip(x) {
            *ci += wk * xi;
        }
    }
    Some(c)
}

use num_complex::Complex32;

/// Arc demodulation: per tone, the circle the chest-moved paths trace (`arc_support`), the angle
/// around its centre (linear in path length), combined over tones with inverse-noise weights.
fn arc_combination(cells: &[Vec<Complex32>]) -> Option<Vec<f32>> {
    let n = cells.len();
    let tones = cells.first()?.len();
    let mut series: Vec<(Vec<f32>, f32)> = Vec::new();
    for k in 0..tones {
        let z: Vec<Complex32> = cells.iter().map(|c| c[k]).collect();
        if z.iter().any(|v| v.norm_sqr() == 0.0 || !v.re.is_finite()) {
            continue;
        }
        let Some(circle) = arc::fit_circle(&z) else {
            continue;
        };
        let mut psi = Vec::with_capacity(n);
        arc::unwrapped_angle(&z, circle.centre, &mut psi);
        let d2: f32 = (2..n)
            .map(|i| (psi[i] - 2.0 * psi[i - 1] + psi[i - 2]).powi(2))
            .sum::<f32>()
            / (n - 2) as f32;
        let var = (d2 / 6.0).max(1e-12);
        series.push((psi, var));
    }
    // Sign alignment on the best (least noisy) tone's slow part.
    let (bi, _) = series
        .iter()
        .enumerate()
        .min_by(|x, y| x.1.1.total_cmp(&y.1.1))?;
    let slow = |x: &[f32]| -> Vec<f32> {
        let m = x.iter().sum::<f32>() / x.len() as f32;
        x.iter().map(|v| v - m).collect()
    };
    let r = slow(&series[bi].0);
    let mut out = vec![0.0f32; n];
    for (psi, var) in &series {
        let x = slow(psi);
        let corr: f32 = x.iter().zip(&r).map(|(a, b)| a * b).sum();
        let sign = if corr < 0.0 { -1.0 } else { 1.0 };
        for (o, v) in out.iter_mut().zip(&x) {
            *o += sign * v / var;
        }
    }
    Some(out)
}

fn score_series(
    t: &mut Tally,
    c: &mut [f32],
    fb: f32,
    ft: f32,
    truth: f64,
    arc: bool,
    nobreath: bool,
) -> String {
    let mut bm = BreathModel::new();
    if !nobreath {
        if !bm.fit(c, fb, GRID_HZ) {
            return String::new();
        }
        bm.subtract(c);
    }
    let sp = spectrum(c);
    let snr = near(&sp, ft, 1) / band_median(&sp);
    let mut scratch = Vec::new();
    let Some(p) = sp.peak(HEART_BAND.0, HEART_BAND.1, &mut scratch) else {
        return String::new();
    };
    let pk = near(&sp, p.freq_hz, 0) / band_median(&sp);
    let ok = (f64::from(p.freq_hz) * 60.0 - truth).abs() <= 5.0;
    let h = (p.freq_hz / fb).round();
    let harm = h >= 2.0 && (p.freq_hz - h * fb).abs() <= 0.04;
    if arc {
        t.arc_snr.push(snr);
        t.arc_peaks.push((pk, ok, if harm { 1.0 } else { 0.0 }));
    } else {
        t.alt_snr.push(snr);
        t.alt_peaks.push((pk, ok, if harm { 1.0 } else { 0.0 }));
    }
    format!(
        "{} peak {:.0} snr {pk:.1} {ok} SNR@truth {snr:.1}",
        if arc { "arc" } else { "alt" },
        p.freq_hz * 60.0
    )
}

fn diag(s: &Stream, verbose: bool) -> Tally {
    let nobreath = std::env::var_os("NOBREATH").is_some();
    let script_fb = match s.cfg.script[0].activity {
        Activity::SitStill { breathing_bpm, .. } => (breathing_bpm / 60.0) as f32,
        _ => 0.25,
    };
    let mut s = Stream {
        label: s.label.clone(),
        cfg: s.cfg.clone(),
        beats: s.beats.clone(),
    };
    if nobreath {
        s.cfg.breathing_depth_m = 0.0;
    }
    if let Some(v) = std::env::var("SNR").ok().and_then(|v| v.parse().ok()) {
        s.cfg.snr_db = v;
    }
    if std::env::var_os("AGC_LOCKED").is_some() {
        s.cfg.agc = local_agent::sensing::source::simulator::AgcModel::locked();
    }
    if std::env::var_os("NO_PHASE_OFFSETS").is_some() {
        s.cfg.phase_offsets = false;
    }
    let s = &s;
    let mut a = Simulator::new(s.cfg.clone());
    let mut bcfg = s.cfg.clone();
    bcfg.heart_depth_m = 0.0;
    let mut b = Simulator::new(bcfg);
    let mut pa = Pipeline::new(PipelineConfig::default());
    let mut pb = Pipeline::new(PipelineConfig::default());
    let mut t = Tally::default();
    let mut next = 35.0;
    let mut model = BreathModel::new();
    let mut cells: Vec<Vec<Complex32>> = Vec::new();
    let mut acc: Vec<Complex32> = Vec::new();
    let mut acc_n = 0usize;
    let mut cell_no = 0i64;
    let mut san = Vec::new();
    while let (Some((fa, _)), Some((fb_, _))) = (a.next_frame(), b.next_frame()) {
        let amps: Vec<f32> = fa
            .csi
            .iter()
            .map(|c| c.norm())
            .filter(|a| *a > 0.0)
            .collect();
        let mean = amps.iter().sum::<f32>() / amps.len().max(1) as f32;
        local_agent::sensing::range::sanitise(&fa.csi, 64, mean, &mut san);
        let cn = (fa.t_s * 10.0).floor() as i64;
        if cn != cell_no && acc_n > 0 {
            cells.push(acc.iter().map(|v| v / acc_n as f32).collect());
            acc.iter_mut().for_each(|v| *v = Complex32::new(0.0, 0.0));
            acc_n = 0;
        }
        cell_no = cn;
        if acc.len() != san.len() / 2 {
            acc = vec![Complex32::new(0.0, 0.0); san.len() / 2];
        }
        for (x, p) in acc.iter_mut().zip(san.chunks_exact(2)) {
            *x += Complex32::new(p[0], p[1]);
        }
        acc_n += 1;
        pa.push(&fa);
        pb.push(&fb_);
        if fa.t_s < next {
            continue;
        }
        next += 2.0;
        let Some(truth) = s.beats.mean_bpm(fa.t_s - 30.0, fa.t_s) else {
            continue;
        };
        let ft = (truth / 60.0) as f32;
        let Some(ea) = pa.vitals_estimators().next() else {
            continue;
        };
        let Some(eb) = pb.vitals_estimators().next() else {
            continue;
        };
        let d = ea.heart_diag;
        t.windows += 1;
        let fbr = ea
            .breathing
            .candidate_hz
            .or(ea.breathing.bpm.map(|b| (b / 60.0) as f32));
        if !d.breath_removed && !nobreath {
            t.no_breath += 1;
            if verbose {
                eprintln!(
                    "   {:.0}s truth {truth:.1}: no breath model (breath {:?})",
                    fa.t_s,
                    fbr.map(|f| f * 60.0)
                );
            }
            continue;
        }
        let hs_len = if nobreath {
            300
        } else {
            ea.heart_series().len()
        };
        let hs = ea.heart_series();
        let sp = spectrum(hs);
        let est_snr = near(&sp, ft, 1) / band_median(&sp);
        t.est_snr.push(est_snr);
        let spec_ok = d
            .spectral_bpm
            .is_some_and(|x| (x as f64 - truth).abs() <= 5.0);
        let beat_ok = d.beat_bpm.is_some_and(|x| (x as f64 - truth).abs() <= 5.0);
        t.spec_ok += usize::from(spec_ok);
        t.beat_ok += usize::from(beat_ok);
        t.gated += usize::from(d.spectral_gated);
        let agree = d
            .spectral_bpm
            .zip(d.beat_bpm)
            .is_some_and(|(x, y)| (x - y).abs() <= 4.0);
        t.agree += usize::from(agree);
        t.regular += usize::from(d.beat_regularity.is_some_and(|r| r >= 0.8));
        let fb = if nobreath {
            script_fb
        } else {
            fbr.unwrap_or(0.25)
        };
        let near_h = d.spectral_bpm.is_some_and(|x| {
            let f = x / 60.0;
            let h = (f / fb).round();
            h >= 2.0 && (f - h * fb).abs() <= 0.04
        });
        t.harm += usize::from(near_h);
        if let Some(p) = d.peak {
            t.est_peaks
                .push((p.snr, p.prominence, p.concentration, spec_ok, near_h));
        }
        t.candidates += usize::from(ea.heart.candidate_hz.is_some());
        // Physics oracle: A − B is the heartbeat alone in every series.
        let len = hs_len;
        let wa = ea.window_series(len);
        let wb = eb.window_series(len);
        let mut alt_txt = String::new();
        if let Some(mut c) = alt_combination(&wa, fb) {
            alt_txt = score_series(&mut t, &mut c, fb, ft, truth, false, nobreath);
        }
        if let Some(mut c) = alt_combination(&wb, fb) {
            let mut bm = BreathModel::new();
            if nobreath || bm.fit(&c, fb, GRID_HZ) {
                if !nobreath {
                    bm.subtract(&mut c);
                }
                let sp = spectrum(&c);
                let mut scratch = Vec::new();
                if let Some(p) = sp.peak(HEART_BAND.0, HEART_BAND.1, &mut scratch) {
                    let h = (p.freq_hz / fb).round();
                    if !(h >= 2.0 && (p.freq_hz - h * fb).abs() <= 0.04) {
                        t.false_peaks
                            .push(near(&sp, p.freq_hz, 0) / band_median(&sp));
                    }
                }
            }
        }
        let w0 = cells.len().saturating_sub(len + 1);
        if cells.len() > len
            && let Some(mut c) = arc_combination(&cells[w0..w0 + len])
        {
            alt_txt += " | ";
            alt_txt += &score_series(&mut t, &mut c, fb, ft, truth, true, nobreath);
        }
        // Breath model on B's strongest breathing amplitude series.
        let mut per: Vec<(f32, f32, f32)> = Vec::new();
        let mut best_breath: Option<(f32, Vec<f32>)> = None;
        for (xa, xb) in wa.iter().zip(&wb) {
            let (Some(xa), Some(xb)) = (clean(xa), clean(xb)) else {
                continue;
            };
            let sb = spectrum(&xb);
            let pbreath = near(&sb, fb, 1);
            if best_breath.as_ref().is_none_or(|(p, _)| pbreath > *p) {
                best_breath = Some((pbreath, xb.clone()));
            }
            let _ = xa;
        }
        let fitted = best_breath
            .as_ref()
            .is_some_and(|(_, x)| model.fit(x, fb, GRID_HZ));
        for (xa, xb) in wa.iter().zip(&wb) {
            let (Some(xa), Some(xb)) = (clean(xa), clean(xb)) else {
                continue;
            };
            let dd: Vec<f32> = xa.iter().zip(&xb).map(|(p, q)| p - q).collect();
            let sd = spectrum(&dd);
            let raw = spectrum(&xb);
            let mut res = xb.clone();
            let m = res.iter().sum::<f32>() / res.len() as f32;
            res.iter_mut().for_each(|v| *v -= m);
            if fitted {
                model.subtract(&mut res);
            }
            let sr = spectrum(&res);
            let sig = near(&sd, ft, 1);
            per.push((
                sig / band_median(&sr),
                sig / band_median(&raw),
                sig / near(&sr, ft, 1).max(1e-30),
            ));
        }
        per.sort_by(|x, y| y.0.total_cmp(&x.0));
        t.all_sum.push(per.iter().map(|p| p.0).sum());
        // Oracle-weighted combination: MRC weights from the true heart component (A − B).
        {
            let mut ds = Vec::new();
            for (xa, xb) in wa.iter().zip(&wb) {
                let (Some(xa), Some(xb)) = (clean(xa), clean(xb)) else {
                    continue;
                };
                let n = xb.len();
                let dd: Vec<f32> = xa.iter().zip(&xb).map(|(p, q)| p - q).collect();
                let m = dd.iter().sum::<f32>() / n as f32;
                let dd: Vec<f32> = dd.iter().map(|v| v - m).collect();
                let d2: f32 = (2..n)
                    .map(|i| (xb[i] - 2.0 * xb[i - 1] + xb[i - 2]).powi(2))
                    .sum::<f32>()
                    / (n - 2) as f32;
                ds.push((dd, (d2 / 6.0).max(1e-20), xa, xb));
            }
            if let Some((bi, _)) = ds.iter().enumerate().max_by(|x, y| {
                let e = |d: &(Vec<f32>, f32, Vec<f32>, Vec<f32>)| {
                    d.0.iter().map(|v| v * v).sum::<f32>() / d.1
                };
                e(x.1).total_cmp(&e(y.1))
            }) {
                let r = ds[bi].0.clone();
                let rn = r.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-20);
                let n = r.len();
                let mut ca = vec![0.0f32; n];
                let mut cb = vec![0.0f32; n];
                for (dd, var, xa, xb) in &ds {
                    let g: f32 = dd.iter().zip(&r).map(|(a, b)| a * b).sum::<f32>() / rn;
                    let w = g / var;
                    for i in 0..n {
                        ca[i] += w * xa[i];
                        cb[i] += w * xb[i];
                    }
                }
                let mut bm = BreathModel::new();
                if nobreath || bm.fit(&cb, fb, GRID_HZ) {
                    if !nobreath {
                        bm.subtract(&mut ca);
                        bm.subtract(&mut cb);
                    }
                    let sp = spectrum(&ca);
                    let mut scratch = Vec::new();
                    t.orc_snr.push(near(&sp, ft, 1) / band_median(&sp));
                    if let Some(p) = sp.peak(HEART_BAND.0, HEART_BAND.1, &mut scratch) {
                        let h = (p.freq_hz / fb).round();
                        let harm = h >= 2.0 && (p.freq_hz - h * fb).abs() <= 0.04;
                        let ok = (f64::from(p.freq_hz) * 60.0 - truth).abs() <= 5.0;
                        t.orc_peaks.push((
                            near(&sp, p.freq_hz, 0) / band_median(&sp),
                            ok,
                            if harm { 1.0 } else { 0.0 },
                        ));
                    }
                    let sp = spectrum(&cb);
                    if let Some(p) = sp.peak(HEART_BAND.0, HEART_BAND.1, &mut scratch) {
                        t.orc_false.push(near(&sp, p.freq_hz, 0) / band_median(&sp));
                    }
                }
            }
        }
        let best = per.first().map(|p| p.0).unwrap_or(0.0);
        let mrc: f32 = per.iter().take(8).map(|p| p.0).sum();
        t.best_snr.push(best);
        t.mrc_snr.push(mrc);
        let raw_best = per.iter().map(|p| p.1).fold(0.0, f32::max);
        t.raw_best.push(raw_best);
        t.local_best.push(per.first().map(|p| p.2).unwrap_or(0.0));
        if verbose {
            eprintln!(
                "   {:.0}s truth {truth:.1} breath {:.1}: spec {:?} (snr {:.1} prom {:.1} conc {:.2} w {:.1} gated {}) beat {:?} reg {:?} harm {near_h} cand {:?} acc {:?} | est SNR@truth {est_snr:.1} | oracle best {best:.1} (raw {raw_best:.2}, vs local residue {:.2}) top8 {mrc:.1} | {alt_txt}",
                fa.t_s,
                fb * 60.0,
                d.spectral_bpm.map(|x| x.round()),
                d.peak.map_or(0.0, |p| p.snr),
                d.peak.map_or(0.0, |p| p.prominence),
                d.peak.map_or(0.0, |p| p.concentration),
                d.peak.map_or(0.0, |p| p.width_ratio),
                d.spectral_gated,
                d.beat_bpm.map(|x| x.round()),
                d.beat_regularity.map(|x| (x * 100.0).round() / 100.0),
                ea.heart.candidate_hz.map(|f| (f * 60.0).round()),
                ea.heart.bpm.map(|f| f.round()),
                per.first().map(|p| p.2).unwrap_or(0.0),
            );
        }
    }
    t
}

#[test]
#[ignore = "diagnostic"]
fn heart_diagnostic() {
    let recs = records();
    let pulse = if std::env::var_os("VISIBLE").is_some() {
        (1.5, 2.5)
    } else {
        (0.2, 0.5)
    };
    let base = if pulse.0 >= 1.0 { 100 } else { 0 };
    let mut streams = Vec::new();
    for (r, (rec, peaks)) in recs.iter().enumerate() {
        let ks: Vec<u64> = match std::env::var("SPLIT").as_deref() {
            Ok("tune") => vec![0, 1],
            Ok("test") if base == 0 => vec![2, 3],
            Ok("test") => vec![2],
            _ if base == 0 => vec![0, 1, 2, 3],
            _ => vec![0, 1, 2],
        };
        for k in ks {
            streams.push(stream(rec, peaks, base + 10 * r as u64 + k, 150.0, pulse));
        }
    }
    let verbose = std::env::var_os("VERBOSE").is_some();
    let tallies: Vec<Tally> = std::thread::scope(|scope| {
        let hs: Vec<_> = streams
            .iter()
            .map(|s| scope.spawn(move || diag(s, verbose)))
            .collect();
        hs.into_iter().map(|h| h.join().expect("stream")).collect()
    });
    let mut all = Tally::default();
    for (s, mut t) in streams.iter().zip(tallies) {
        eprintln!(
            "{}\n  windows {} (no breath model {}), spectral within ±5 {} beat within ±5 {} gated {} agree {} regular {} near-harmonic {} candidates {}\n  SNR at truth: estimator combination median {:.2}; oracle best single series median {:.2} (before breath removal {:.2}, vs local residue {:.2}), top-8 sum median {:.2}",
            s.label,
            t.windows,
            t.no_breath,
            t.spec_ok,
            t.beat_ok,
            t.gated,
            t.agree,
            t.regular,
            t.harm,
            t.candidates,
            med(&mut t.est_snr),
            med(&mut t.best_snr),
            med(&mut t.raw_best),
            med(&mut t.local_best),
            med(&mut t.mrc_snr)
        );
        all.windows += t.windows;
        all.no_breath += t.no_breath;
        all.spec_ok += t.spec_ok;
        all.beat_ok += t.beat_ok;
        all.gated += t.gated;
        all.agree += t.agree;
        all.regular += t.regular;
        all.harm += t.harm;
        all.candidates += t.candidates;
        all.est_snr.extend(t.est_snr);
        all.best_snr.extend(t.best_snr);
        all.raw_best.extend(t.raw_best);
        all.local_best.extend(t.local_best);
        all.mrc_snr.extend(t.mrc_snr);
        all.alt_snr.extend(t.alt_snr);
        all.alt_peaks.extend(t.alt_peaks);
        all.arc_snr.extend(t.arc_snr);
        all.arc_peaks.extend(t.arc_peaks);
        all.false_peaks.extend(t.false_peaks);
        all.est_peaks.extend(t.est_peaks);
        all.all_sum.extend(t.all_sum);
        all.orc_snr.extend(t.orc_snr);
        all.orc_peaks.extend(t.orc_peaks);
        all.orc_false.extend(t.orc_false);
    }
    eprintln!(
        "ALL windows {} (no breath model {}), spectral within ±5 {} beat within ±5 {} gated {} agree {} regular {} near-harmonic {} candidates {}",
        all.windows,
        all.no_breath,
        all.spec_ok,
        all.beat_ok,
        all.gated,
        all.agree,
        all.regular,
        all.harm,
        all.candidates
    );
    for (name, v) in [
        ("estimator SNR@truth", &mut all.est_snr),
        ("oracle best series", &mut all.best_snr),
        ("oracle best before breath removal", &mut all.raw_best),
        ("oracle vs local residue", &mut all.local_best),
        ("oracle top-8 sum", &mut all.mrc_snr),
        ("breath-weighted combination SNR@truth", &mut all.alt_snr),
        ("arc-demodulated combination SNR@truth", &mut all.arc_snr),
        ("no-heart run: alt peak SNR", &mut all.false_peaks),
        ("oracle all-series sum", &mut all.all_sum),
        ("oracle-weighted combination SNR@truth", &mut all.orc_snr),
        ("no-heart run: oracle-weighted peak SNR", &mut all.orc_false),
    ] {
        eprintln!(
            "  {name}: q10 {:.2} q25 {:.2} median {:.2} q75 {:.2} q90 {:.2}",
            q(v, 0.1),
            q(v, 0.25),
            q(v, 0.5),
            q(v, 0.75),
            q(v, 0.9)
        );
    }
    for snr in [6.0f32, 10.0, 15.0, 20.0, 30.0, 40.0, 60.0] {
        for prom in [1.0f32, 1.5, 2.0, 3.0, 4.0] {
            let sel: Vec<_> = all
                .est_peaks
                .iter()
                .filter(|p| p.0 >= snr && p.1 >= prom && !p.4)
                .collect();
            let ok = sel.iter().filter(|p| p.3).count();
            eprint!("  est snr>={snr} prom>={prom}: {ok}/{}", sel.len());
        }
        eprintln!();
    }
    for thr in [3.0f32, 5.0, 8.0, 10.0, 12.0, 15.0, 20.0, 30.0] {
        let sel: Vec<_> = all
            .alt_peaks
            .iter()
            .filter(|p| p.0 >= thr && p.2 == 0.0)
            .collect();
        let ok = sel.iter().filter(|p| p.1).count();
        eprintln!(
            "  alt peak SNR >= {thr}: {} windows of {}, correct {ok}",
            sel.len(),
            all.alt_peaks.len()
        );
        let sel: Vec<_> = all
            .orc_peaks
            .iter()
            .filter(|p| p.0 >= thr && p.2 == 0.0)
            .collect();
        let ok = sel.iter().filter(|p| p.1).count();
        eprintln!(
            "  oracle-weighted peak SNR >= {thr}: {} windows of {}, correct {ok}",
            sel.len(),
            all.orc_peaks.len()
        );
        let sel: Vec<_> = all
            .arc_peaks
            .iter()
            .filter(|p| p.0 >= thr && p.2 == 0.0)
            .collect();
        let ok = sel.iter().filter(|p| p.1).count();
        eprintln!(
            "  arc peak SNR >= {thr}: {} windows of {}, correct {ok}",
            sel.len(),
            all.arc_peaks.len()
        );
    }
}
