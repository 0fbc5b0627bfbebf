//! `switchyard models [--provider ID]`: providers and their model tables.

use std::process::ExitCode;

use switchyard_api::model::{DEFAULT_CONTEXT_WINDOW, model_table};
use switchyard_api::providers::presets::{PRESETS, ProviderPreset, WireFamily, preset};

/// Prints every provider (or one) with its family, endpoint, key variable and models.
pub fn run(provider: Option<&str>) -> ExitCode {
    let presets: Vec<&ProviderPreset> = match provider {
        Some(id) => match preset(id) {
            Some(p) => vec![p],
            None => {
                let ids: Vec<&str> = PRESETS.iter().map(|p| p.id).collect();
                eprintln!(
                    "error: unknown provider id `{id}`; known ids: {}",
                    ids.join(", ")
                );
                return ExitCode::from(2);
            }
        },
        None => PRESETS.iter().collect(),
    };
    for (i, p) in presets.iter().enumerate() {
        if i > 0 {
            say!();
        }
        print_provider(p);
    }
    ExitCode::SUCCESS
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn print_provider(p: &ProviderPreset) {
    let family = match p.family {
        WireFamily::Anthropic => "Anthropic Messages".to_owned(),
        // Models whose table says `api_format = "responses"` (GPT-5) use the Responses API.
        WireFamily::OpenAiChat if p.id == "openai-native" => {
            "OpenAI Chat Completions, or Responses for models marked so".to_owned()
        }
        WireFamily::OpenAiChat => "OpenAI Chat Completions".to_owned(),
        WireFamily::Ollama => "Ollama /api/chat".to_owned(),
        WireFamily::Gemini => "Gemini streamGenerateContent".to_owned(),
        WireFamily::Bedrock => "Bedrock ConverseStream (SigV4)".to_owned(),
        WireFamily::Vertex => "Vertex AI (Gemini and Claude)".to_owned(),
        WireFamily::Aihubmix => {
            "Anthropic Messages, Gemini, Responses or Chat Completions by model id".to_owned()
        }
        WireFamily::AskSage => "AskSage /query (one JSON answer)".to_owned(),
        WireFamily::Dify => "Dify chat-messages (SSE)".to_owned(),
        WireFamily::SapAiCore => "SAP AI Core deployments (OAuth client credentials)".to_owned(),
        WireFamily::QwenCode => "OpenAI Chat Completions (Qwen CLI sign-in)".to_owned(),
        WireFamily::OpenAiCodex => "OpenAI Responses at ChatGPT (Codex CLI sign-in)".to_owned(),
        WireFamily::ClaudeCode => "the `claude` CLI (stream-json)".to_owned(),
        WireFamily::Unavailable(why) => {
            say!("{} — unavailable: {why}", p.id);
            return;
        }
        WireFamily::NotYetSupported(f) => {
            say!("{} — {f}: not supported by this build yet", p.id);
            return;
        }
    };
    let key = match p.family {
        WireFamily::Bedrock => {
            "AWS credential chain (env, profile, SSO, web identity, instance role) or $AWS_BEARER_TOKEN_BEDROCK".to_owned()
        }
        WireFamily::Vertex => {
            "Google credentials ($GOOGLE_APPLICATION_CREDENTIALS, gcloud, metadata server)".to_owned()
        }
        WireFamily::QwenCode => "the Qwen CLI's sign-in (~/.qwen/oauth_creds.json)".to_owned(),
        WireFamily::OpenAiCodex => "the Codex CLI's ChatGPT sign-in (~/.codex/auth.json)".to_owned(),
        WireFamily::ClaudeCode => "the `claude` CLI's own sign-in".to_owned(),
        WireFamily::SapAiCore => "service key $AICORE_SERVICE_KEY".to_owned(),
        _ if p.key_required => format!("key ${}", p.api_key_env.join(" or $")),
        _ => "no key needed".to_owned(),
    };
    let base_url = match p.family {
        WireFamily::Bedrock => "https://bedrock-runtime.{region}.amazonaws.com",
        WireFamily::Vertex => "https://{region}-aiplatform.googleapis.com",
        WireFamily::ClaudeCode => "no URL",
        WireFamily::SapAiCore => "AI_API_URL of the service key",
        _ => p.base_url,
    };
    say!("{} — {family} · {base_url} · {key}", p.id);
    match model_table(p.id) {
        Some(table) => {
            let width = table
                .models
                .keys()
                .map(|id| id.len())
                .max()
                .unwrap_or(0)
                .max(34);
            say!(
                "  {:<width$} {:>10} {:>9} {:>8} {:>8} {:>8} {:>8}",
                "MODEL (USD per million tokens)",
                "CONTEXT",
                "MAX OUT",
                "IN",
                "OUT",
                "CACHE W",
                "CACHE R"
            );
            for (id, m) in &table.models {
                let mark = if *id == table.default { '*' } else { ' ' };
                say!(
                    "{mark} {:<width$} {:>10} {:>9} {:>8.3} {:>8.3} {:>8.3} {:>8.3}",
                    id,
                    thousands(m.context_window),
                    thousands(m.max_tokens),
                    m.input_price,
                    m.output_price,
                    m.cache_writes_price,
                    m.cache_reads_price
                );
            }
            if p.any_model_id {
                say!(
                    "  (* default; any other model id is accepted with a {} context assumed)",
                    thousands(DEFAULT_CONTEXT_WINDOW)
                );
            } else {
                say!("  (* default; an unknown model id falls back to the default)");
            }
        }
        None => say!(
            "  accepts any model id; default `{}` ({} context assumed, prices unknown)",
            p.default_model,
            thousands(DEFAULT_CONTEXT_WINDOW)
        ),
    }
}
