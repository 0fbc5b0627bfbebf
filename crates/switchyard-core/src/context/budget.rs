//! How many tokens a request may use before the history is truncated, and token estimates.
//! Spec: R8.1, R8.2.

use std::sync::OnceLock;

use switchyard_api::model::DEFAULT_CONTEXT_WINDOW;
use switchyard_api::{ContentBlock, Message, ModelInfo};

use super::truncation::TruncationKeep;

/// The token budget of one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextBudget {
    /// The model's context window; 128,000 when the model's is unknown or 0.
    pub context_window: u64,
    /// The largest total a request may reach before the next one truncates.
    pub max_allowed_size: u64,
}

/// The budget of a model.
pub fn context_budget(info: &ModelInfo) -> ContextBudget {
    let context_window = match info.context_window {
        0 => DEFAULT_CONTEXT_WINDOW,
        cw => cw,
    };
    let max_allowed_size = match context_window {
        64_000 => 37_000,
        128_000 => 98_000,
        200_000 => 160_000,
        // 0.8 × cw rounded up, so comparing integers matches the reference's fractional value.
        cw => cw.saturating_sub(40_000).max(cw - cw / 5),
    };
    ContextBudget {
        context_window,
        max_allowed_size,
    }
}

/// Whether the previous request came near enough to the window to truncate, and how hard.
pub fn should_truncate(
    previous_total_tokens: u64,
    budget: ContextBudget,
) -> Option<TruncationKeep> {
    if previous_total_tokens < budget.max_allowed_size {
        return None;
    }
    // Half the total still exceeds the budget: the user switched to a smaller model.
    if previous_total_tokens > budget.max_allowed_size.saturating_mul(2) {
        Some(TruncationKeep::Quarter)
    } else {
        Some(TruncationKeep::Half)
    }
}

pub use switchyard_api::estimate::{IMAGE_TOKENS, estimate_message_tokens, estimate_tokens};

/// How the tokens of text are counted: tiktoken's encoding for OpenAI models, else bytes/4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tokenizer {
    /// `ceil(bytes / 4)`.
    Bytes,
    /// OpenAI's `o200k_base`.
    O200kBase,
    /// OpenAI's `cl100k_base`.
    Cl100kBase,
}

impl Tokenizer {
    /// The tokenizer of `model_id`, ignoring a provider prefix such as `openai/`.
    pub fn for_model(model_id: &str) -> Self {
        let id = model_id
            .rsplit('/')
            .next()
            .unwrap_or(model_id)
            .to_ascii_lowercase();
        let starts = |prefixes: &[&str]| prefixes.iter().any(|p| id.starts_with(p));
        if starts(&[
            "gpt-4o",
            "gpt-4.1",
            "gpt-4.5",
            "gpt-5",
            "gpt-oss",
            "chatgpt-4o",
            "o1",
            "o3",
            "o4",
        ]) {
            Self::O200kBase
        } else if starts(&["gpt-4", "gpt-3.5"]) {
            Self::Cl100kBase
        } else {
            Self::Bytes
        }
    }

    /// The tokens of `text`; bytes/4 if the BPE tables cannot be built.
    pub fn count(self, text: &str) -> u64 {
        // The tables are built once per process on first use, about 0.1 s in a release build.
        match self.bpe() {
            Some(bpe) => bpe.count_ordinary(text) as u64,
            None => estimate_tokens(text.len()),
        }
    }

    fn bpe(self) -> Option<&'static tiktoken_rs::CoreBPE> {
        static O200K: OnceLock<Option<tiktoken_rs::CoreBPE>> = OnceLock::new();
        static CL100K: OnceLock<Option<tiktoken_rs::CoreBPE>> = OnceLock::new();
        match self {
            Self::Bytes => None,
            Self::O200kBase => O200K
                .get_or_init(|| tiktoken_rs::o200k_base().ok())
                .as_ref(),
            Self::Cl100kBase => CL100K
                .get_or_init(|| tiktoken_rs::cl100k_base().ok())
                .as_ref(),
        }
    }
}

