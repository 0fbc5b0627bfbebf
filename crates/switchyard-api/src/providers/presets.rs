//! Every provider id Switchyard knows, as data: family, base URL, key variables, default model and
//! retry policy, spelled as the reference and each provider document them.
//! Spec: R4.1, R4.2, R4.4, R4.5, R5.1.

use crate::retry::RetryPolicy;

/// The wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFamily {
    Anthropic,
    OpenAiChat,
    Ollama,
    Gemini,
    Bedrock,
    /// Vertex AI: Gemini and Claude models with Google OAuth.
    Vertex,
    /// AIhubmix: one key, four wire formats chosen by the model id.
    Aihubmix,
    /// AskSage's REST API: one JSON answer per request.
    AskSage,
    Dify,
    SapAiCore,
    /// Chat Completions with the Qwen CLI's OAuth sign-in.
    QwenCode,
    /// Responses at the ChatGPT backend with the Codex CLI's sign-in.
    OpenAiCodex,
    /// The `claude` CLI as a child process, read as stream-json.
    ClaudeCode,
    /// A provider a terminal program cannot use; building its handler fails with this sentence.
    Unavailable(&'static str),
    /// A family this build does not speak, refused when a handler is built.
    NotYetSupported(&'static str),
}

/// How a provider's Chat Completions stream differs from OpenAI's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatDialect {
    Generic,
    /// OpenRouter: comments, in-stream `error` chunks, `delta.reasoning`, `usage.cost`.
    OpenRouter,
    /// DeepSeek: `delta.reasoning_content`, `prompt_cache_hit_tokens`.
    DeepSeek,
}

/// One provider id and how to reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderPreset {
    /// The reference's provider id, e.g. `openrouter`.
    pub id: &'static str,
    pub family: WireFamily,
    pub dialect: ChatDialect,
    /// Default base URL, without a trailing slash.
    pub base_url: &'static str,
    /// Environment variables holding the API key, in the order they are looked up.
    pub api_key_env: &'static [&'static str],
    /// Whether a request needs a key; local servers do not.
    pub key_required: bool,
    /// The model used when none is configured, the reference's default for the provider. The
    /// catalogue's default wins where the provider has a table; the tests check they agree.
    pub default_model: &'static str,
    /// Whether the provider serves models beyond its table, as a router or local server does.
    /// Spec: R2.3.
    pub any_model_id: bool,
    /// How rate-limited requests are retried before any chunk.
    pub retry: RetryPolicy,
}

const fn chat(
    id: &'static str,
    base_url: &'static str,
    api_key_env: &'static [&'static str],
    default_model: &'static str,
) -> ProviderPreset {
    ProviderPreset {
        id,
        family: WireFamily::OpenAiChat,
        dialect: ChatDialect::Generic,
        base_url,
        api_key_env,
        key_required: true,
        default_model,
        any_model_id: true,
        retry: RetryPolicy::STANDARD,
    }
}

