//! A panic's or an error's message with what changes from run to run (ids, values, kernel
//! hashes) taken out, so that its signature is the same in every run and on every machine.

/// The message with every free-standing run of digits, and its sign, replaced by `N` (tensor
/// and device ids come from process-global counters; values are data) and whitespace
/// collapsed. Digits glued to a name, as in `I64` or `u8`, are kept: they are dtypes, not
/// counters. A kernel name's hash suffix
/// (`unary_float_f_f32_n_1_15637f82`) becomes `HASH`: cubecl hashes the kernel's settings,
/// which follow the adapter (one machine gave `15637f82` on Mesa's Vulkan llvmpipe and
/// `6264db5f` on the backend wgpu fell back to without the Vulkan loader), so it would tie a
/// signature, and a stored case, to a machine.
pub fn normalize_message(message: &str) -> String {
    let collapsed = message.split_whitespace().collect::<Vec<_>>().join(" ");
    let collapsed = without_kernel_hashes(&collapsed);
    let mut out = String::with_capacity(collapsed.len());
    let mut previous: Option<char> = None;
    let mut in_number = false;
    let mut chars = collapsed.chars().peekable();
    while let Some(c) = chars.next() {
        // A sign before a free-standing number is part of it: a packed index read back as
        // `"i64"(-4294967297)` and one as `"i64"(4294967296)` are one message (fuzz --backends
        // flex,capture,wgpu --seed 4). A `-` glued to a name (`x-1`, a range) is kept.
        let signed = c == '-'
            && chars.peek().is_some_and(char::is_ascii_digit)
            && previous.is_none_or(|p| !p.is_alphanumeric() && p != '_');
        if signed {
            previous = Some(c);
            continue;
        }
        if c.is_ascii_digit() {
            let glued = previous.is_some_and(|p| p.is_alphanumeric() || p == '_') && !in_number;
            if glued {
                out.push(c);
            } else if !in_number {
                out.push('N');
                in_number = true;
            }
        } else {
            in_number = false;
            out.push(c);
        }
        previous = Some(c);
    }
    out
}

/// Length of the hex hash cubecl appends to a kernel's name.
const KERNEL_HASH_LEN: usize = 8;

/// `text` with each kernel-name hash suffix (`_` and exactly [`KERNEL_HASH_LEN`] lowercase hex
/// digits ending a name) replaced by `_HASH`.
pub(super) fn without_kernel_hashes(text: &str) -> String {
    let bytes = text.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let end = i + 1 + KERNEL_HASH_LEN;
        let is_hash = bytes[i] == b'_'
            && i > 0
            && word(bytes[i - 1])
            && end <= bytes.len()
            && bytes[i + 1..end].iter().all(|b| hex(*b))
            && bytes.get(end).is_none_or(|b| !word(*b));
        if is_hash {
            out.push_str("_HASH");
            i = end;
        } else {
            let c = text[i..].chars().next().expect("i is on a char boundary");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}
