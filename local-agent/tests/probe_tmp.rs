use local_agent::sensing::csi::CsiFrame;
use local_agent::sensing::pipeline::{Pipeline, PipelineConfig};
use local_agent::sensing::source::replay::ReplaySource;
use local_agent::sensing::source::simulator::{SimConfig, Simulator};
use local_agent::sensing::vitals::BreathDiag;
use std::path::Path;

/// (t, diag) at every change of the breathing diagnostics.
fn diags(frames: impl Iterator<Item = CsiFrame>) -> Vec<(f64, BreathDiag)> {
    let mut p = Pipeline::new(PipelineConfig::default());
    let mut out: Vec<(f64, BreathDiag)> = Vec::new();
    let mut t0 = None;
    for f in frames {
        let t = f.t_s - *t0.get_or_insert(f.t_s);
        p.push(&f);
        let d = p.vitals_detail().breathing;
        if d.peak.is_some() && out.last().is_none_or(|(_, l)| *l != d) {
            out.push((t, d));
        }
    }
    out
}

fn pass(d: &BreathDiag, conc: f32, c2: f32, s2: f32) -> Option<f32> {
    let p = d.peak?;
    let gates = !p.at_edge
        && p.width_ratio <= 1.6
        && p.prominence >= 1.5
        && p.snr >= 5.0
        && p.concentration >= conc;
    let coh = d.coherence >= 0.4 || (d.coherence >= c2 && p.snr >= s2);
    (gates && coh && d.drift_ok).then_some(p.freq_hz)
}

/// Emulated persistence (3 of last 4 within 0.12 Hz spread, latest two not both missing);
/// returns rates at window ends 30, 60, end.
fn windows(ds: &[(f64, BreathDiag)], end: f64, conc: f32, c2: f32, s2: f32) -> Vec<Option<f64>> {
    let mut hist: Vec<Option<f32>> = Vec::new();
    let mut acc: Vec<(f64, Option<f64>)> = Vec::new();
    for (t, d) in ds {
        hist.push(pass(d, conc, c2, s2));
        let h: Vec<Option<f32>> = hist.iter().rev().take(4).copied().collect();
        let found: Vec<f32> = h.iter().flatten().copied().collect();
        let ok = found.len() >= 3
            && !(h.len() >= 2 && h[0].is_none() && h[1].is_none())
            && found.iter().fold(f32::MIN, |a, b| a.max(*b))
                - found.iter().fold(f32::MAX, |a, b| a.min(*b))
                <= 0.12;
        acc.push((
            *t,
            ok.then(|| f64::from(h.iter().flatten().next().copied().unwrap_or(0.0)) * 60.0),
        ));
    }
    [30.0, 60.0, end]
        .iter()
        .map(|w| acc.iter().rev().find(|(t, _)| *t <= *w).and_then(|x| x.1))
        .collect()
}

#[test]
fn probe() {
    let mut real = Vec::new();
    for name in [
        "BPM06", "BPM09", "BPM12", "BPM15", "BPM18", "BPM21", "BPM24", "BPM27",
    ] {
        let dir = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/data/csi/breathsense"
        ))
        .join(name);
        let frames: Vec<CsiFrame> = ReplaySource::open(dir).unwrap().collect();
        let end = frames.last().unwrap().t_s - frames[0].t_s;
        real.push((name, end, diags(frames.into_iter())));
    }
    let mut empties = Vec::new();
    for seed in 1..=4u64 {
        let mut cfg = SimConfig::for_scene("empty", seed).unwrap();
        cfg.rate_hz = 25.0;
        empties.push(diags(Simulator::new(cfg).map(|(f, _)| f)));
    }
    for (_, _, ds) in &real[..1] {
        for (t, d) in ds.iter().take(5) {
            eprintln!("{t:.1} {d:?}");
        }
    }
    let mut best_noise = (0.0f32, 0.0f32);
    for e in &empties {
        for (_, d) in e {
            if let Some(p) = d.peak {
                if p.snr > best_noise.0 {
                    best_noise = (p.snr, d.coherence);
                }
            }
        }
    }
    eprintln!("empty: max snr {best_noise:?}");
    for conc in [0.6f32, 0.5, 0.45] {
        for (c2, s2) in [
            (0.4f32, 1e9f32),
            (0.25, 20.0),
            (0.2, 30.0),
            (0.1, 30.0),
            (0.0, 40.0),
        ] {
            let mut line = String::new();
            let (mut ok, mut err, mut cov, mut n) = (0, 0.0, 0, 0);
            for (name, end, ds) in &real {
                let w = windows(ds, *end, conc, c2, s2);
                let truth: f64 = name[3..].parse().unwrap();
                let mut rates: Vec<f64> = w.iter().flatten().copied().collect();
                rates.sort_by(f64::total_cmp);
                let med = if rates.is_empty() {
                    None
                } else if rates.len() % 2 == 1 {
                    Some(rates[rates.len() / 2])
                } else {
                    Some(0.5 * (rates[rates.len() / 2 - 1] + rates[rates.len() / 2]))
                };
                if let Some(m) = med {
                    if (m - truth).abs() <= 1.0 {
                        ok += 1;
                    }
                    err += (m - truth).abs();
                }
                cov += w[1..].iter().filter(|x| x.is_some()).count();
                n += 2;
                line += &format!(
                    " {}:{}",
                    &name[3..],
                    med.map_or("-".to_string(), |m| format!("{m:.1}"))
                );
            }
            let fp: usize = empties
                .iter()
                .map(|e| windows(e, 120.0, conc, c2, s2).iter().flatten().count())
                .sum::<usize>()
                + empties
                    .iter()
                    .map(|e| {
                        e.iter()
                            .filter(|(_, d)| pass(d, conc, c2, s2).is_some())
                            .count()
                    })
                    .sum::<usize>();
            eprintln!(
                "conc {conc} c2 {c2} s2 {s2}: ok {ok}/8 err {:.2} cov {cov}/{n} empty passes {fp} |{line}",
                err / 8.0
            );
        }
    }
}
