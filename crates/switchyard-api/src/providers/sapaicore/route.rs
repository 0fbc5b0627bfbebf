//! Which of SAP AI Core's routes a model id takes.
//! Spec: R4.2.

/// Claude models on the Converse endpoint, the reference's `converseStreamModels`.
const CONVERSE_CLAUDE: &[&str] = &[
    "anthropic--claude-sonnet-5",
    "anthropic--claude-4.7-opus",
    "anthropic--claude-4.6-opus",
    "anthropic--claude-4.5-opus",
    "anthropic--claude-4.6-sonnet",
    "anthropic--claude-4.5-sonnet",
    "anthropic--claude-4.5-haiku",
    "anthropic--claude-4-sonnet",
    "anthropic--claude-4-opus",
    "anthropic--claude-3.7-sonnet",
];
/// Older Claude models on the Invoke endpoint.
const INVOKE_CLAUDE: &[&str] = &[
    "anthropic--claude-3.5-sonnet",
    "anthropic--claude-3-sonnet",
    "anthropic--claude-3-haiku",
    "anthropic--claude-3-opus",
];
/// OpenAI reasoning models, which take no `max_tokens` and no temperature. `o3-mini` streams like
/// the others: the reference's unstreamed call was for an Azure limit since lifted.
pub(super) const OPENAI_REASONING: &[&str] = &[
    "o1",
    "o3-mini",
    "o3",
    "o4-mini",
    "gpt-5",
    "gpt-5.2",
    "gpt-5.4",
    "gpt-5.4-nano",
    "gpt-5.5",
    "gpt-5-nano",
    "gpt-5-mini",
];

/// How a model is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    Converse,
    Invoke,
    OpenAi,
    /// Perplexity and hosted models: Chat Completions with `model`, no api-version.
    Hosted,
    Cohere,
    Gemini,
}

/// The route of `model_id`: the reference's lists, then family prefixes, so new models need no
/// rebuild.
pub(crate) fn route(model_id: &str) -> Option<Route> {
    let id = model_id;
    if CONVERSE_CLAUDE.contains(&id) || id.starts_with("amazon--nova") {
        return Some(Route::Converse);
    }
    if INVOKE_CLAUDE.contains(&id) {
        return Some(Route::Invoke);
    }
    if id.starts_with("anthropic--") {
        return Some(Route::Converse);
    }
    if id.starts_with("cohere--") {
        return Some(Route::Cohere);
    }
    if id.starts_with("gemini") {
        return Some(Route::Gemini);
    }
    if id.starts_with("sonar") || id.starts_with("mistralai--") {
        return Some(Route::Hosted);
    }
    if id.starts_with("gpt") || ["o1", "o3", "o4"].iter().any(|p| id.starts_with(p)) {
        return Some(Route::OpenAi);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_follow_the_reference_lists_then_the_prefixes() {
        assert_eq!(route("anthropic--claude-4.5-sonnet"), Some(Route::Converse));
        assert_eq!(route("anthropic--claude-3.5-sonnet"), Some(Route::Invoke));
        assert_eq!(route("anthropic--claude-9-sonnet"), Some(Route::Converse));
        assert_eq!(route("amazon--nova-pro"), Some(Route::Converse));
        assert_eq!(route("gpt-4o"), Some(Route::OpenAi));
        assert_eq!(route("o3-mini"), Some(Route::OpenAi));
        assert_eq!(route("sonar-pro"), Some(Route::Hosted));
        assert_eq!(
            route("mistralai--mistral-large-instruct"),
            Some(Route::Hosted)
        );
        assert_eq!(route("cohere--command-a-reasoning"), Some(Route::Cohere));
        assert_eq!(route("gemini-2.5-pro"), Some(Route::Gemini));
        assert_eq!(route("meta--llama3-70b"), None);
    }
}
