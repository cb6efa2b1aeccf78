//! "Did you mean": the known name closest to a misspelt one, for the
//! errors that name an unknown key, balancer or suite field.

/// The known name nearest to `word` by edit distance, when it is near
/// enough to be a slip (at most a third of the word's letters, and at
/// least one, differ).
///
/// ```
/// assert_eq!(braid::closest("thrads", ["threads", "seed"]), Some("threads"));
/// assert_eq!(braid::closest("colour", ["threads", "seed"]), None);
/// ```
pub fn closest<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let near = (word.chars().count() / 3).max(1);
    known
        .into_iter()
        .map(|k| (strsim::levenshtein(word, k), k))
        .filter(|&(d, _)| d <= near)
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}

/// `; did you mean `x`?` after an error's first clause, or nothing.
pub fn hint<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(word, known)
        .map(|k| format!("; did you mean `{k}`?"))
        .unwrap_or_default()
}
