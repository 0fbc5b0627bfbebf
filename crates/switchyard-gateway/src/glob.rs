//! Model-name globs, as routes and client keys write them.
//! Spec: R14.3, R14.6.

/// Whether `name` matches `pattern`, where each `*` stands for any run of characters.
pub(crate) fn glob_matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_matches_runs_of_any_characters_and_nothing_else() {
        assert!(glob_matches("claude-*", "claude-sonnet-4-5"));
        assert!(glob_matches("claude-*", "claude-"));
        assert!(!glob_matches("claude-*", "gpt-4o"));
        assert!(glob_matches("*-haiku-*", "claude-3-5-haiku-20241022"));
        assert!(!glob_matches("a*b*c", "acb"));
        assert!(glob_matches("a*b*c", "axbyc"));
        assert!(!glob_matches("ab*ba", "aba"));
        assert!(glob_matches("exact", "exact"));
        assert!(!glob_matches("exact", "exact2"));
    }
}
