//! The record of one run: one [`Outcome`] per step, in a form that prints, serializes and
//! compares without reference to process-global counters (tensor and device ids are normalized
//! out of messages by the oracles, not here).

use std::borrow::Cow;

use burn::tensor::DType;
use serde::{Deserialize, Serialize};

use crate::program::limits::MAX_SLOTS;
use crate::program::{Kind, Step};

/// The `Outcome::Error` name of an error value from reading a tensor or running a graph.
pub const EXECUTION_ERROR: &str = "ExecutionError";

/// What a materialized or placeholder tensor looked like after a step.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ValueInfo {
    /// Element kind.
    pub kind: Kind,
    /// Burn dtype (written as its `Debug` text, `F32`, `Bool(U8)`).
    #[serde(with = "dtype_text")]
    pub dtype: DType,
    /// Shape.
    pub shape: Vec<usize>,
    /// Device, as the program names it (written `flex`, `flex_ad`, `capture1`, `capture1_ad`,
    /// ...).
    pub device: Placed,
    /// For a capture tensor an op handed back unchanged (Burn returns the operand itself for
    /// no-ops such as `swap_dims(0, 0)`): the operand's slot. The reference model needs it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub same_as: Option<crate::program::Slot>,
    /// Digest (`hash::words_digest`) of dtype, shape and bytes, where the step materialized the
    /// data.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub digest: Option<Digest>,
}

/// The device a value is on, as a value: the program's device family (a pooled capture
/// device by its place in the pool) and whether it is wrapped for autodiff. Its text is the name
/// traces and listings use (`flex`, `capture1_ad`, `wgpu`; `other` for a device outside the pool).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Placed {
    /// The device.
    pub base: Base,
    /// Whether the device is wrapped for autodiff.
    pub autodiff: bool,
}

/// A device family, as [`Placed`] names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Base {
    /// Flex.
    Flex,
    /// The pooled capture device at this place in the pool.
    Capture(u8),
    /// The wgpu device.
    Wgpu,
    /// A device outside the pool.
    Other,
}

impl Placed {
    /// `base`, wrapped for autodiff or not.
    pub const fn new(base: Base, autodiff: bool) -> Placed {
        Placed { base, autodiff }
    }

    /// Whether it is the wgpu device, autodiff or not.
    pub fn is_wgpu(self) -> bool {
        self.base == Base::Wgpu
    }

    /// Whether it is Flex or wgpu, where no tensor is a capture tensor.
    pub fn is_plain(self) -> bool {
        matches!(self.base, Base::Flex | Base::Wgpu)
    }

    /// Its family's name, without the pool place and the autodiff mark (`capture`, `flex`).
    pub fn family(self) -> &'static str {
        match self.base {
            Base::Flex => "flex",
            Base::Capture(_) => "capture",
            Base::Wgpu => "wgpu",
            Base::Other => "other",
        }
    }
}