/// Every provider id, in the reference's spelling.
pub const PRESETS: &[ProviderPreset] = &[
    ProviderPreset {
        id: "anthropic",
        family: WireFamily::Anthropic,
        dialect: ChatDialect::Generic,
        base_url: "https://api.anthropic.com",
        api_key_env: &["ANTHROPIC_API_KEY"],
        key_required: true,
        default_model: "claude-sonnet-5",
        any_model_id: false,
        retry: RetryPolicy::STANDARD,
    },
    ProviderPreset {
        id: "minimax",
        family: WireFamily::Anthropic,
        dialect: ChatDialect::Generic,
        base_url: "https://api.minimax.io/anthropic",
        api_key_env: &["MINIMAX_API_KEY"],
        key_required: true,
        default_model: "MiniMax-M2.7",
        any_model_id: true,
        retry: RetryPolicy::STANDARD,
    },
    // `openai` is the reference's "OpenAI Compatible" provider: any base URL, Azure's included.
    chat(
        "openai",
        "https://api.openai.com/v1",
        &["OPENAI_API_KEY"],
        "gpt-4o",
    ),
    ProviderPreset {
        any_model_id: false,
        ..chat(
            "openai-native",
            "https://api.openai.com/v1",
            &["OPENAI_API_KEY"],
            "gpt-5.5",
        )
    },
    ProviderPreset {
        dialect: ChatDialect::OpenRouter,
        ..chat(
            "openrouter",
            "https://openrouter.ai/api/v1",
            &["OPENROUTER_API_KEY"],
            "anthropic/claude-sonnet-5",
        )
    },
    ProviderPreset {
        dialect: ChatDialect::DeepSeek,
        any_model_id: false,
        ..chat(
            "deepseek",
            "https://api.deepseek.com/v1",
            &["DEEPSEEK_API_KEY"],
            "deepseek-chat",
        )
    },
    chat(
        "requesty",
        "https://router.requesty.ai/v1",
        &["REQUESTY_API_KEY"],
        "anthropic/claude-sonnet-5",
    ),
    chat(
        "fireworks",
        "https://api.fireworks.ai/inference/v1",
        &["FIREWORKS_API_KEY"],
        "accounts/fireworks/models/kimi-k2p6",
    ),
    chat(
        "together",
        "https://api.together.xyz/v1",
        &["TOGETHER_API_KEY"],
        "meta-llama/Llama-3.3-70B-Instruct-Turbo",
    ),
    chat(
        "qwen",
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        &["DASHSCOPE_API_KEY", "QWEN_API_KEY"],
        "qwen3-coder-plus",
    ),
    chat(
        "doubao",
        "https://ark.cn-beijing.volces.com/api/v3",
        &["ARK_API_KEY", "DOUBAO_API_KEY"],
        "doubao-1-5-pro-256k-250115",
    ),
    chat(
        "mistral",
        "https://api.mistral.ai/v1",
        &["MISTRAL_API_KEY"],
        "devstral-2512",
    ),
    ProviderPreset {
        key_required: false,
        ..chat(
            "litellm",
            "http://127.0.0.1:4000/v1",
            &["LITELLM_API_KEY"],
            "anthropic/claude-3-7-sonnet-20250219",
        )
    },
    chat(
        "moonshot",
        "https://api.moonshot.ai/v1",
        &["MOONSHOT_API_KEY"],
        "kimi-k2-0905-preview",
    ),
    chat(
        "huggingface",
        "https://router.huggingface.co/v1",
        &["HF_TOKEN", "HUGGINGFACE_API_KEY"],
        "moonshotai/Kimi-K2-Instruct",
    ),
    chat(
        "nebius",
        "https://api.studio.nebius.com/v1",
        &["NEBIUS_API_KEY"],
        "Qwen/Qwen2.5-32B-Instruct-fast",
    ),
    chat("xai", "https://api.x.ai/v1", &["XAI_API_KEY"], "grok-4"),
    chat(
        "sambanova",
        "https://api.sambanova.ai/v1",
        &["SAMBANOVA_API_KEY"],
        "Meta-Llama-3.3-70B-Instruct",
    ),
    ProviderPreset {
        retry: RetryPolicy::CEREBRAS,
        ..chat(
            "cerebras",
            "https://api.cerebras.ai/v1",
            &["CEREBRAS_API_KEY"],
            "zai-glm-4.7",
        )
    },
    chat(
        "groq",
        "https://api.groq.com/openai/v1",
        &["GROQ_API_KEY"],
        "moonshotai/kimi-k2-instruct-0905",
    ),
    chat(
        "baseten",
        "https://inference.baseten.co/v1",
        &["BASETEN_API_KEY"],
        "zai-org/GLM-4.6",
    ),
    chat(
        "huawei-cloud-maas",
        "https://api.modelarts-maas.com/v1",
        &["HUAWEI_CLOUD_MAAS_API_KEY"],
        "DeepSeek-V3",
    ),
    chat(
        "vercel-ai-gateway",
        "https://ai-gateway.vercel.sh/v1",
        &["AI_GATEWAY_API_KEY"],
        "anthropic/claude-sonnet-5",
    ),
    chat(
        "zai",
        "https://api.z.ai/api/paas/v4",
        &["ZAI_API_KEY"],
        "glm-5.1",
    ),
    chat(
        "nousResearch",
        "https://inference-api.nousresearch.com/v1",
        &["NOUS_API_KEY"],
        "Hermes-4-405B",
    ),
    chat(
        "wandb",
        "https://api.inference.wandb.ai/v1",
        &["WANDB_API_KEY"],
        "meta-llama/Llama-3.3-70B-Instruct",
    ),
    chat(
        "hicap",
        "https://api.hicap.ai/v1",
        &["HICAP_API_KEY"],
        "gpt-4.1",
    ),
    // Local servers: no key needed.
    ProviderPreset {
        key_required: false,
        retry: RetryPolicy::LOCAL_SERVER,
        ..chat(
            "lmstudio",
            "http://127.0.0.1:1234/v1",
            &["LM_STUDIO_API_KEY"],
            "openai/gpt-oss-20b",
        )
    },
    // Ollama's native `/api/chat`, which takes `num_ctx`.
    ProviderPreset {
        family: WireFamily::Ollama,
        key_required: false,
        retry: RetryPolicy::LOCAL_SERVER,
        ..chat(
            "ollama",
            "http://127.0.0.1:11434",
            &["OLLAMA_API_KEY"],
            "llama3.2",
        )
    },
    ProviderPreset {
        family: WireFamily::Gemini,
        any_model_id: false,
        retry: RetryPolicy::GEMINI,
        ..chat(
            "gemini",
            "https://generativelanguage.googleapis.com",
            &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
            "gemini-3.1-pro-preview",
        )
    },
    // Vertex AI: Google credentials and no key variable; the base URL follows the region.
    ProviderPreset {
        id: "vertex",
        family: WireFamily::Vertex,
        dialect: ChatDialect::Generic,
        base_url: "https://aiplatform.googleapis.com",
        api_key_env: &[],
        key_required: false,
        default_model: "gemini-3-pro-preview",
        any_model_id: true,
        retry: RetryPolicy::STANDARD,
    },
    // Bedrock: the AWS credential chain or a Bedrock API key; any model id or ARN.
    ProviderPreset {
        id: "bedrock",
        family: WireFamily::Bedrock,
        dialect: ChatDialect::Generic,
        base_url: "https://bedrock-runtime.us-east-1.amazonaws.com",
        api_key_env: &["AWS_BEARER_TOKEN_BEDROCK"],
        key_required: false,
        default_model: "anthropic.claude-sonnet-5",
        any_model_id: true,
        retry: RetryPolicy::STANDARD,
    }, // The providers whose wire, sign-in or transport is their own.
    ProviderPreset {
        id: "aihubmix",
        family: WireFamily::Aihubmix,
        dialect: ChatDialect::Generic,
        base_url: "https://aihubmix.com",
        api_key_env: &["AIHUBMIX_API_KEY"],
        key_required: true,
        default_model: "gpt-4o-mini",
        any_model_id: true,
        retry: RetryPolicy::STANDARD,
    },
    ProviderPreset {
        id: "asksage",
        family: WireFamily::AskSage,
        dialect: ChatDialect::Generic,
        base_url: "https://api.asksage.ai/server",
        api_key_env: &["ASKSAGE_API_KEY"],
        key_required: true,
        default_model: "claude-4-sonnet",
        any_model_id: true,
        retry: RetryPolicy::STANDARD,
    },
    // Dify Cloud's service API; a self-hosted Dify app sets its own base URL.
    ProviderPreset {
        id: "dify",
        family: WireFamily::Dify,
        dialect: ChatDialect::Generic,
        base_url: "https://api.dify.ai/v1",
        api_key_env: &["DIFY_API_KEY"],
        key_required: true,
        default_model: "dify-workflow",
        any_model_id: true,
        retry: RetryPolicy::STANDARD,
    },
    // The key is SAP AI Core's service key JSON, from which the base URL comes.
    ProviderPreset {
        id: "sapaicore",
        family: WireFamily::SapAiCore,
        dialect: ChatDialect::Generic,
        base_url: "https://{AI_API_URL of AICORE_SERVICE_KEY}",
        api_key_env: &["AICORE_SERVICE_KEY"],
        key_required: true,
        default_model: "anthropic--claude-3.5-sonnet",
        any_model_id: true,
        retry: RetryPolicy::STANDARD,
    },
    // The Qwen CLI's OAuth file; the base URL follows its `resource_url` when it names one.
    ProviderPreset {
        id: "qwen-code",
        family: WireFamily::QwenCode,
        dialect: ChatDialect::Generic,
        base_url: "https://dashscope.aliyuncs.com/compatible-mode/v1",
        api_key_env: &[],
        key_required: false,
        default_model: "qwen3-coder-plus",
        any_model_id: true,
        retry: RetryPolicy::STANDARD,
    },
    // The Codex CLI's ChatGPT sign-in in `auth.json`, no key variable.
    ProviderPreset {
        id: "openai-codex",
        family: WireFamily::OpenAiCodex,
        dialect: ChatDialect::Generic,
        base_url: "https://chatgpt.com/backend-api/codex",
        api_key_env: &[],
        key_required: false,
        default_model: "gpt-5.3-codex",
        any_model_id: true,
        retry: RetryPolicy::STANDARD,
    },
    // No URL: the `claude` CLI talks to Anthropic with its own sign-in.
    ProviderPreset {
        id: "claude-code",
        family: WireFamily::ClaudeCode,
        dialect: ChatDialect::Generic,
        base_url: "",
        api_key_env: &[],
        key_required: false,
        default_model: "claude-sonnet-5",
        any_model_id: true,
        retry: RetryPolicy::CLAUDE_CODE,
    },
    unavailable(
        "cline",
        "provider `cline` needs a Cline account, which only the Cline extension signs in to; choose another provider (`openrouter` serves the same models with an OpenRouter key)",
    ),
    unavailable(
        "cline-pass",
        "provider `cline-pass` needs a Cline account with ClinePass, which only the Cline extension signs in to; choose another provider",
    ),
    unavailable(
        "vscode-lm",
        "provider `vscode-lm` uses the language models of a running VS Code (its Language Model API), which a terminal program cannot reach; choose another provider",
    ),
    unavailable(
        "oca",
        "provider `oca` (Oracle Code Assist) needs an Oracle sign-in that only the Cline extension performs and keeps in the editor's secret storage, with no file or variable a terminal program could use; choose another provider",
    ),
];

