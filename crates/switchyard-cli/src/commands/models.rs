//! `switchyard models`: every provider id, how it is reached, and its catalogue's models, each
//! with where its entry came from.
//! Spec: R2.5.

use std::process::ExitCode;

use serde_json::{Value, json};
use switchyard_api::model::lookup::closest;
use switchyard_api::model::{Catalogue, DEFAULT_CONTEXT_WINDOW, ModelInfo, ModelTable};
use switchyard_api::providers::REGIONAL_ENDPOINTS;
use switchyard_api::providers::presets::{PRESETS, ProviderPreset, WireFamily, preset};

use crate::settings;

/// One provider id in one region: its preset, if this build speaks it, and its table.
struct Listing<'a> {
    id: &'a str,
    region: Option<&'a str>,
    preset: Option<&'static ProviderPreset>,
    table: Option<&'a ModelTable>,
}

/// Prints every provider or one, as text or JSON lines; 2 for an unknown id or a bad
/// `models.toml`.
pub fn run(provider: Option<&str>, json: bool) -> ExitCode {
    let catalogue = match settings::user_catalogue() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let catalogue: &Catalogue = catalogue.as_deref().unwrap_or_else(|| Catalogue::builtin());
    let mut ids: Vec<&str> = PRESETS.iter().map(|p| p.id).collect();
    for id in catalogue.providers() {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    if let Some(wanted) = provider {
        if !ids.contains(&wanted) {
            let hint = closest(ids.iter().copied(), wanted)
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            eprintln!(
                "error: unknown provider id `{wanted}`{hint} (known ids: {})",
                ids.join(", ")
            );
            return ExitCode::from(2);
        }
        ids.retain(|id| *id == wanted);
    }
    let listings = listings(catalogue, &ids);
    if json {
        for l in &listings {
            say!("{}", listing_json(l));
        }
        return ExitCode::SUCCESS;
    }
    for (i, l) in listings.iter().enumerate() {
        if i > 0 {
            say!();
        }
        print_listing(l);
    }
    if provider.is_none() {
        let models: usize = listings
            .iter()
            .filter_map(|l| l.table)
            .map(|t| t.models.len())
            .sum();
        let usable = ids
            .iter()
            .filter(|id| preset(id).is_some_and(usable))
            .count();
        say!();
        say!(
            "{models} models across {} provider ids ({usable} usable from this build){}",
            ids.len(),
            catalogue
                .user_file()
                .map(|p| format!("; your catalogue: {}", p.display()))
                .unwrap_or_default()
        );
    }
    ExitCode::SUCCESS
}

/// A provider's listings: one per region for providers with regional tables, else one.
fn listings<'a>(catalogue: &'a Catalogue, ids: &[&'a str]) -> Vec<Listing<'a>> {
    let mut out = Vec::new();
    for &id in ids {
        let mut regions = catalogue.regions(id);
        // The default region first, as REGIONAL_ENDPOINTS orders them.
        let order = regions_of(id);
        regions.sort_by_key(|r| order.iter().position(|o| o == r));
        let preset = preset(id);
        if regions.is_empty() {
            out.push(Listing {
                id,
                region: None,
                preset,
                table: catalogue.table(id, None),
            });
        } else {
            for region in regions {
                out.push(Listing {
                    id,
                    region: Some(region),
                    preset,
                    table: catalogue.table(id, Some(region)),
                });
            }
        }
    }
    out
}

fn family(p: &ProviderPreset) -> String {
    match p.family {
        WireFamily::Anthropic => "Anthropic Messages".to_owned(),
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
        WireFamily::Unavailable(why) => format!("unavailable: {why}"),
        WireFamily::NotYetSupported(f) => format!("{f} (not supported by this build yet)"),
    }
}

fn credentials(p: &ProviderPreset) -> String {
    match p.family {
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
        WireFamily::Unavailable(_) => "not usable from a terminal".to_owned(),
        _ if p.key_required => format!("key ${}", p.api_key_env.join(" or $")),
        _ => "no key needed".to_owned(),
    }
}

fn base_url(l: &Listing<'_>, p: &ProviderPreset) -> String {
    let regional = REGIONAL_ENDPOINTS
        .iter()
        .find(|(id, r, _)| *id == l.id && l.region.is_none_or(|want| want == *r))
        .map(|(_, _, url)| *url);
    match (p.family, regional) {
        (WireFamily::Bedrock, _) => "https://bedrock-runtime.{region}.amazonaws.com".to_owned(),
        (WireFamily::Vertex, _) => "https://{region}-aiplatform.googleapis.com".to_owned(),
        (WireFamily::ClaudeCode, _) => "no URL".to_owned(),
        (WireFamily::SapAiCore, _) => "AI_API_URL of the service key".to_owned(),
        (_, Some(url)) => url.to_owned(),
        _ => p.base_url.to_owned(),
    }
}

fn default_model<'a>(l: &'a Listing<'_>) -> Option<&'a str> {
    l.table
        .and_then(|t| t.default.as_deref())
        .or(l.preset.map(|p| p.default_model))
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

/// A price, or `unknown` for an input or output price and `none` for a cache price billed at $0.
fn price(p: Option<f64>, unknown: &str) -> String {
    p.map_or_else(|| unknown.to_owned(), |p| format!("{p:.3}"))
}

/// The provider's regions, its default first.
fn regions_of(id: &str) -> Vec<&'static str> {
    REGIONAL_ENDPOINTS
        .iter()
        .filter(|(p, _, _)| *p == id)
        .map(|(_, r, _)| *r)
        .collect()
}

fn print_listing(l: &Listing<'_>) {
    print_heading(l);
    let default = default_model(l).filter(|d| !d.is_empty());
    let Some(table) = l.table.filter(|t| !t.models.is_empty()) else {
        if l.preset
            .is_some_and(|p| matches!(p.family, WireFamily::Unavailable(_)))
        {
            return;
        }
        say!(
            "  accepts any model id; default `{}` ({} context assumed, prices unknown)",
            default.unwrap_or("none"),
            thousands(DEFAULT_CONTEXT_WINDOW)
        );
        return;
    };
    print_models(table, default);
}

/// The provider's id and region, with its family, base URL and credentials.
fn print_heading(l: &Listing<'_>) {
    let name = listing_name(l);
    match l.preset {
        // Unusable: the reason says it all.
        Some(
            p @ ProviderPreset {
                family: WireFamily::Unavailable(_),
                ..
            },
        ) => say!("{name} — {}", family(p)),
        Some(p) => say!(
            "{name} — {} · {} · {}",
            family(p),
            base_url(l, p),
            credentials(p)
        ),
        None => say!(
            "{name} — the reference's provider; not usable from this build of Switchyard (its models are listed for reference)"
        ),
    }
}

fn listing_name(l: &Listing<'_>) -> String {
    let regions = regions_of(l.id);
    match (l.region, regions.first()) {
        (Some(r), Some(first)) if r == *first => format!("{} (region {r}, the default)", l.id),
        (Some(r), _) => format!(
            "{} (region {r}: [providers.{}] region = \"{r}\")",
            l.id, l.id
        ),
        (None, Some(first)) => format!(
            "{} (region {first} by default; {})",
            l.id,
            regions[1..]
                .iter()
                .map(|r| format!("[providers.{}] region = \"{r}\"", l.id))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        (None, None) => l.id.to_owned(),
    }
}

/// The table's models: context, max output, prices and source, the default marked `*`.
fn print_models(table: &ModelTable, default: Option<&str>) {
    let width = table
        .models
        .keys()
        .map(String::len)
        .max()
        .unwrap_or(0)
        .max(30);
    say!(
        "  {:<width$} {:>10} {:>9} {:>8} {:>8} {:>8} {:>8}  SOURCE",
        "MODEL (USD per million tokens)",
        "CONTEXT",
        "MAX OUT",
        "IN",
        "OUT",
        "CACHE W",
        "CACHE R"
    );
    for (id, e) in &table.models {
        let m = &e.info;
        let mark = if Some(id.as_str()) == default {
            '*'
        } else {
            ' '
        };
        let max_out = if m.max_tokens > 0 {
            thousands(m.max_tokens)
        } else {
            "?".to_owned()
        };
        say!(
            "{mark} {:<width$} {:>10} {:>9} {:>8} {:>8} {:>8} {:>8}  {}",
            id,
            thousands(m.context_window),
            max_out,
            price(m.input_price, "?"),
            price(m.output_price, "?"),
            price(m.cache_writes_price, "-"),
            price(m.cache_reads_price, "-"),
            e.source
        );
    }
    say!(
        "  (* default; ? unknown price; - no cache price; another model id is sent as typed: a dated or suffixed variant takes its base's info, any other a {}-token context and an unknown cost)",
        thousands(DEFAULT_CONTEXT_WINDOW)
    );
}

/// One model as JSON: its id, default flag, source and every `ModelInfo` field.
fn model_json(id: &str, info: &ModelInfo, source: Value, default: bool) -> Value {
    let mut v = json!({ "id": id, "default": default, "source": source });
    if let (Value::Object(obj), Ok(Value::Object(fields))) = (&mut v, serde_json::to_value(info)) {
        obj.extend(fields);
    }
    v
}

fn listing_json(l: &Listing<'_>) -> Value {
    let default = default_model(l);
    let models: Vec<Value> = l
        .table
        .map(|t| {
            t.models
                .iter()
                .map(|(id, e)| {
                    let source = serde_json::to_value(&e.source).unwrap_or(Value::Null);
                    model_json(id, &e.info, source, Some(id.as_str()) == default)
                })
                .collect()
        })
        .unwrap_or_default();
    json!({
        "provider": l.id,
        "region": l.region,
        "usable": l.preset.is_some_and(usable),
        "family": l.preset.map(family),
        "base_url": l.preset.map(|p| base_url(l, p)),
        "credentials": l.preset.map(credentials),
        "default_model": default,
        "any_model_id": l.preset.map(|p| p.any_model_id),
        "models": models,
    })
}

/// Whether a provider can be used from a terminal; some are listed only to say why not.
fn usable(preset: &ProviderPreset) -> bool {
    !matches!(preset.family, WireFamily::Unavailable(_))
}