impl std::fmt::Display for Placed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.family())?;
        if let Base::Capture(k) = self.base {
            write!(f, "{k}")?;
        }
        if self.autodiff && self.base != Base::Other {
            f.write_str("_ad")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Placed {
    type Err = String;

    fn from_str(text: &str) -> Result<Placed, String> {
        let (name, autodiff) = match text.strip_suffix("_ad") {
            Some(name) => (name, true),
            None => (text, false),
        };
        let base = match name {
            "flex" => Base::Flex,
            "wgpu" => Base::Wgpu,
            "other" if !autodiff => Base::Other,
            _ => name
                .strip_prefix("capture")
                .and_then(|k| k.parse().ok())
                .map(Base::Capture)
                .ok_or_else(|| format!("not a device name: {text:?}"))?,
        };
        Ok(Placed { base, autodiff })
    }
}

impl Serialize for Placed {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Placed {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A Burn dtype as traces write it: its `Debug` text. Read back for every dtype but a quantized
/// one, whose scheme the text does not give in full (nothing reads a trace's quantized dtype
/// back: a child process's verdict is read as JSON values).
mod dtype_text {
    use std::borrow::Cow;

    use burn::tensor::{BoolStore, DType};
    use serde::{Deserialize, Deserializer, Serializer};

    /// Every dtype but the quantized ones.
    const PLAIN: [DType; 16] = [
        DType::F64,
        DType::F32,
        DType::Flex32,
        DType::F16,
        DType::BF16,
        DType::I64,
        DType::I32,
        DType::I16,
        DType::I8,
        DType::U64,
        DType::U32,
        DType::U16,
        DType::U8,
        DType::Bool(BoolStore::Native),
        DType::Bool(BoolStore::U8),
        DType::Bool(BoolStore::U32),
    ];

    pub fn serialize<S: Serializer>(dtype: &DType, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{dtype:?}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DType, D::Error> {
        let text = Cow::<str>::deserialize(d)?;
        PLAIN
            .into_iter()
            .find(|p| format!("{p:?}") == text)
            .ok_or_else(|| serde::de::Error::custom(format!("not a plain dtype: {text:?}")))
    }
}

/// A value's digest: kept as the number (every read step makes one, and a string cost an
/// allocation and a hex formatting each), written as 16 hex digits in traces and listings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Digest(pub u64);

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(deserializer)?;
        u64::from_str_radix(&text, 16)
            .map(Digest)
            .map_err(|_| serde::de::Error::custom(format!("not a hex digest: {text:?}")))
    }
}

/// What a completed capture scope recorded.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct GraphInfo {
    /// Operations in the graph.
    pub operations: usize,
    /// Declared runtime inputs.
    pub inputs: usize,
    /// Declared outputs.
    pub outputs: usize,
    /// Recorded constant values (initializers and moved-in data).
    pub values: usize,
}

/// A panic caught while a step ran.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct PanicInfo {
    /// The panic message.
    pub message: String,
    /// `file:line:column` as the panic reported it (a macro's call site for macro panics).
    pub location: Option<String>,
    /// Name of the panicking thread, when it has one.
    pub thread: Option<String>,
    /// The signature class (`backgroundTag` of the matching catalogue record, or `unknown`);
    /// filled in by `oracles::classify`.
    pub class: String,
}

/// A panic Burn raised outside a step's own call, while the run went on: in a mirror, an
/// oracle's replay, a best-effort read, a cleanup. Nothing else records it, so the journal does.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct SidePanic {
    /// The step running when it happened (`None`: before the first or after the last).
    pub step: Option<usize>,
    /// Where: `eager mirror`, `wgpu mirror`, `wgpu replay`, `replay feed`, `autodiff sweep`, ...
    pub site: Cow<'static, str>,
    /// The panic.
    pub panic: PanicInfo,
}

/// An error value Burn returned outside a step's own call (a mirror's replay, a best-effort
/// read) that the harness could not go on with. Judged like a step's `ExecutionError`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct SideError {
    /// The step running when it happened (`None`: before the first or after the last).
    pub step: Option<usize>,
    /// Where, as for [`SidePanic`].
    pub site: Cow<'static, str>,
    /// The variant name (`ExecutionError`).
    pub error: String,
    /// Its `Display` text.
    pub message: String,
}

/// The outcome of one step.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// The step returned normally.
    Ok {
        /// The tensor the step produced or read, if any.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        value: Option<ValueInfo>,
        /// The graph a scope exit completed.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        graph: Option<GraphInfo>,
        /// The tensors a replay produced, in output order.
        #[serde(skip_serializing_if = "Vec::is_empty", default)]
        outputs: Vec<ValueInfo>,
    },
    /// Burn returned an error value: a `CaptureError` variant or an `ExecutionError`.
    Error {
        /// The variant name, e.g. `AlreadyActive` or `ExecutionError`.
        error: String,
        /// Its `Display` text.
        message: String,
    },
    /// The step panicked.
    Panic(PanicInfo),
    /// The step did not run: an operand slot was empty or held a tensor the op does not accept,
    /// or the step sits inside a scope whose closure never ran.
    Skipped {
        /// Why.
        reason: String,
    },
}

impl Outcome {
    /// `Ok` with no value.
    pub fn ok() -> Self {
        Outcome::Ok {
            value: None,
            graph: None,
            outputs: Vec::new(),
        }
    }

