//! `run_request` driven end to end: handlers from `build_api_handler` against the testkit's
//! mock server replaying `tests/fixtures`, checking the events, their order, the usage and
//! cost, and the assistant message assembled for the history.

use std::time::Duration;

use super::merge_event_runs;
use crate::task::TaskEvent;
use crate::task::request::{RequestOutcome, RequestStatus, run_request};
use serde_json::json;
use switchyard_api::{
    ApiConfiguration, ApiHandler, ContentBlock, ErrorKind, Message, Mode, RequestOptions, Role,
    build_api_handler,
};
use switchyard_testkit::{HttpResponse, MockServer, Reply, Split};
use tokio::time::Instant;

const KEY: &str = "sk-test-core-key-never-shown-0123456789";

/// A handler for `provider` / `model` whose base URL is `base_url`.
fn handler(provider: &str, model: &str, base_url: &str) -> Box<dyn ApiHandler> {
    handler_with(provider, model, base_url, "")
}

/// A handler as [`handler`] makes, with `act` lines added to the configuration (e.g. a
/// thinking budget).
fn handler_with(provider: &str, model: &str, base_url: &str, act: &str) -> Box<dyn ApiHandler> {
    let text = format!(
        "[act]\nprovider = \"{provider}\"\nmodel = \"{model}\"\n{act}\n[providers.\"{provider}\"]\nbase_url = \"{base_url}\"\n"
    );
    let config = ApiConfiguration::from_toml(&text, "test.toml", |_| Some(KEY.to_owned())).unwrap();
    build_api_handler(&config, Mode::Act).unwrap()
}

/// Runs one request through `h` and returns the outcome and every event, in order.
async fn run(h: &dyn ApiHandler) -> (RequestOutcome, Vec<TaskEvent>) {
    let mut events = Vec::new();
    let messages = [Message::user_text("hi")];
    let outcome = {
        let mut on_event = |e: TaskEvent| events.push(e);
        run_request(
            h,
            "You are terse.",
            &messages,
            &[],
            RequestOptions::default(),
            &mut on_event,
        )
        .await
    };
    (outcome, events)
}

/// Serves `reply` and runs one request for `provider` / `model` (`prefix` is appended to the
/// mock's URL, e.g. `/v1`).
async fn run_reply(
    reply: Reply,
    provider: &str,
    model: &str,
    prefix: &str,
) -> (RequestOutcome, Vec<TaskEvent>) {
    let server = MockServer::start(vec![reply]).await;
    let h = handler(provider, model, &format!("{}{prefix}", server.url()));
    let out = run(h.as_ref()).await;
    assert_eq!(server.request_count(), 1);
    out
}

async fn run_fixture(
    name: &str,
    provider: &str,
    model: &str,
    prefix: &str,
) -> (RequestOutcome, Vec<TaskEvent>) {
    run_reply(
        Reply::new(HttpResponse::fixture(name)),
        provider,
        model,
        prefix,
    )
    .await
}

fn text(t: &str) -> TaskEvent {
    TaskEvent::Text { text: t.to_owned() }
}

fn reasoning(t: &str) -> TaskEvent {
    TaskEvent::Reasoning { text: t.to_owned() }
}

fn assert_close(got: Option<f64>, want: f64) {
    let got = got.unwrap_or(f64::NAN);
    assert!((got - want).abs() < 1e-12, "{got} vs {want}");
}

/// The fields of a provider-reported (not estimated) usage event; panics unless `e` is one.
fn usage_of(e: &TaskEvent) -> (u64, u64, u64, u64, Option<f64>) {
    match e {
        TaskEvent::Usage {
            input_tokens,
            output_tokens,
            cache_read_tokens,
            cache_write_tokens,
            cost_usd,
            estimated,
        } => {
            assert!(!estimated, "the provider reported this usage: {e:?}");
            (
                *input_tokens,
                *output_tokens,
                *cache_read_tokens,
                *cache_write_tokens,
                *cost_usd,
            )
        }
        other => panic!("not a usage event: {other:?}"),
    }
}

const SONNET: &str = "claude-sonnet-4-5-20250929";

