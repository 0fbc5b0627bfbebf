//! Prompt caching through the gateway (issue 43 item 3, SPEC R14.2b): a ten-turn session from
//! each client dialect to each provider family, against testkit upstreams that play the
//! provider's prompt cache. An Anthropic upstream reads its cache only at the breakpoints that
//! arrive; an OpenAI upstream only under the `prompt_cache_key` that arrives. Each session's
//! cache reads, as the client reads them from its own dialect's usage, are compared with the
//! same session sent straight to the upstream in its own dialect. `CACHE_TABLE=1` prints the
//! table kept in bench/README.md.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use serde_json::{Value, json};
use switchyard_testkit::{AgentTurn, AgentTurnRequest, AgentUpstream, UpstreamDialect};

use common::{KEY, route, start};

const TURNS: usize = 10;

/// The client dialects a session is sent in.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Client {
    Chat,
    Responses,
    Messages,
    Gemini,
}

fn system() -> String {
    "You are a careful coding agent. Follow the repository's conventions. ".repeat(40)
}

fn tool_schema() -> Value {
    json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
}

fn user_text(turn: usize) -> String {
    format!("Turn {turn}: read src/file{turn}.rs and tell me what it does. ").repeat(6)
}

fn answer_text(turn: usize) -> String {
    format!("File {turn} defines a parser for the configuration. ").repeat(4)
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// Turn `n` (1-based) of the session in `client`'s dialect, with the hints its clients send:
/// Claude Code's breakpoints (tools, system, last user block), an OpenRouter-style Chat
/// client's `cache_control` on the system and last user parts with a `prompt_cache_key`,
/// Codex's `prompt_cache_key`; Gemini CLI sends none.
fn body(client: Client, model: &str, n: usize) -> Value {
    let mut turns: Vec<(&str, String)> = Vec::new();
    for k in 1..=n {
        turns.push(("user", user_text(k)));
        if k < n {
            turns.push(("assistant", answer_text(k)));
        }
    }
    let last = turns.len() - 1;
    match client {
        Client::Messages => {
            let messages: Vec<Value> = (turns.iter().enumerate())
                .map(|(i, (role, text))| {
                    let mut block = json!({"type": "text", "text": text});
                    if i == last {
                        block["cache_control"] = ephemeral();
                    }
                    json!({"role": role, "content": [block]})
                })
                .collect();
            json!({"model": model, "max_tokens": 512, "messages": messages,
                   "system": [{"type": "text", "text": system(), "cache_control": ephemeral()}],
                   "tools": [{"name": "read_file", "description": "Reads a file.",
                              "input_schema": tool_schema(), "cache_control": ephemeral()}]})
        }
        Client::Chat => {
            let mut messages = vec![json!({"role": "system", "content":
                [{"type": "text", "text": system(), "cache_control": ephemeral()}]})];
            messages.extend(turns.iter().enumerate().map(|(i, (role, text))| {
                if i == last {
                    json!({"role": role, "content":
                        [{"type": "text", "text": text, "cache_control": ephemeral()}]})
                } else {
                    json!({"role": role, "content": text})
                }
            }));
            json!({"model": model, "messages": messages, "prompt_cache_key": "session-1",
                   "tools": [{"type": "function", "function": {"name": "read_file",
                       "description": "Reads a file.", "parameters": tool_schema()}}]})
        }
        Client::Responses => {
            let input: Vec<Value> = (turns.iter())
                .map(|(role, text)| {
                    let kind = if *role == "user" {
                        "input_text"
                    } else {
                        "output_text"
                    };
                    json!({"type": "message", "role": role,
                           "content": [{"type": kind, "text": text}]})
                })
                .collect();
            json!({"model": model, "instructions": system(), "input": input, "store": false,
                   "prompt_cache_key": "session-1",
                   "tools": [{"type": "function", "name": "read_file",
                              "description": "Reads a file.", "parameters": tool_schema()}]})
        }
        Client::Gemini => {
            let contents: Vec<Value> = (turns.iter())
                .map(|(role, text)| {
                    let role = if *role == "user" { "user" } else { "model" };
                    json!({"role": role, "parts": [{"text": text}]})
                })
                .collect();
            json!({"systemInstruction": {"parts": [{"text": system()}]}, "contents": contents,
                   "tools": [{"functionDeclarations": [{"name": "read_file",
                       "description": "Reads a file.", "parameters": tool_schema()}]}]})
        }
    }
}

/// POSTs one turn to `base` in `client`'s dialect; its (input tokens, cache reads) as the
/// client reads them.
async fn send(base: &str, client: Client, model: &str, n: usize) -> (u64, u64) {
    let path = match client {
        Client::Chat => "/v1/chat/completions".to_owned(),
        Client::Responses => "/v1/responses".to_owned(),
        Client::Messages => "/v1/messages".to_owned(),
        Client::Gemini => format!("/v1beta/models/{model}:generateContent"),
    };
    let response = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .header("authorization", format!("Bearer {KEY}"))
        .header("x-api-key", KEY)
        .header("anthropic-version", "2023-06-01")
        .json(&body(client, model, n))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    assert_eq!(status, 200, "{client:?} turn {n}: {text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let u = |p: &str| v.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    match client {
        Client::Chat => (
            u("/usage/prompt_tokens"),
            u("/usage/prompt_tokens_details/cached_tokens"),
        ),
        Client::Responses => (
            u("/usage/input_tokens"),
            u("/usage/input_tokens_details/cached_tokens"),
        ),
        Client::Messages => {
            let read = u("/usage/cache_read_input_tokens");
            let total = u("/usage/input_tokens") + read + u("/usage/cache_creation_input_tokens");
            (total, read)
        }
        Client::Gemini => (
            u("/usageMetadata/promptTokenCount"),
            u("/usageMetadata/cachedContentTokenCount"),
        ),
    }
}

fn answer(_: &AgentTurnRequest) -> AgentTurn {
    AgentTurn::text("Noted.")
}

/// The provider families a session is sent to: the route's provider and model, the upstream's
/// dialect, and the client dialect that speaks to it directly.
const FAMILIES: [(&str, &str, &str, UpstreamDialect, Client); 4] = [
    (
        "claude",
        "anthropic",
        "claude-sonnet-4-5",
        UpstreamDialect::Messages,
        Client::Messages,
    ),
    (
        "gpt",
        "openai-native",
        "gpt-4o",
        UpstreamDialect::ChatCompletions,
        Client::Chat,
    ),
    (
        "gpt-responses",
        "openai-native",
        "gpt-5.4",
        UpstreamDialect::Responses,
        Client::Responses,
    ),
    (
        "or-claude",
        "openrouter",
        "anthropic/claude-sonnet-4.5",
        UpstreamDialect::ChatCompletions,
        Client::Chat,
    ),
];

const CLIENTS: [Client; 4] = [
    Client::Chat,
    Client::Responses,
    Client::Messages,
    Client::Gemini,
];

/// One session's totals: input tokens and cache reads over its ten turns, and the turns after
/// the first that read nothing.
#[derive(Debug, Clone, Copy)]
struct Session {
    input: u64,
    read: u64,
    cold_turns: usize,
}

impl Session {
    fn share(&self) -> f64 {
        self.read as f64 / self.input.max(1) as f64
    }
}

async fn session(base: &str, client: Client, model: &str) -> Session {
    let mut s = Session {
        input: 0,
        read: 0,
        cold_turns: 0,
    };
    for n in 1..=TURNS {
        let (input, read) = send(base, client, model, n).await;
        s.input += input;
        s.read += read;
        if n > 1 && read == 0 {
            s.cold_turns += 1;
        }
    }
    s
}

/// The session straight to a fresh caching upstream of `dialect`, in its own dialect.
async fn direct(dialect: UpstreamDialect, client: Client, model: &str) -> Session {
    let upstream = AgentUpstream::start_caching(dialect, answer).await;
    // The upstream checks no key; its path is what the provider's own SDK would call.
    let base = match dialect {
        UpstreamDialect::Messages => upstream.url(),
        _ => upstream.base_url().trim_end_matches("/v1").to_owned(),
    };
    session(&base, client, model).await
}

/// Every dialect pair through the gateway against direct. Pairs whose client sends a hint the
/// provider family has an equivalent for, pairs that fall back to the layer's placement on
/// Anthropic, and clients that send OpenAI no key, which get one derived from their session,
/// read the cache on every turn after the first.
#[tokio::test]
async fn a_ten_turn_session_reads_the_cache_through_every_dialect_pair() {
    let mut rows = Vec::new();
    for (name, provider, model, dialect, native) in FAMILIES {
        let direct = direct(dialect, native, model).await;
        assert_eq!(direct.cold_turns, 0, "{name} direct: {direct:?}");
        for client in CLIENTS {
            let upstream = AgentUpstream::start_caching(dialect, answer).await;
            let gateway = start(&route(name, provider, model, &upstream.base_url())).await;
            let through = session(&gateway.base, client, name).await;
            assert_eq!(through.cold_turns, 0, "{client:?} → {name}: {through:?}");
            assert!(through.share() > 0.5, "{client:?} → {name}: {through:?}");
            rows.push((client, name, through, direct));
        }
    }
    if std::env::var_os("CACHE_TABLE").is_some() {
        println!(
            "| client → route (upstream) | input through | cache reads through | share | share direct |"
        );
        println!("|---|---:|---:|---:|---:|");
        for (client, name, t, d) in rows {
            println!(
                "| {client:?} → {name} | {} | {} | {:.0}% | {:.0}% |",
                t.input,
                t.read,
                100.0 * t.share(),
                100.0 * d.share()
            );
        }
    }
}

/// A Chat client's `cache_control` reaches Anthropic on the parts it marked, and the layer's
/// own marks on the last two user messages do not: the second-to-last user message stays
/// unmarked. Reports: github.com/maximhq/bifrost/issues/2469,
/// github.com/HolmesGPT/holmesgpt/pull/1684.
#[tokio::test]
async fn a_chat_clients_breakpoints_reach_anthropic_where_it_placed_them() {
    let upstream = AgentUpstream::start_caching(UpstreamDialect::Messages, answer).await;
    let gateway = start(&route(
        "claude",
        "anthropic",
        "claude-sonnet-4-5",
        &upstream.base_url(),
    ))
    .await;
    send(&gateway.base, Client::Chat, "claude", 3).await;
    let sent = upstream.exchanges()[0].request.json();
    assert_eq!(sent["system"][0]["cache_control"], ephemeral(), "{sent}");
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 5);
    assert_eq!(
        messages[4]["content"][0]["cache_control"],
        ephemeral(),
        "{sent}"
    );
    assert!(
        messages[2]["content"][0].get("cache_control").is_none(),
        "{sent}"
    );
}