/// `estimate_message_tokens` with `tokenizer` counting the text.
pub fn estimate_message_tokens_with(
    tokenizer: Tokenizer,
    system: &str,
    messages: &[Message],
) -> u64 {
    if tokenizer == Tokenizer::Bytes {
        return estimate_message_tokens(system, messages);
    }
    let mut tokens = tokenizer.count(system);
    for block in messages.iter().flat_map(|m| &m.content) {
        tokens = tokens.saturating_add(match block {
            ContentBlock::Text { text } => tokenizer.count(text),
            ContentBlock::Image { .. } => IMAGE_TOKENS,
            ContentBlock::ToolUse { name, input, .. } => {
                tokenizer.count(name) + tokenizer.count(&input.to_string())
            }
            ContentBlock::ToolResult { content, .. } => tokenizer.count(content),
            ContentBlock::Thinking { thinking, .. } => tokenizer.count(thinking),
            ContentBlock::RedactedThinking { data } => estimate_tokens(data.len()),
        });
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_api::Role;
    use switchyard_api::message::ImageSource;

    fn budget_for(cw: u64) -> ContextBudget {
        context_budget(&ModelInfo {
            context_window: cw,
            ..ModelInfo::default()
        })
    }

    #[test]
    fn fixed_windows() {
        assert_eq!(budget_for(64_000).max_allowed_size, 37_000);
        assert_eq!(budget_for(128_000).max_allowed_size, 98_000);
        assert_eq!(budget_for(200_000).max_allowed_size, 160_000);
    }

    #[test]
    fn unknown_window_is_128k() {
        let b = budget_for(0);
        assert_eq!(b.context_window, 128_000);
        assert_eq!(b.max_allowed_size, 98_000);
    }

    #[test]
    fn other_windows_use_the_larger_of_minus_40k_and_80_percent() {
        // Large windows: cw − 40k wins.
        assert_eq!(budget_for(1_000_000).max_allowed_size, 960_000);
        assert_eq!(budget_for(400_000).max_allowed_size, 360_000);
        // Small windows: 80 % wins (rounded up).
        assert_eq!(budget_for(32_768).max_allowed_size, 26_215);
        assert_eq!(budget_for(100_000).max_allowed_size, 80_000);
        assert_eq!(budget_for(8_000).max_allowed_size, 6_400);
        // The crossover is 200k, which has its own value.
        assert_eq!(budget_for(199_999).max_allowed_size, 160_000);
        assert_eq!(budget_for(200_001).max_allowed_size, 160_001);
        assert_eq!(budget_for(1).max_allowed_size, 1);
        assert_eq!(budget_for(u64::MAX).context_window, u64::MAX);
    }

    #[test]
    fn should_truncate_thresholds() {
        let b = budget_for(200_000); // max 160k
        assert_eq!(should_truncate(0, b), None);
        assert_eq!(should_truncate(159_999, b), None);
        assert_eq!(should_truncate(160_000, b), Some(TruncationKeep::Half));
        assert_eq!(should_truncate(320_000, b), Some(TruncationKeep::Half));
        assert_eq!(should_truncate(320_001, b), Some(TruncationKeep::Quarter));
        // Switching from a 200k model to a 64k one: 150k / 2 > 37k → quarter.
        assert_eq!(
            should_truncate(150_000, budget_for(64_000)),
            Some(TruncationKeep::Quarter)
        );
        assert_eq!(should_truncate(u64::MAX, b), Some(TruncationKeep::Quarter));
    }

    #[test]
    fn tokenizers_by_model() {
        assert_eq!(Tokenizer::for_model("gpt-4o-mini"), Tokenizer::O200kBase);
        assert_eq!(Tokenizer::for_model("openai/gpt-5"), Tokenizer::O200kBase);
        assert_eq!(Tokenizer::for_model("o3-mini"), Tokenizer::O200kBase);
        assert_eq!(Tokenizer::for_model("gpt-4-turbo"), Tokenizer::Cl100kBase);
        assert_eq!(Tokenizer::for_model("claude-sonnet-4-5"), Tokenizer::Bytes);
        assert_eq!(Tokenizer::for_model("deepseek-chat"), Tokenizer::Bytes);
    }

    #[test]
    fn the_tokenizer_counts_what_bytes_over_four_misjudges() {
        // o200k: "hello world" is two tokens ("hello", " world").
        assert_eq!(Tokenizer::O200kBase.count("hello world"), 2);
        assert_eq!(Tokenizer::Cl100kBase.count("hello world"), 2);
        // Numbers: tokens of at most three digits, where bytes/4 assumes four.
        let digits = "1234567890".repeat(30);
        let bytes_estimate = estimate_tokens(digits.len());
        let counted = Tokenizer::O200kBase.count(&digits);
        assert!(counted > bytes_estimate, "{counted} vs {bytes_estimate}");
        let cjk = "上下文窗口管理".repeat(20);
        let messages = [Message::user_text(cjk.clone())];
        assert_eq!(
            estimate_message_tokens_with(Tokenizer::Bytes, "sys", &messages),
            estimate_message_tokens("sys", &messages)
        );
        assert_eq!(
            estimate_message_tokens_with(Tokenizer::O200kBase, "", &messages),
            Tokenizer::O200kBase.count(&cjk)
        );
    }

    #[test]
    fn estimate_tokens_rounds_up() {
        assert_eq!(estimate_tokens(0), 0);
        assert_eq!(estimate_tokens(1), 1);
        assert_eq!(estimate_tokens(4), 1);
        assert_eq!(estimate_tokens(5), 2);
        assert_eq!(estimate_tokens(4_000), 1_000);
    }

    #[test]
    fn estimate_message_tokens_counts_every_block() {
        let messages = vec![
            Message::user_text("a".repeat(40)), // 40
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Thinking {
                        thinking: "t".repeat(8), // 8
                        signature: "ignored-signature".into(),
                    },
                    ContentBlock::ToolUse {
                        id: "toolu_ignored".into(),
                        name: "read".into(),                        // 4
                        input: serde_json::json!({"path": "a.rs"}), // {"path":"a.rs"} = 15
                        signature: None,
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    ContentBlock::ToolResult {
                        tool_use_id: "toolu_ignored".into(),
                        content: "r".repeat(12), // 12
                        is_error: false,
                    },
                    ContentBlock::Image {
                        source: ImageSource {
                            kind: "base64".into(),
                            media_type: "image/png".into(),
                            data: "x".repeat(100_000),
                        },
                    },
                ],
            },
        ];
        // system 3 + 40 + 8 + 4 + 15 + 12 = 82 bytes → 21 tokens, plus one image.
        assert_eq!(estimate_message_tokens("sys", &messages), 21 + IMAGE_TOKENS);
        assert_eq!(estimate_message_tokens("", &[]), 0);
    }
}
