//! Every bound the generator and `fixup` enforce, each with the reason it exists.
//!
//! These are the only numeric limits on a program. Changing one changes which programs decode
//! from a given byte string, so stored reproducers are text (see `program::Program`'s serde form),
//! never raw fuzzer bytes.

/// Steps in one program. The bugs found so far need 1 to 4 steps once minimized, but the
/// fuzzer reaches them through long programs (a tensor outliving several scopes, a graph replayed
/// after later scopes), and the minimizer is measured on crashes of 50 to 200 steps. A
/// 200-step program still runs in well under a millisecond on Flex.
pub const MAX_STEPS: usize = 200;

/// Tensor slots a program can name. Slot references are taken modulo the slots that hold a
/// suitable tensor, so a small table makes random references collide often, which is what
/// exercises aliasing, reuse after a scope closes and cross-device mixing.
pub const MAX_SLOTS: u8 = 8;

/// Capture devices in the pool. Two are needed to move a tensor between capture devices and to
/// nest scopes on different devices; a third lets a scope stay open on one device while another
/// pair interacts. Each pooled device costs one id from Burn's never-recycled `u16` counter, per
/// thread that runs programs.
pub const CAPTURE_POOL_SIZE: u8 = 3;

/// Rank of a created tensor. Burn's `Tensor` API rejects rank 0 up front
/// (`burn-tensor/src/tensor/api/check.rs`: "Tried to create a 0-dim tensor"), before any dispatch
/// code runs, so generating it would only re-test that check; rank 4 is the highest rank the
/// dispatch-level ops treat specially (batched matmul over two batch dims).
pub const MIN_RANK: usize = 1;
/// See [`MIN_RANK`].
pub const MAX_RANK: usize = 4;

/// Size of one dimension. Size 1 matters (broadcasting), sizes above 4 add nothing that the
/// dispatch layer sees: it routes by device and kind, never by size.
pub const MAX_DIM: usize = 4;

/// Elements in one tensor. Keeps every Flex kernel on its single-threaded path (so a panic
/// carries its location on the interpreter's own thread) and every value cheap to digest.
pub const MAX_ELEMENTS: usize = 64;

/// Open scopes at once. Depth 2 reaches every nesting rule (same device: `AlreadyActive`; other
/// device: independent scope); the bound keeps the interpreter's recursion shallow.
pub const MAX_SCOPE_DEPTH: usize = 3;

/// Threads one program runs on (`Step::Thread`). Two reach every rule of Burn's per-device
/// capture registry (a scope open on one thread while another uses its device); a third and a
/// fourth let scopes on different devices be open at once on separate threads while a further
/// thread moves or replays their tensors, the 2-4 threads of syzkaller's threaded mode.
pub const MAX_THREADS: u8 = 4;

/// Extra operands of one `cat` and boundary tensors of one scope exit or replay: enough to
/// see ordering and duplicate handling without letting one step dominate a program.
pub const MAX_LIST: usize = 4;

/// Magnitude past which sin, cos and tan results are not compared across backends. WGSL bounds
/// their error only inside [-pi, pi]. No fuzz session saw llvmpipe or the H200 leave the
/// tolerance at the magnitudes programs usually reach (arange values up to 64, a few products),
/// while `arange^8` (about 1e10) made llvmpipe's `cos` return 1 where Flex gives -0.58. A
/// choice, not a measured bound: high enough to keep the common cases compared.
pub const LARGE_ARGUMENT: f64 = 1024.0;

/// Magnitude past which sinh, cosh and tanh results are not compared across backends: WGSL
/// computes them through `exp(x)`, which overflows f32 past ln(f32::MAX) = 88.72 while sinh and
/// cosh still fit up to 89.4. llvmpipe gives -inf for sinh(-89), where Flex gives -2.24e38
/// (fuzz --seed 33 with wgpu). Spec-allowed, so not a finding; 88 leaves a margin below the
/// first input that overflows.
pub const EXP_OVERFLOW: f64 = 88.0;

/// Magnitude past which asinh and acosh results are not compared across backends: WGSL
/// computes them as `log(x + sqrt(x * x ± 1))`, and `x * x` overflows f32 past sqrt(f32::MAX) =
/// 1.84e19. llvmpipe gives acosh(cosh(-83)) = acosh(5.6e35) = inf where Flex gives 83 (fuzz
/// --backends flex,capture,wgpu --seed 105). Spec-allowed, so not a finding.
pub const SQUARE_OVERFLOW: f64 = 1.8e19;

/// Magnitude of a finite dividend past which a float remainder or fmod is not compared across
/// backends: WGSL computes them as `x - y * floor(x / y)` (or `trunc`), and past 2^24 the f32
/// quotient of a finite divisor is no longer an exact integer, so the result is off by up to
/// x's own rounding step. Flex's remainder(2^33, 53) is 31, llvmpipe's 0 (fuzz --backends
/// flex,capture,wgpu --seed 105). Spec-allowed, so not a finding; an infinite divisor still is
/// (the stored wgpu-remainder-of-zero-by-infinity-is-nan).
pub const INEXACT_QUOTIENT: f64 = 16_777_216.0;

/// How near zero an operand of an op with a pole there (`Unspecified::Pole`) must be for the
/// result to be left open when the backends did not compute the operand bit for bit alike: the
/// widest absolute tolerance an operand is judged within (`Tolerance::permissive`, 0.01), since
/// the other backend's value may be zero anywhere inside it. Flex's log_sigmoid(73) is -2e-32
/// where wgpu's is 0, so x / x is 1 on Flex and NaN on wgpu; Flex's mish(-56) is -2.7e-23 where
/// wgpu's is -0, so sqrt gives NaN on Flex and -0 on wgpu (fuzz --backends flex,capture,wgpu
/// --seed 105).
pub const POLE_NEIGHBOURHOOD: f64 = 0.01;
