//! Each provider's Chat Completions body rules as data, one row per provider of [`STYLES`], from
//! the `chat.completions.create` arguments of Cline v4.0.10's `providers/{id}.ts`.
//! Spec: R4.5.

use Limit::{Fixed, MaxCompletionTokens, MaxTokens, MaxTokensOr, Omit as NoLimit};
use Temperature::{Model, ModelOrOne, ModelOrZero, One, Zero};

/// Which field carries the output limit, and where the limit comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limit {
    Omit,
    /// `max_tokens` = the model's max output, when known.
    MaxTokens,
    /// `max_completion_tokens` = the model's max output, when known.
    MaxCompletionTokens,
    /// `max_tokens` = the model's max output, else this many tokens.
    MaxTokensOr(u64),
    /// `max_tokens` = this many tokens whatever the model.
    Fixed(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Temperature {
    Zero,
    ModelOrZero,
    Model,
    ModelOrOne,
    One,
    Omit,
    /// A configured 0 means none and unset means 0, as the `openai` provider sends.
    OpenAiCompatible,
}

/// Reasoning fields, by model family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reasoning {
    /// No reasoning fields.
    Plain,
    /// OpenAI reasoning models: `developer` role, no temperature, `max_completion_tokens` and
    /// `reasoning_effort`, `medium` when unset with `default_medium`.
    OpenAiFamily { default_medium: bool },
    /// DeepSeek: thinking models get no temperature and the effort when set; `deepseek-reasoner`'s
    /// thinking of the current turn goes back as `reasoning_content`.
    DeepSeek,
    /// Qwen on DashScope: the qwen3 family gets `enable_thinking` and `thinking_budget`, and with
    /// thinking on the R1 format and no temperature.
    Qwen,
    /// Requesty: `reasoning_effort` for `openai/o*`; Claude's `thinking` object.
    Requesty,
    /// LiteLLM: Claude's `thinking` object with a budget, no temperature with thinking, cache
    /// marks when the model caches, `drop_params`.
    LiteLlm,
    /// Groq: the DeepSeek family's `top_p` 0.95 and `reasoning_format: parsed`.
    Groq,
    /// xAI: `reasoning_effort` `low` or `high` for `grok-3-mini`.
    Xai,
}

/// `parallel_tool_calls` next to the tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parallel {
    /// `false`, the reference's default.
    False,
    /// `true` for GPT-5 models.
    Gpt5,
    Absent,
}

/// One provider's body rules, a row of [`STYLES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChatStyle {
    pub(crate) max_tokens: Limit,
    pub(crate) temperature: Temperature,
    /// Model id substrings whose conversations go in the R1 format.
    pub(crate) r1_models: &'static [&'static str],
    /// Compare `r1_models` with the lowercased id instead of the id as typed.
    pub(crate) r1_lowercase: bool,
    pub(crate) reasoning: Reasoning,
    pub(crate) parallel: Parallel,
}

impl ChatStyle {
    const fn new(max_tokens: Limit, temperature: Temperature) -> Self {
        Self {
            max_tokens,
            temperature,
            r1_models: &[],
            r1_lowercase: false,
            reasoning: Reasoning::Plain,
            parallel: Parallel::False,
        }
    }

    const fn reasoning(self, reasoning: Reasoning) -> Self {
        Self { reasoning, ..self }
    }

    const fn r1(self, models: &'static [&'static str]) -> Self {
        Self {
            r1_models: models,
            ..self
        }
    }

    const fn r1_lowercase(self) -> Self {
        Self {
            r1_lowercase: true,
            ..self
        }
    }

    const fn parallel(self, parallel: Parallel) -> Self {
        Self { parallel, ..self }
    }
}

/// The body rules of each provider by id; an id without a row gets [`OPENAI_COMPATIBLE`].
pub(crate) const STYLES: &[(&[&str], ChatStyle)] = &[
    (
        &["openai-native"],
        ChatStyle::new(MaxTokens, ModelOrZero)
            .reasoning(Reasoning::OpenAiFamily {
                default_medium: false,
            })
            .parallel(Parallel::Gpt5),
    ),
    (
        &["deepseek"],
        ChatStyle::new(MaxCompletionTokens, Zero).reasoning(Reasoning::DeepSeek),
    ),
    (
        &["requesty"],
        ChatStyle::new(MaxTokens, Zero).reasoning(Reasoning::Requesty),
    ),
    (
        &["together"],
        ChatStyle::new(NoLimit, Zero).r1(&["deepseek-reasoner"]),
    ),
    (
        &["qwen"],
        ChatStyle::new(MaxCompletionTokens, Zero)
            .r1(&["deepseek-r1"])
            .reasoning(Reasoning::Qwen),
    ),
    (
        &["litellm"],
        ChatStyle::new(NoLimit, ModelOrOne).reasoning(Reasoning::LiteLlm),
    ),
    (
        &["nebius"],
        ChatStyle::new(NoLimit, Zero).r1(&["DeepSeek-R1"]),
    ),
    (
        &["sambanova"],
        ChatStyle::new(NoLimit, ModelOrZero)
            .r1(&["deepseek", "qwen3"])
            .r1_lowercase(),
    ),
    (
        &["groq"],
        ChatStyle::new(MaxTokensOr(8192), Zero).reasoning(Reasoning::Groq),
    ),
    (
        &["xai"],
        ChatStyle::new(MaxCompletionTokens, Zero).reasoning(Reasoning::Xai),
    ),
    (
        &["baseten"],
        ChatStyle::new(MaxTokensOr(8192), Zero).parallel(Parallel::Absent),
    ),
    (
        &["fireworks", "mistral", "nousResearch", "wandb", "aihubmix"],
        ChatStyle::new(NoLimit, Zero),
    ),
    (
        &["doubao", "huawei-cloud-maas", "qwen-code"],
        ChatStyle::new(MaxCompletionTokens, Zero),
    ),
    (
        &["zai"],
        ChatStyle::new(MaxCompletionTokens, Temperature::Omit),
    ),
    (&["moonshot"], ChatStyle::new(MaxTokens, Model)),
    (&["huggingface"], ChatStyle::new(MaxTokens, Zero)),
    (&["cerebras"], ChatStyle::new(Fixed(16_384), ModelOrZero)),
    (&["hicap"], ChatStyle::new(NoLimit, One)),
    // LM Studio's limit is a user setting, its temperature none.
    (
        &["lmstudio"],
        ChatStyle::new(MaxCompletionTokens, Temperature::Omit),
    ),
];

/// The rules of `openai`, "OpenAI Compatible", and of any id without a row.
pub(crate) const OPENAI_COMPATIBLE: ChatStyle =
    ChatStyle::new(MaxTokens, Temperature::OpenAiCompatible)
        .r1(&["deepseek-reasoner"])
        .reasoning(Reasoning::OpenAiFamily {
            default_medium: true,
        });

pub(crate) fn style(provider_id: &str) -> ChatStyle {
    STYLES
        .iter()
        .find(|(ids, _)| ids.contains(&provider_id))
        .map_or(OPENAI_COMPATIBLE, |(_, style)| *style)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_provider_has_at_most_one_row() {
        let mut ids: Vec<&str> = STYLES
            .iter()
            .flat_map(|(ids, _)| ids.iter().copied())
            .collect();
        let all = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), all, "{ids:?}");
        assert_eq!(style("openai"), OPENAI_COMPATIBLE);
        assert_eq!(style("groq").max_tokens, Limit::MaxTokensOr(8192));
    }
}