/// A preset that refuses with `why`, a clearer answer than the unknown-id fallback.
const fn unavailable(id: &'static str, why: &'static str) -> ProviderPreset {
    ProviderPreset {
        id,
        family: WireFamily::Unavailable(why),
        dialect: ChatDialect::Generic,
        base_url: "",
        api_key_env: &[],
        key_required: false,
        default_model: "",
        any_model_id: true,
        retry: RetryPolicy::STANDARD,
    }
}

/// The preset for `id`, if Switchyard knows it.
pub fn preset(id: &str) -> Option<&'static ProviderPreset> {
    PRESETS.iter().find(|p| p.id == id)
}

/// Secret variables read for Bedrock besides the key variables: the AWS chain's static credentials.
pub const AWS_SECRET_VARS: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
];

/// Non-secret variables read for Bedrock and Vertex: regions, profile, project, credentials file.
pub const CLOUD_SETTING_VARS: &[&str] = &[
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_PROJECT",
    "GCLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "CLOUD_ML_REGION",
];

/// Every secret variable a configuration reads for the presets, once per preset naming it.
pub(crate) fn secret_variables() -> impl Iterator<Item = &'static str> {
    PRESETS
        .iter()
        .flat_map(|p| p.api_key_env.iter().copied())
        .chain(AWS_SECRET_VARS.iter().copied())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn ids_are_unique_and_complete() {
        let spec_ids = [
            "anthropic",
            "openrouter",
            "bedrock",
            "vertex",
            "openai",
            "openai-native",
            "ollama",
            "lmstudio",
            "gemini",
            "deepseek",
            "requesty",
            "fireworks",
            "together",
            "qwen",
            "doubao",
            "mistral",
            "litellm",
            "moonshot",
            "huggingface",
            "nebius",
            "xai",
            "sambanova",
            "cerebras",
            "groq",
            "baseten",
            "huawei-cloud-maas",
            "vercel-ai-gateway",
            "zai",
            "minimax",
            "nousResearch",
            "wandb",
            "hicap",
        ];
        for id in spec_ids {
            assert!(preset(id).is_some(), "{id} missing");
        }
        // Issue 11 item 4: the reference's other ids, usable or a clear sentence.
        let own = [
            "aihubmix",
            "asksage",
            "dify",
            "sapaicore",
            "qwen-code",
            "openai-codex",
            "claude-code",
        ];
        for id in own {
            let p = preset(id).unwrap_or_else(|| panic!("{id} missing"));
            assert!(!matches!(p.family, WireFamily::Unavailable(_)), "{id}");
        }
        for id in ["cline", "cline-pass", "vscode-lm", "oca"] {
            let p = preset(id).unwrap_or_else(|| panic!("{id} missing"));
            let WireFamily::Unavailable(why) = p.family else {
                panic!("{id} should be unavailable");
            };
            assert!(why.starts_with(&format!("provider `{id}`")), "{why}");
            assert!(why.contains("choose another provider"), "{why}");
        }
        let mut ids: Vec<_> = PRESETS.iter().map(|p| p.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), PRESETS.len());
        for p in PRESETS {
            assert!(!p.base_url.ends_with('/'), "{}", p.id);
            match p.family {
                // No URL, no key, no model: one sentence.
                WireFamily::Unavailable(_) => continue,
                // A child process, not a URL.
                WireFamily::ClaudeCode => assert!(p.base_url.is_empty()),
                _ => assert!(p.base_url.starts_with("http"), "{}", p.id),
            }
            assert!(!p.default_model.is_empty(), "{}", p.id);
            // Sign-ins from the tools' own files or credential chains, no key variable.
            let signed_in = matches!(
                p.family,
                WireFamily::Vertex
                    | WireFamily::QwenCode
                    | WireFamily::OpenAiCodex
                    | WireFamily::ClaudeCode
            );
            assert_eq!(p.api_key_env.is_empty(), signed_in, "{}", p.id);
        }
    }

    #[test]
    fn policies_per_provider() {
        let policy = |id: &str| preset(id).unwrap().retry;
        let d = policy("anthropic");
        assert_eq!(d, RetryPolicy::default());
        assert_eq!(
            (
                d.max_attempts,
                d.base_delay,
                d.max_delay,
                d.retry_connection_errors
            ),
            (3, Duration::from_secs(1), Duration::from_secs(10), false)
        );
        let g = policy("gemini");
        assert_eq!(
            (g.max_attempts, g.base_delay, g.max_delay),
            (4, Duration::from_secs(2), Duration::from_secs(15))
        );
        let c = policy("cerebras");
        assert_eq!(
            (c.max_attempts, c.base_delay, c.max_delay),
            (6, Duration::from_secs(5), Duration::from_secs(60))
        );
        assert!(policy("ollama").retry_connection_errors);
        assert!(policy("lmstudio").retry_connection_errors);
        assert!(!policy("openai").retry_connection_errors);
        assert_eq!(policy("claude-code"), RetryPolicy::GEMINI);
        // Every other provider has the standard policy.
        for p in PRESETS {
            if !["gemini", "cerebras", "ollama", "lmstudio", "claude-code"].contains(&p.id) {
                assert_eq!(p.retry, RetryPolicy::STANDARD, "{}", p.id);
            }
        }
    }
}
