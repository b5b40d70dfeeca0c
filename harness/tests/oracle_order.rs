//! The order of the oracle table is the one their shared state needs: an oracle that reads a
//! part another writes in the same step runs after it, and each oracle's stated reads and
//! writes are what its source does (read from the source, so a new use cannot go unstated).

use dispatch_fuzz::oracles::{OracleId, SharedPart, ORACLES};

use crate::common;

/// The source of an oracle: its file and every file of its module's folder, test modules aside.
fn source(id: OracleId) -> String {
    let name = match id {
        OracleId::EagerReplay => "eager_replay",
        OracleId::Model => "model",
        OracleId::Differential => "differential",
        OracleId::DtypeContract => "dtype_contract",
        OracleId::TransactionReads => "transaction_reads",
        OracleId::Reference => "reference",
    };
    common::module_source(&format!("src/oracles/{name}"), &[])
}

/// What a source writes of the shared state, by the calls that write each part.
fn writes_in(text: &str) -> Vec<SharedPart> {
    let mut out = Vec::new();
    if text.contains("wgpu_read.push(") {
        out.push(SharedPart::WgpuRead);
    }
    if text.contains(".wgpu_met(") || text.contains(".wgpu_met_panic(") {
        out.push(SharedPart::WgpuFailed);
    }
    if text.contains("shared.poison[o] =") || text.contains("shared.poison[usize::from(out)] =") {
        out.push(SharedPart::Poison);
    }
    out
}

/// What a source reads of the shared state at all.
fn reads_in(text: &str) -> Vec<SharedPart> {
    let mut out = Vec::new();
    if text.contains("shared.wgpu_read") {
        out.push(SharedPart::WgpuRead);
    }
    if ["wgpu_failed", "wgpu_failure()", "wgpu_poison("]
        .iter()
        .any(|r| text.contains(r))
    {
        out.push(SharedPart::WgpuFailed);
    }
    if text.contains("shared.poison[") || text.contains("wgpu_poison(") {
        out.push(SharedPart::Poison);
    }
    out
}

#[test]
fn each_oracle_states_what_its_source_writes_and_reads() {
    for spec in ORACLES {
        let text = source(spec.id);
        let mut written = writes_in(&text);
        let mut stated = spec.writes.to_vec();
        let key = |p: &SharedPart| format!("{p:?}");
        written.sort_by_key(key);
        stated.sort_by_key(key);
        assert_eq!(stated, written, "{}: writes", spec.name);
        let read = reads_in(&text);
        for part in spec.reads {
            assert!(
                read.contains(part),
                "{} states it reads {part:?}, and does not",
                spec.name
            );
        }
    }
}

#[test]
fn an_oracle_runs_after_every_oracle_that_writes_what_it_reads() {
    for (i, spec) in ORACLES.iter().enumerate() {
        for part in spec.reads {
            for (j, writer) in ORACLES.iter().enumerate() {
                if j != i && writer.writes.contains(part) {
                    assert!(
                        j < i,
                        "{} reads {part:?}, which {} writes after it",
                        spec.name,
                        writer.name
                    );
                }
            }
        }
    }
    // The reference judges the wgpu values the differential read in the same step.
    let at = |name: &str| ORACLES.iter().position(|s| s.name == name).unwrap();
    assert!(at("flex-vs-wgpu") < at("reference"));
}
