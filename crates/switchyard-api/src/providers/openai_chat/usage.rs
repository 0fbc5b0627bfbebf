//! The usage and cost of a Chat Completions `usage` object.
//! Spec: R1.3, R9.2.

use serde_json::Value;

use crate::providers::presets::ChatDialect;
use crate::stream::Usage;

/// The usage of one `usage` object. `prompt_tokens` includes the cache reads and writes, whose
/// fields vary by provider; DeepSeek's misses count as cache writes, as the reference's table
/// prices them, so its input comes to 0.
pub(super) fn usage(dialect: ChatDialect, u: &Value) -> Usage {
    // A count sent as a negative number or not a number reads as absent.
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
    // xAI counts reasoning outside `completion_tokens`: prompt + completion + reasoning = total.
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

/// The cost a gateway such as OpenRouter reports: `usage.cost`, plus the upstream cost when the
/// request ran on the user's own provider key, where `cost` is only the gateway's fee. Without
/// `is_byok` the upstream cost is added only when it exceeds `cost`: a request billed through the
/// gateway already includes it, and the reference's adding it always doubles the bill.
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