/// A Messages client's breakpoints reach OpenRouter's Claude on the messages it marked, and
/// not the layer's on the second-to-last user message.
#[tokio::test]
async fn a_messages_clients_breakpoints_reach_openrouter_claude_where_placed() {
    let upstream = AgentUpstream::start_caching(UpstreamDialect::ChatCompletions, answer).await;
    let model = "anthropic/claude-sonnet-4.5";
    let gateway = start(&route("or", "openrouter", model, &upstream.base_url())).await;
    send(&gateway.base, Client::Messages, "or", 3).await;
    let sent = upstream.exchanges()[0].request.json();
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(
        messages[0]["content"][0]["cache_control"],
        ephemeral(),
        "{sent}"
    );
    assert_eq!(
        messages[5]["content"][0]["cache_control"],
        ephemeral(),
        "{sent}"
    );
    assert!(!messages[3].to_string().contains("cache_control"), "{sent}");
}

/// `cache_control` is named in `x-switchyard-dropped` where the route's provider has no
/// equivalent (OpenAI), and not where the marks are carried (Anthropic, OpenRouter's Claude).
#[tokio::test]
async fn cache_control_is_named_dropped_only_where_it_cannot_be_carried() {
    for (name, provider, model, dialect, dropped) in [
        (
            "gpt",
            "openai-native",
            "gpt-4o",
            UpstreamDialect::ChatCompletions,
            true,
        ),
        (
            "claude",
            "anthropic",
            "claude-sonnet-4-5",
            UpstreamDialect::Messages,
            false,
        ),
        (
            "or",
            "openrouter",
            "anthropic/claude-sonnet-4.5",
            UpstreamDialect::ChatCompletions,
            false,
        ),
    ] {
        let upstream = AgentUpstream::start_caching(dialect, answer).await;
        let gateway = start(&route(name, provider, model, &upstream.base_url())).await;
        // A client of the other dialect, so the body is translated on every route.
        let (client, b) = if dialect == UpstreamDialect::Messages {
            ("/v1/chat/completions", body(Client::Chat, name, 2))
        } else {
            ("/v1/messages", body(Client::Messages, name, 2))
        };
        let response = reqwest::Client::new()
            .post(format!("{}{client}", gateway.base))
            .header("anthropic-version", "2023-06-01")
            .bearer_auth(KEY)
            .json(&b)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let header = (response.headers().get("x-switchyard-dropped"))
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let named = header.split(',').any(|d| d == "cache_control");
        assert_eq!(named, dropped, "{name}: {header:?}");
    }
}