    /// `Skipped` with a reason.
    pub fn skipped(reason: impl Into<String>) -> Self {
        Outcome::Skipped {
            reason: reason.into(),
        }
    }
}

/// One step's record.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct StepRecord {
    /// Index of the step in the program.
    pub index: usize,
    /// What happened.
    pub outcome: Outcome,
}

/// The trace of one program run.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// One record per step, in program order.
    pub steps: Vec<StepRecord>,
    /// A panic raised while the program's remaining tensors were dropped at the end.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub teardown: Option<PanicInfo>,
    /// Panics Burn raised outside the steps' own calls (see [`SidePanic`]).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub side_panics: Vec<SidePanic>,
    /// Error values Burn returned outside the steps' own calls (see [`SideError`]).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub side_errors: Vec<SideError>,
    /// Pool devices that refused a fresh empty scope after the program (see
    /// `interpreter::pool::leaked_devices`).
    pub leaked_devices: Vec<usize>,
}

impl Trace {
    /// Walks the steps of `steps` the trace ran, in order, handing `visit` each step, its record
    /// and what every slot held just before it (the value the run had left there, as its
    /// [`ValueInfo`]: kind, dtype, device), until `visit` gives something back. A step that
    /// failed leaves its outputs empty; one that was skipped leaves the slots as they were.
    pub fn walk_held<'t, T>(
        &'t self,
        steps: &[Step],
        mut visit: impl FnMut(&Step, &'t StepRecord, &[Option<&'t ValueInfo>]) -> Option<T>,
    ) -> Option<T> {
        let mut held: [Option<&ValueInfo>; MAX_SLOTS as usize] = [None; MAX_SLOTS as usize];
        for record in &self.steps {
            let Some(step) = steps.get(record.index) else {
                continue;
            };
            if let Some(found) = visit(step, record, &held) {
                return Some(found);
            }
            let writes = step.writes();
            match &record.outcome {
                Outcome::Ok { value, outputs, .. } => {
                    if let (1, Some(v)) = (writes.len(), value) {
                        held[usize::from(writes[0])] = Some(v);
                    } else {
                        for (k, out) in writes.iter().enumerate() {
                            held[usize::from(*out)] = outputs.get(k);
                        }
                    }
                }
                Outcome::Skipped { .. } => {}
                _ => writes.iter().for_each(|out| held[usize::from(*out)] = None),
            }
        }
        None
    }

    /// Every panic in the trace with its step index, steps' own first (in order), then the
    /// teardown's and the side panics (a side panic without a step counts as past the end, like
    /// the teardown).
    pub fn panics(&self) -> impl Iterator<Item = (usize, &PanicInfo)> {
        let end = self.steps.len();
        let steps = self.steps.iter().filter_map(|r| match &r.outcome {
            Outcome::Panic(p) => Some((r.index, p)),
            _ => None,
        });
        let side = self
            .side_panics
            .iter()
            .map(move |s| (s.step.unwrap_or(end), &s.panic));
        steps
            .chain(self.teardown.iter().map(move |p| (end, p)))
            .chain(side)
    }

    /// Mutable access to every panic, for classification.
    pub fn panics_mut(&mut self) -> impl Iterator<Item = &mut PanicInfo> {
        let steps = self.steps.iter_mut().filter_map(|r| match &mut r.outcome {
            Outcome::Panic(p) => Some(p),
            _ => None,
        });
        steps
            .chain(self.teardown.iter_mut())
            .chain(self.side_panics.iter_mut().map(|s| &mut s.panic))
    }
}

#[cfg(test)]
mod tests {
    use super::Digest;

    #[test]
    fn a_digest_is_written_as_sixteen_hex_digits_and_read_back_from_them() {
        let digest = Digest(0x00ab_cdef_0123_4567);
        let text = serde_json::to_string(&digest).unwrap();
        assert_eq!(text, "\"00abcdef01234567\"");
        assert_eq!(serde_json::from_str::<Digest>(&text).unwrap(), digest);
        assert!(serde_json::from_str::<Digest>("\"not hex\"").is_err());
    }
}
