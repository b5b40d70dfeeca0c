//! A hash whose value never changes, for digests and names that are committed or compared
//! across processes.

/// 64-bit FNV-1a: stable across processes, platforms and Rust versions, unlike `DefaultHasher`.
pub fn fnv1a(chunks: &[&[u8]]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for chunk in chunks {
        for byte in *chunk {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}
