//! Temporary: which steps panic, by class and step kind.
use dispatch_fuzz::program::{Backends, Program};
use dispatch_fuzz::rng::SplitMix64;
use std::collections::BTreeMap;
fn main() {
    let mut rng = SplitMix64::new(1);
    let mut panics: BTreeMap<String, usize> = BTreeMap::new();
    let n = 500;
    let (mut steps_n, mut ok_ops, mut total) = (0, 0, 0);
    for _ in 0..n {
        let len = 64 + rng.below(2048) as usize;
        let mut steps = Program::from_fuzz_bytes(&rng.bytes(len), Backends::default()).steps;
        steps.truncate(32);
        let p = Program::new(steps);
        steps_n += p.steps.len();
        let v = dispatch_fuzz::check(&p).unwrap();
        for (i, r) in v.trace.steps.iter().enumerate() {
            if matches!(p.steps[i], dispatch_fuzz::program::Step::Op { .. })
                && matches!(r.outcome, dispatch_fuzz::interpreter::Outcome::Ok { .. })
            {
                ok_ops += 1;
            }
        }
        for (_, pi) in v.trace.panics() {
            total += 1;
            *panics.entry(pi.class.clone()).or_default() += 1;
        }
    }
    println!(
        "steps {:.1} ok ops {:.2} panics {:.2}",
        steps_n as f64 / n as f64,
        ok_ops as f64 / n as f64,
        total as f64 / n as f64
    );
    for (k, c) in &panics {
        println!("{k:<45} {:.3}", *c as f64 / n as f64);
    }
}