/// A session's cache reads and writes are counted per route in `/metrics` under
/// `gen_ai_client_token_usage` by `gen_ai_token_type`.
#[tokio::test]
async fn cache_reads_and_writes_are_counted_per_route() {
    let upstream = AgentUpstream::start_caching(UpstreamDialect::Messages, answer).await;
    let gateway = start(&route(
        "claude",
        "anthropic",
        "claude-sonnet-4-5",
        &upstream.base_url(),
    ))
    .await;
    let (mut read, mut total) = (0, 0);
    for n in 1..=3 {
        let (input, r) = send(&gateway.base, Client::Messages, "claude", n).await;
        read += r;
        total += input;
    }
    let text = reqwest::get(format!("{}/metrics", gateway.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let sum = |kind: &str| -> f64 {
        let label = format!("gen_ai_token_type=\"{kind}\"");
        (text.lines())
            .filter(|l| {
                l.starts_with("gen_ai_client_token_usage_sum{")
                    && l.contains("gen_ai_request_model=\"claude\"")
            })
            .filter(|l| l.contains(&label))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
            .sum()
    };
    assert_eq!(sum("cache_read"), read as f64, "{text}");
    assert!(sum("cache_creation") > 0.0, "{text}");
    assert_eq!(sum("input"), total as f64, "{text}");
}

/// `prompt_cache_key` and `prompt_cache_retention` reach OpenAI's Chat and Responses APIs on a
/// translated route. Reports: github.com/BerriAI/litellm/pull/37630,
/// github.com/theopenco/llmgateway/pull/2201.
#[tokio::test]
async fn prompt_cache_key_reaches_openai_when_translated() {
    for (name, model, dialect, client) in [
        (
            "gpt",
            "gpt-4o",
            UpstreamDialect::ChatCompletions,
            Client::Responses,
        ),
        (
            "gpt-responses",
            "gpt-5.4",
            UpstreamDialect::Responses,
            Client::Chat,
        ),
    ] {
        let upstream = AgentUpstream::start_caching(dialect, answer).await;
        let gateway = start(&route(name, "openai-native", model, &upstream.base_url())).await;
        let mut b = body(client, name, 1);
        b["prompt_cache_retention"] = json!("24h");
        let path = if client == Client::Chat {
            "/v1/chat/completions"
        } else {
            "/v1/responses"
        };
        let response = reqwest::Client::new()
            .post(format!("{}{path}", gateway.base))
            .bearer_auth(KEY)
            .json(&b)
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status().as_u16(),
            200,
            "{}",
            response.text().await.unwrap()
        );
        let sent = upstream.exchanges()[0].request.json();
        assert_eq!(sent["prompt_cache_key"], "session-1", "{name}: {sent}");
        assert_eq!(sent["prompt_cache_retention"], "24h", "{name}: {sent}");
    }
}

/// A client that sends OpenAI no `prompt_cache_key` gets one derived from its session's
/// start: the same on every turn of a session, another for another session, and never on a
/// route to a compatible server that might refuse the field.
#[tokio::test]
async fn a_session_without_a_cache_key_gets_one_derived_from_its_start() {
    let upstream = AgentUpstream::start_caching(UpstreamDialect::ChatCompletions, answer).await;
    let gateway = start(&route(
        "gpt",
        "openai-native",
        "gpt-4o",
        &upstream.base_url(),
    ))
    .await;
    for n in 1..=3 {
        send(&gateway.base, Client::Messages, "gpt", n).await;
    }
    let mut other = body(Client::Messages, "gpt", 1);
    other["messages"][0]["content"] = json!("Another session's first message.");
    let response = reqwest::Client::new()
        .post(format!("{}/v1/messages", gateway.base))
        .header("x-api-key", KEY)
        .json(&other)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let keys: Vec<String> = (upstream.exchanges().iter())
        .map(|e| {
            e.request.json()["prompt_cache_key"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(keys.len(), 4);
    assert!(keys[0].starts_with("switchyard-"), "{keys:?}");
    assert!(keys[..3].iter().all(|k| *k == keys[0]), "{keys:?}");
    assert_ne!(keys[3], keys[0], "{keys:?}");

    let compatible = AgentUpstream::start_caching(UpstreamDialect::ChatCompletions, answer).await;
    let gateway = start(&route("local", "openai", "gpt-4o", &compatible.base_url())).await;
    send(&gateway.base, Client::Messages, "local", 1).await;
    let sent = compatible.exchanges()[0].request.json();
    assert!(sent.get("prompt_cache_key").is_none(), "{sent}");
}