#[tokio::test]
async fn anthropic_text_events_usage_and_cost() {
    let (out, events) = run_fixture("anthropic_text", "anthropic", SONNET, "").await;
    assert_eq!(out.status, RequestStatus::Completed);
    assert_eq!(events.len(), 4, "{events:?}");
    assert_eq!(
        merge_event_runs(&events[..3]),
        [text(
            "The capital of France is Paris, often called « la Ville Lumière » — the City of Light.\n\nWant more facts?"
        )]
    );
    let want_cost = (21.0 * 3.0 + 27.0 * 15.0 + 248.0 * 3.75 + 2048.0 * 0.3) / 1e6;
    let (i, o, cr, cw, cost) = usage_of(&events[3]);
    assert_eq!((i, o, cr, cw), (21, 27, 2048, 248));
    assert_close(cost, want_cost);
    assert_close(out.cost_usd, want_cost);
    assert_eq!(
        (
            out.usage.input_tokens,
            out.usage.output_tokens,
            out.usage.cache_read_tokens,
            out.usage.cache_write_tokens
        ),
        (21, 27, 2048, 248)
    );
    assert_eq!(
        out.assistant_message,
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text {
                text: "The capital of France is Paris, often called « la Ville Lumière » — the City of Light.\n\nWant more facts?".into()
            }],
        }
    );
    assert!(out.first_token.is_some());
    assert!(out.first_token.unwrap() <= out.duration);
}

