//! Usage accounting and cost (SPEC R9.2).
//!
//! Every provider yields `input_tokens` as the **non-cached** input (SPEC R1.3), so the
//! reference's two rules collapse into one formula on our normalised numbers:
//! `in·p_in + out·p_out + cw·p_cw + cr·p_cr` (prices in USD per million tokens). They differ
//! only in the tier they pick: the Anthropic rule tiers by `in + cw + cr`, the OpenAI rule by
//! the total input, which after normalisation is the same sum.

use switchyard_api::{ModelInfo, Usage};

/// Running totals of one request or task, in tokens and USD.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageTotals {
    /// Non-cached input tokens (SPEC R1.3).
    pub input_tokens: u64,
    /// Output tokens (reasoning included).
    pub output_tokens: u64,
    /// Tokens written to the provider's prompt cache.
    pub cache_write_tokens: u64,
    /// Tokens read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// The provider's own cost, when it reported one (the latest value wins, SPEC R9.2).
    pub provider_cost_usd: Option<f64>,
    /// True once any usage chunk arrived.
    pub reported: bool,
}

impl UsageTotals {
    /// Adds one usage chunk: tokens are summed, the provider cost takes the latest value.
    pub fn add(&mut self, u: &Usage) {
        self.input_tokens += u.input_tokens;
        self.output_tokens += u.output_tokens;
        self.cache_write_tokens += u.cache_write_tokens.unwrap_or(0);
        self.cache_read_tokens += u.cache_read_tokens.unwrap_or(0);
        if let Some(c) = u.total_cost_usd {
            self.provider_cost_usd = Some(c);
        }
        self.reported = true;
    }

    /// The cost in USD: the provider's when reported, else computed from `info`'s prices.
    pub fn cost_usd(&self, info: &ModelInfo) -> f64 {
        self.provider_cost_usd.unwrap_or_else(|| {
            calculate_cost(
                info,
                self.input_tokens,
                self.output_tokens,
                self.cache_write_tokens,
                self.cache_read_tokens,
            )
        })
    }

    /// All tokens of the request: input + output + cache writes + cache reads (SPEC R8.2).
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_write_tokens + self.cache_read_tokens
    }
}

/// Cost in USD of one request from token counts and `info`'s prices (USD per million tokens),
/// choosing the price tier by the prompt size `input + cache_write + cache_read` (SPEC R9.2).
pub fn calculate_cost(
    info: &ModelInfo,
    input_tokens: u64,
    output_tokens: u64,
    cache_write_tokens: u64,
    cache_read_tokens: u64,
) -> f64 {
    let prompt = input_tokens + cache_write_tokens + cache_read_tokens;
    let tier = info
        .tiers
        .iter()
        .find(|t| prompt <= t.context_window)
        .or(info.tiers.last());
    let pick = |tiered: Option<f64>, base: f64| tiered.unwrap_or(base);
    let (p_in, p_out, p_cw, p_cr) = match tier {
        Some(t) => (
            pick(t.input_price, info.input_price),
            pick(t.output_price, info.output_price),
            pick(t.cache_writes_price, info.cache_writes_price),
            pick(t.cache_reads_price, info.cache_reads_price),
        ),
        None => (
            info.input_price,
            info.output_price,
            info.cache_writes_price,
            info.cache_reads_price,
        ),
    };
    let per_million = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
    per_million(input_tokens, p_in)
        + per_million(output_tokens, p_out)
        + per_million(cache_write_tokens, p_cw)
        + per_million(cache_read_tokens, p_cr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_api::model::PriceTier;

    fn sonnet() -> ModelInfo {
        ModelInfo {
            input_price: 3.0,
            output_price: 15.0,
            cache_writes_price: 3.75,
            cache_reads_price: 0.3,
            ..ModelInfo::default()
        }
    }

    #[test]
    fn anthropic_text_fixture_cost() {
        // anthropic_text: 21 in, 27 out, 248 cache writes, 2048 cache reads.
        let c = calculate_cost(&sonnet(), 21, 27, 248, 2048);
        let want = (21.0 * 3.0 + 27.0 * 15.0 + 248.0 * 3.75 + 2048.0 * 0.3) / 1e6;
        assert!((c - want).abs() < 1e-12, "{c} vs {want}");
    }

    #[test]
    fn tiers_by_prompt_size() {
        let mut info = sonnet();
        info.tiers = vec![
            PriceTier {
                context_window: 200_000,
                input_price: Some(3.0),
                ..Default::default()
            },
            PriceTier {
                context_window: 1_000_000,
                input_price: Some(6.0),
                ..Default::default()
            },
        ];
        assert!((calculate_cost(&info, 100_000, 0, 0, 0) - 0.3).abs() < 1e-12);
        // 150k non-cached + 100k cache reads = 250k prompt: the upper tier's input price.
        let c = calculate_cost(&info, 150_000, 0, 0, 100_000);
        assert!((c - (0.9 + 0.03)).abs() < 1e-12, "{c}");
    }

    #[test]
    fn provider_cost_wins_and_tokens_sum() {
        let mut t = UsageTotals::default();
        t.add(&Usage {
            input_tokens: 10,
            output_tokens: 5,
            total_cost_usd: Some(0.1),
            ..Default::default()
        });
        t.add(&Usage {
            input_tokens: 1,
            output_tokens: 2,
            total_cost_usd: Some(0.2),
            ..Default::default()
        });
        assert_eq!((t.input_tokens, t.output_tokens), (11, 7));
        assert_eq!(t.cost_usd(&sonnet()), 0.2);
    }
}
