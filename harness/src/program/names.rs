//! The nearest valid names to a misspelt one, for errors on program files.

/// The names in `names` closest to `wanted` (edit distance, at most three), for error messages.
pub fn nearest<'a>(wanted: &str, names: &[&'a str]) -> Vec<&'a str> {
    let mut scored: Vec<(usize, &str)> = names
        .iter()
        .map(|n| (edit_distance(wanted, n), *n))
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, n)| n).collect()
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}
