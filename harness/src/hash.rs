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

/// A digest eight bytes at a time: FNV-1a's xor-and-multiply over little-endian words, then
/// the tail bytes, then a final mix so every input bit reaches the low bits. Each step is a
/// bijection of the state, so two inputs of one length that differ in a single word never
/// collide. For what every run hashes (the data of each value it reads, each panic's message
/// for the class cache), where byte-at-a-time [`fnv1a`] costs a byte's multiply per byte.
pub fn words_digest(chunks: &[&[u8]]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for chunk in chunks {
        let mut words = chunk.chunks_exact(8);
        for word in &mut words {
            let word = u64::from_le_bytes(word.try_into().expect("chunks_exact gives 8 bytes"));
            hash = (hash ^ word).wrapping_mul(PRIME);
        }
        for byte in words.remainder() {
            hash = (hash ^ u64::from(*byte)).wrapping_mul(PRIME);
        }
        // The chunk's length, so the boundary between two chunks is part of the digest.
        hash = (hash ^ chunk.len() as u64).wrapping_mul(PRIME);
    }
    // splitmix64's finalizer.
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_words_digest_changes_with_any_byte_and_with_where_chunks_split() {
        let data: Vec<u8> = (0..37u8).collect();
        let base = words_digest(&[&data]);
        for i in 0..data.len() {
            for bit in [0x01, 0x80] {
                let mut changed = data.clone();
                changed[i] ^= bit;
                assert_ne!(words_digest(&[&changed]), base, "byte {i} bit {bit:#x}");
            }
        }
        assert_ne!(
            words_digest(&[&data[..8], &data[8..]]),
            words_digest(&[&data[..9], &data[9..]])
        );
        assert_eq!(words_digest(&[b"ab", b"c"]), words_digest(&[b"ab", b"c"]));
    }
}