#[tokio::test]
async fn every_split_gives_the_same_events() {
    let mut baseline = None;
    for split in [Split::Whole, Split::Every(1), Split::Every(7)] {
        let reply = Reply::new(HttpResponse::fixture("anthropic_thinking")).split(split.clone());
        let (out, events) = run_reply(reply, "anthropic", SONNET, "").await;
        assert_eq!(out.status, RequestStatus::Completed, "{split:?}");
        let got = (events, out.assistant_message);
        match &baseline {
            None => baseline = Some(got),
            Some(b) => assert_eq!(&got, b, "{split:?}"),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn text_is_forwarded_as_it_streams() {
    // Stall 10 s (virtual) after the first text delta: its event must arrive before the stall.
    let fixture = HttpResponse::fixture("anthropic_text");
    let needle = b"event: content_block_delta";
    let first = fixture
        .body
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap();
    let second = first
        + 1
        + fixture.body[first + 1..]
            .windows(needle.len())
            .position(|w| w == needle)
            .unwrap();
    let server = MockServer::start(vec![
        Reply::new(fixture).stall_at(second, Duration::from_secs(10)),
    ])
    .await;
    let h = handler("anthropic", SONNET, &server.url());
    let start = Instant::now();
    let mut stamped: Vec<(Duration, TaskEvent)> = Vec::new();
    let messages = [Message::user_text("hi")];
    let out = {
        let mut on_event = |e: TaskEvent| stamped.push((start.elapsed(), e));
        run_request(
            h.as_ref(),
            "s",
            &messages,
            &[],
            RequestOptions::default(),
            &mut on_event,
        )
        .await
    };
    assert_eq!(out.status, RequestStatus::Completed);
    // The first delta is shown before the stall, all but its last `s`: that could start the
    // tests' configured key (`sk-…`), so the scrubber holds it until the next delta (R10.5).
    assert_eq!(stamped[0].1, text("The capital of France i"));
    assert!(stamped[0].0 < Duration::from_secs(10), "{stamped:?}");
    assert_eq!(
        stamped[1].1,
        text("s Paris, often called « la Ville Lumière »")
    );
    assert!(stamped[1].0 >= Duration::from_secs(10), "{stamped:?}");
    assert!(
        out.first_token.unwrap() < Duration::from_secs(10),
        "{:?}",
        out.first_token
    );
    assert!(
        out.duration >= Duration::from_secs(10),
        "{:?}",
        out.duration
    );
}

#[tokio::test]
async fn anthropic_thinking_assembles_signed_and_redacted_thinking() {
    let (out, events) = run_fixture("anthropic_thinking", "anthropic", SONNET, "").await;
    assert_eq!(out.status, RequestStatus::Completed);
    let thinking = [
        "Let me solve this step by step:\n\n1. First break down 27 * 453",
        "\n2. 453 = 400 + 50 + 3\n3. 27 * 400 = 10800, 27 * 50 = 1350, 27 * 3 = 81",
        "\n4. 10800 + 1350 + 81 = 12231",
    ];
    assert_eq!(events.len(), 6, "{events:?}");
    assert_eq!(
        events[..5],
        [
            reasoning(thinking[0]),
            reasoning(thinking[1]),
            reasoning(thinking[2]),
            text("27 * 453 = **12,231**"),
            text(" (10,800 + 1,350 + 81)."),
        ],
        "no empty reasoning events for the signature or the redacted block"
    );
    let (i, o, cr, cw, cost) = usage_of(&events[5]);
    assert_eq!((i, o, cr, cw), (52, 137, 0, 0));
    assert_close(cost, (52.0 * 3.0 + 137.0 * 15.0) / 1e6);
    assert_eq!(
        out.assistant_message.content,
        vec![
            ContentBlock::Thinking {
                thinking: thinking.concat(),
                signature: "c3ludGhldGljLXRoaW5raW5nLXNpZ25hdHVyZS1mb3ItZml4dHVyZS1hbnRocm9waWNfdGhpbmtpbmctbm90LWEtcmVhbC1zaWduYXR1cmUtMDAwMQ==".into(),
            },
            ContentBlock::RedactedThinking {
                data: "c3ludGhldGljLXJlZGFjdGVkLXRoaW5raW5nLXBheWxvYWQtZm9yLWZpeHR1cmUtbm90LXJlYWwtZW5jcnlwdGVkLWRhdGEtMDAwMi1zeW50aGV0aWMtcmVkYWN0ZWQtdGhpbmtpbmctcGF5bG9hZC1mb3ItZml4dHVyZS1ub3QtcmVhbC1lbmNyeXB0ZWQtZGF0YS0wMDAyLQ==".into(),
            },
            ContentBlock::Text { text: "27 * 453 = **12,231** (10,800 + 1,350 + 81).".into() },
        ]
    );
    assert_eq!(out.assistant_message.role, Role::Assistant);
    assert!(out.first_token.is_some());
}

#[tokio::test]
async fn anthropic_tool_use_reports_the_call_after_the_stream() {
    let (out, events) = run_fixture("anthropic_tool_use", "anthropic", SONNET, "").await;
    assert_eq!(out.status, RequestStatus::Completed);
    let args = "{\"location\": \"San Francisco, CA\", \"unit\": \"fahrenheit\", \"days\": 3}";
    assert_eq!(events.len(), 5, "{events:?}");
    assert_eq!(
        events[..4],
        [
            text("Okay"),
            text(", let"),
            text("'s check the weather for San Francisco, CA:"),
            TaskEvent::ToolCall {
                id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                name: "get_weather".into(),
                arguments: args.into(),
            },
        ]
    );
    let (i, o, cr, cw, cost) = usage_of(&events[4]);
    assert_eq!((i, o, cr, cw), (472, 89, 0, 0));
    assert_close(cost, (472.0 * 3.0 + 89.0 * 15.0) / 1e6);
    assert_eq!(
        out.assistant_message.content,
        vec![
            ContentBlock::Text {
                text: "Okay, let's check the weather for San Francisco, CA:".into()
            },
            ContentBlock::ToolUse {
                id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                name: "get_weather".into(),
                input: json!({"location": "San Francisco, CA", "unit": "fahrenheit", "days": 3}),
                signature: None,
            },
        ]
    );
}

#[tokio::test]
async fn openai_parallel_tool_calls_in_order() {
    let (out, events) = run_fixture("openai_chat_tool_calls", "openai", "gpt-4o", "/v1").await;
    assert_eq!(out.status, RequestStatus::Completed);
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(
        events[..2],
        [
            TaskEvent::ToolCall {
                id: "call_JMW1whyEaYG438VE1OIflxA2".into(),
                name: "GetWeatherArgs".into(),
                arguments: "{\"city\": \"Edinburgh\", \"country\": \"GB\", \"units\": \"c\"}"
                    .into(),
            },
            TaskEvent::ToolCall {
                id: "call_DNYTawLBoN8fj3KN6qU9N1Ou".into(),
                name: "get_stock_price".into(),
                arguments: "{\"ticker\": \"AAPL\", \"exchange\": \"NASDAQ\"}".into(),
            },
        ]
    );
    let (i, o, _, _, _) = usage_of(&events[2]);
    assert_eq!((i, o), (149, 60));
    let [
        ContentBlock::ToolUse { input: a, .. },
        ContentBlock::ToolUse { input: b, .. },
    ] = out.assistant_message.content.as_slice()
    else {
        panic!("{:?}", out.assistant_message)
    };
    assert_eq!(
        *a,
        json!({"city": "Edinburgh", "country": "GB", "units": "c"})
    );
    assert_eq!(*b, json!({"ticker": "AAPL", "exchange": "NASDAQ"}));
    // Only tool calls, no text: that is still content.
    assert!(out.first_token.is_some());
}

#[tokio::test]
async fn openrouter_cost_is_taken_as_reported() {
    let (out, events) = run_fixture(
        "openrouter_stream",
        "openrouter",
        "anthropic/claude-sonnet-4.5",
        "/api/v1",
    )
    .await;
    assert_eq!(out.status, RequestStatus::Completed);
    let usages: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, TaskEvent::Usage { .. }))
        .collect();
    assert_eq!(usages.len(), 1, "{events:?}");
    let (i, o, cr, cw, cost) = usage_of(usages[0]);
    assert_eq!((i, o, cr, cw), (38, 71, 0, 0));
    assert_eq!(cost, Some(0.001179));
    assert_eq!(out.cost_usd, Some(0.001179));
    assert_eq!(
        events.last(),
        Some(usages[0]),
        "usage comes last: {events:?}"
    );
    let texts: String = events
        .iter()
        .filter_map(|e| match e {
            TaskEvent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        texts,
        "Autumn moonlight—\na worm digs silently\ninto the chestnut."
    );
    let ContentBlock::Thinking {
        thinking,
        signature,
    } = &out.assistant_message.content[0]
    else {
        panic!("{:?}", out.assistant_message)
    };
    assert_eq!(thinking, "The user wants a haiku about autumn.");
    assert_eq!(
        signature,
        "c3ludGhldGljLW9wZW5yb3V0ZXItcmVhc29uaW5nLXNpZ25hdHVyZS1maXh0dXJlLTAwMDM="
    );
}

#[tokio::test]
async fn deepseek_cost_prices_misses_as_cache_writes_and_hits_as_reads() {
    let (out, events) =
        run_fixture("deepseek_reasoner", "deepseek", "deepseek-reasoner", "/v1").await;
    assert_eq!(out.status, RequestStatus::Completed);
    assert_eq!(
        events[..5],
        [
            reasoning("We"),
            reasoning(" need to compare 9.11 and 9.8."),
            reasoning(" 9.8 = 9.80 > 9.11."),
            text("9.8"),
            text(" is greater than 9.11."),
        ]
    );
    // prompt_tokens 1100 include 1024 cache hits; the 76 misses count as cache writes, as
    // the reference's DeepSeek table prices them (input $0, misses at the cache-write
    // price). deepseek-reasoner's reference prices: out 2.19, cache writes 0.55, reads 0.14.
    let (i, o, cr, cw, cost) = usage_of(&events[5]);
    assert_eq!((i, o, cr, cw), (0, 58, 1024, 76));
    assert_close(cost, (76.0 * 0.55 + 58.0 * 2.19 + 1024.0 * 0.14) / 1e6);
    assert_eq!(events.len(), 6);
}

#[tokio::test]
async fn midstream_error_keeps_the_partial_text() {
    let (out, events) = run_fixture("anthropic_error_midstream", "anthropic", SONNET, "").await;
    let RequestStatus::Failed(e) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(e.kind, ErrorKind::Overloaded);
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(
        events[..2],
        [text("Here is a summary of the"), text(" attached report:")]
    );
    let TaskEvent::Error {
        kind,
        message,
        status,
    } = &events[2]
    else {
        panic!("{events:?}")
    };
    assert_eq!(kind, "overloaded");
    assert_eq!(status, &None);
    assert!(message.contains("overloaded"), "{message}");
    assert!(!message.contains(KEY));
    // The provider reported no usage before failing (its `message_start` counted 1310 input
    // tokens): no usage event, rather than a 4-bytes-per-token guess of the partial exchange.
    assert!(
        !events.iter().any(|e| matches!(e, TaskEvent::Usage { .. })),
        "{events:?}"
    );
    assert_eq!(
        out.assistant_message.content,
        vec![ContentBlock::Text {
            text: "Here is a summary of the attached report:".into()
        }]
    );
    assert!(out.first_token.is_some());
}

#[tokio::test]
async fn error_before_the_stream_has_no_content_and_no_usage() {
    let (out, events) = run_fixture("openai_insufficient_quota", "openai", "gpt-4o", "/v1").await;
    let RequestStatus::Failed(e) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(e.kind, ErrorKind::QuotaExceeded);
    assert_eq!(e.status, Some(429));
    assert_eq!(events.len(), 1, "{events:?}");
    let TaskEvent::Error { kind, status, .. } = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!((kind.as_str(), *status), ("quota_exceeded", Some(429)));
    assert!(out.assistant_message.content.is_empty());
    assert!(out.first_token.is_none());
    assert_eq!(out.cost_usd, Some(0.0));
}

#[tokio::test]
async fn an_empty_stream_is_an_error() {
    let reply = Reply::new(HttpResponse::sse("data: [DONE]\n\n"));
    let (out, events) = run_reply(reply, "openai", "gpt-4o", "/v1").await;
    let RequestStatus::Failed(e) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(e.message, "the provider returned an empty response");
    assert_eq!(e.provider_id.as_deref(), Some("openai"));
    assert_eq!(e.model_id.as_deref(), Some("gpt-4o"));
    assert_eq!(events.len(), 1, "{events:?}");
    let TaskEvent::Error { message, .. } = &events[0] else {
        panic!("{events:?}")
    };
    assert!(
        message.contains("the provider returned an empty response"),
        "{message}"
    );
    assert!(out.assistant_message.content.is_empty());
    assert!(out.first_token.is_none());
}

#[tokio::test]
async fn a_stream_with_only_usage_is_empty_but_reports_its_usage() {
    let body = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":0,\"total_tokens\":12}}\n\ndata: [DONE]\n\n";
    let (out, events) = run_reply(
        Reply::new(HttpResponse::sse(body)),
        "openai",
        "gpt-4o",
        "/v1",
    )
    .await;
    let RequestStatus::Failed(e) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(e.message, "the provider returned an empty response");
    assert_eq!(events.len(), 2, "{events:?}");
    let (i, o, _, _, _) = usage_of(&events[0]);
    assert_eq!((i, o), (12, 0));
    assert!(matches!(events[1], TaskEvent::Error { .. }), "{events:?}");
    assert!(out.first_token.is_none());
}

/// The cost of the whole pipeline (wire usage → provider normalisation → cost) with every
/// figure worked out by hand from the reference's prices, written here as literals.
#[tokio::test]
async fn costs_as_billed_with_a_thinking_budget_and_reasoning_outside_completion() {
    // gemini-2.5-flash (reference: $0.30 in, $2.50 out, $3.50 out with a thinking budget,
    // $0.075 cache reads). gemini_stream's usage: prompt 1043 of which 1024 cached,
    // candidates 18 + thoughts 137 = 155 output.
    for (act, output_price) in [("", 2.5), ("thinking_budget_tokens = 8192", 3.5)] {
        let server =
            MockServer::start(vec![Reply::new(HttpResponse::fixture("gemini_stream"))]).await;
        let h = handler_with("gemini", "gemini-2.5-flash", &server.url(), act);
        let (out, _) = run(h.as_ref()).await;
        assert_eq!(out.status, RequestStatus::Completed);
        let want = (19.0 * 0.3 + 155.0 * output_price + 1024.0 * 0.075) / 1e6;
        assert_close(out.cost_usd, want);
    }
    // xAI grok-3-mini ($0.30 in, $0.50 out), tests/cases C45: 32 in, 9 completion + 94
    // reasoning outside it = 103 out: 9.6 + 51.5 = 61.1 micro-dollars.
    let (out, _) = run_reply(
        Reply::new(HttpResponse::case("C45")),
        "xai",
        "grok-3-mini",
        "/v1",
    )
    .await;
    assert_close(out.cost_usd, 61.1e-6);
}

#[tokio::test]
async fn a_model_without_prices_has_an_unknown_cost() {
    let (out, events) = run_reply(
        Reply::new(HttpResponse::fixture("openai_chat_text")),
        "openai",
        "my-model",
        "/v1",
    )
    .await;
    assert_eq!(out.status, RequestStatus::Completed);
    assert_eq!(out.cost_usd, None);
    let usage = events
        .iter()
        .find(|e| matches!(e, TaskEvent::Usage { .. }))
        .unwrap();
    let (_, o, _, _, cost) = usage_of(usage);
    assert!(o > 0);
    assert_eq!(cost, None, "unknown, never $0");
    let json = serde_json::to_value(usage).unwrap();
    assert!(json["cost_usd"].is_null(), "{json}");
}
