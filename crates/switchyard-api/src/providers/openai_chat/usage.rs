//! The usage and cost of a Chat Completions `usage` object (SPEC R1.3, R9.2).
//!
//! Usage rule (SPEC R1.3): `prompt_tokens` includes cached tokens, so
//! `input_tokens = max(0, prompt_tokens − cache reads − cache writes)`, where
//! - cache reads are `prompt_tokens_details.cached_tokens` (OpenAI, OpenRouter), else
//!   `cache_read_input_tokens` (Anthropic-style gateways: LiteLLM, Vercel AI Gateway), else
//!   `cached_tokens` (Moonshot's usage, tests/cases C78);
//! - cache writes are `prompt_tokens_details.cache_write_tokens` (OpenRouter, for models that
//!   bill them), else `cache_creation_input_tokens` (Anthropic-style gateways);
//! - DeepSeek: reads are `prompt_cache_hit_tokens`, and the misses (`prompt_cache_miss_tokens`,
//!   else `prompt_tokens − hits`) are reported as cache writes, as the reference does: its
//!   DeepSeek table prices input at $0 and misses as cache writes ("all input is either a
//!   cache hit or miss"), so the input tokens come to 0.
//!
//! `output_tokens` is `completion_tokens`, plus `completion_tokens_details.reasoning_tokens`
//! when the provider counts them outside it (xAI: `total_tokens` = prompt + completion +
//! reasoning, tests/cases C45); `thoughts_tokens` is the reasoning count as sent. The
//! provider's cost is `usage.cost` (plus the upstream cost of a bring-your-own-key request,
//! see `reported_cost`). A count sent as a negative number reads as 0. Usage is yielded once,
//! at the end of the stream (or just before an error), with the latest values: a server
//! that repeats running totals in every chunk is counted once.

use serde_json::Value;

use crate::providers::presets::ChatDialect;
use crate::stream::Usage;

/// The usage of one `usage` object (see the module docs' usage rule).
pub(super) fn usage(dialect: ChatDialect, u: &Value) -> Usage {
    // A count the provider sent as a negative number (or not a number) reads as absent.
    let n = |pointer: &str| u.pointer(pointer).and_then(Value::as_u64);
    let prompt = n("/prompt_tokens").unwrap_or(0);
    let completion = n("/completion_tokens").unwrap_or(0);
    let reasoning = n("/completion_tokens_details/reasoning_tokens");
    let (cache_read, cache_write) = match dialect {
        ChatDialect::DeepSeek => {
            let hit =
                n("/prompt_cache_hit_tokens").or_else(|| n("/prompt_tokens_details/cached_tokens"));
            let miss = n("/prompt_cache_miss_tokens")
                .unwrap_or_else(|| prompt.saturating_sub(hit.unwrap_or(0)));
            (hit, Some(miss))
        }
        _ => (
            n("/prompt_tokens_details/cached_tokens")
                .or_else(|| n("/cache_read_input_tokens"))
                .or_else(|| n("/cached_tokens")),
            n("/prompt_tokens_details/cache_write_tokens")
                .or_else(|| n("/cache_creation_input_tokens")),
        ),
    };
    let cached = cache_read
        .unwrap_or(0)
        .saturating_add(cache_write.unwrap_or(0));
    // xAI counts reasoning outside `completion_tokens` (its total is prompt + completion +
    // reasoning, tests/cases C45); OpenAI inside (total = prompt + completion).
    let reasoning_outside =
        reasoning.is_some_and(|r| r > 0 && n("/total_tokens") == Some(prompt + completion + r));
    Usage {
        input_tokens: prompt.saturating_sub(cached),
        output_tokens: completion
            + if reasoning_outside {
                reasoning.unwrap_or(0)
            } else {
                0
            },
        cache_write_tokens: cache_write,
        cache_read_tokens: cache_read,
        thoughts_tokens: reasoning,
        total_cost_usd: reported_cost(u),
        id: None,
    }
}

/// The cost a gateway reports (OpenRouter, Vercel AI Gateway): `usage.cost`, plus
/// `usage.cost_details.upstream_inference_cost` when the request ran on the user's own
/// provider key (bring-your-own-key), where `cost` is only the gateway's fee. The upstream cost
/// is added when `usage.is_byok` is true, or — without `is_byok` — when it exceeds `cost`: on
/// a request billed through the gateway `cost` already includes the upstream cost, and adding
/// it again doubles the bill (the reference always adds it; see lean-ctx#746,
/// freebuff#1164, Kilo-Org/kilocode#13841).
fn reported_cost(u: &Value) -> Option<f64> {
    let cost = u.get("cost").and_then(Value::as_f64).filter(|c| *c >= 0.0);
    let upstream = u
        .pointer("/cost_details/upstream_inference_cost")
        .and_then(Value::as_f64)
        .filter(|c| *c >= 0.0);
    let byok = match u.get("is_byok").and_then(Value::as_bool) {
        Some(b) => b,
        None => matches!((cost, upstream), (Some(c), Some(up)) if up > c),
    };
    match (cost, upstream) {
        (Some(c), Some(up)) if byok => Some(c + up),
        (None, Some(up)) => Some(up),
        (c, _) => c,
    }
}
