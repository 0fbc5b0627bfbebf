//! Usage accounting and cost, one formula for every provider's non-cached input.
//! Spec: R1.3, R2.3, R8.2, R9.2.

use switchyard_api::{ModelInfo, Usage};

/// Running totals of one request or task, in tokens and USD.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageTotals {
    /// Non-cached input tokens.
    pub input_tokens: u64,
    /// Output tokens, reasoning included.
    pub output_tokens: u64,
    /// Tokens written to the provider's prompt cache.
    pub cache_write_tokens: u64,
    /// Tokens read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// The provider's own cost, when it reported one; the latest value wins.
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

    /// The provider's cost when reported, else one from `info`'s prices; `None` when unknown.
    pub fn cost_usd(&self, info: &ModelInfo, thinking_budget_tokens: u64) -> Option<f64> {
        self.provider_cost_usd.or_else(|| {
            calculate_cost(
                info,
                &TokenCounts {
                    input: self.input_tokens,
                    output: self.output_tokens,
                    cache_write: self.cache_write_tokens,
                    cache_read: self.cache_read_tokens,
                },
                thinking_budget_tokens,
            )
        })
    }

    /// All tokens of the request, input, output and cache.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_write_tokens + self.cache_read_tokens
    }
}

impl std::ops::AddAssign<&UsageTotals> for UsageTotals {
    fn add_assign(&mut self, other: &UsageTotals) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        if let Some(cost) = other.provider_cost_usd {
            self.provider_cost_usd = Some(self.provider_cost_usd.unwrap_or(0.0) + cost);
        }
        self.reported |= other.reported;
    }
}

/// The tokens one request is billed for; `input` is the non-cached part.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenCounts {
    /// Non-cached input tokens.
    pub input: u64,
    /// Output tokens, reasoning included.
    pub output: u64,
    /// Tokens written to the prompt cache.
    pub cache_write: u64,
    /// Tokens read from the prompt cache.
    pub cache_read: u64,
}

/// The prices that apply to a request, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EffectivePrices {
    /// Non-cached input.
    pub input: f64,
    /// Output, at the thinking price with a thinking budget where the model has one.
    pub output: f64,
    /// Prompt-cache writes, $0 when the model gives no price.
    pub cache_writes: f64,
    /// Prompt-cache reads, $0 when the model gives no price.
    pub cache_reads: f64,
}

/// The prices `info` bills a prompt of `prompt_tokens` at; `None` rather than a made-up $0.
pub fn effective_prices(
    info: &ModelInfo,
    prompt_tokens: u64,
    thinking_budget_tokens: u64,
) -> Option<EffectivePrices> {
    let mut tiers: Vec<_> = info.tiers.iter().collect();
    tiers.sort_by_key(|t| t.context_window);
    let tier = tiers
        .iter()
        .find(|t| prompt_tokens <= t.context_window)
        // The first tier the prompt fits in, else the last, as in the reference.
        .or(tiers.last());
    let pick = |tiered: Option<f64>, base: Option<f64>| tiered.or(base);
    let (input, mut output, cache_writes, cache_reads) = match tier {
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
    if thinking_budget_tokens > 0 {
        if let Some(p) = info.thinking_config.as_ref().and_then(|t| t.output_price) {
            output = Some(p);
        }
    }
    Some(EffectivePrices {
        input: input?,
        output: output?,
        cache_writes: cache_writes.unwrap_or(0.0),
        cache_reads: cache_reads.unwrap_or(0.0),
    })
}

/// Cost in USD of one request's `tokens` at `info`'s prices; `None` when a price is unknown.
pub fn calculate_cost(
    info: &ModelInfo,
    tokens: &TokenCounts,
    thinking_budget_tokens: u64,
) -> Option<f64> {
    let prompt = tokens.input + tokens.cache_write + tokens.cache_read;
    let p = effective_prices(info, prompt, thinking_budget_tokens)?;
    let per_million = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
    Some(
        per_million(tokens.input, p.input)
            + per_million(tokens.output, p.output)
            + per_million(tokens.cache_write, p.cache_writes)
            + per_million(tokens.cache_read, p.cache_reads),
    )
}

/// The sum of two costs: unknown when either is.
pub fn add_costs(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? + b?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_api::model::{PriceTier, ThinkingConfig};

    /// Prices as literals (USD per million tokens), never from the catalogue: a wrong price
    /// in a model table cannot make these pass.
    fn priced(input: f64, output: f64, cw: f64, cr: f64) -> ModelInfo {
        ModelInfo {
            input_price: Some(input),
            output_price: Some(output),
            cache_writes_price: Some(cw),
            cache_reads_price: Some(cr),
            ..ModelInfo::default()
        }
    }

    fn tokens(input: u64, output: u64, cache_write: u64, cache_read: u64) -> TokenCounts {
        TokenCounts {
            input,
            output,
            cache_write,
            cache_read,
        }
    }

    fn close(got: Option<f64>, want: f64) {
        let got = got.unwrap_or(f64::NAN);
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    }

    #[test]
    fn four_prices_per_million() {
        // 21 in, 27 out, 248 cache writes, 2048 cache reads at 3 / 15 / 3.75 / 0.3:
        // 63 + 405 + 930 + 614.4 = 2012.4 micro-dollars.
        let c = calculate_cost(&priced(3.0, 15.0, 3.75, 0.3), &tokens(21, 27, 248, 2048), 0);
        close(c, 0.0020124);
    }

    #[test]
    fn unknown_prices_give_an_unknown_cost_not_zero() {
        let mut info = ModelInfo::default();
        assert_eq!(calculate_cost(&info, &tokens(1000, 100, 0, 0), 0), None);
        info.input_price = Some(1.0);
        assert_eq!(calculate_cost(&info, &tokens(1000, 100, 0, 0), 0), None);
        info.output_price = Some(2.0);
        // Cache prices unknown: billed at $0, as the reference does. 1000·1 + 100·2 = 1200 µ$.
        close(
            calculate_cost(&info, &tokens(1000, 100, 500, 500), 0),
            0.0012,
        );
        // Free is known: $0.
        close(
            calculate_cost(&priced(0.0, 0.0, 0.0, 0.0), &tokens(5, 5, 5, 5), 0),
            0.0,
        );
        // A tier can supply the price the model lacks.
        let info = ModelInfo {
            tiers: vec![PriceTier {
                context_window: u64::MAX,
                input_price: Some(1.0),
                output_price: Some(1.0),
                ..PriceTier::default()
            }],
            ..ModelInfo::default()
        };
        close(calculate_cost(&info, &tokens(1_000_000, 0, 0, 0), 0), 1.0);
    }

    #[test]
    fn tiers_are_chosen_after_sorting_by_context_size() {
        // Written out of order on purpose: 1M first, then 200k.
        let mut info = priced(3.0, 15.0, 3.75, 0.3);
        info.tiers = vec![
            PriceTier {
                context_window: 1_000_000,
                input_price: Some(6.0),
                output_price: Some(22.5),
                ..PriceTier::default()
            },
            PriceTier {
                context_window: 200_000,
                input_price: Some(3.0),
                output_price: Some(15.0),
                ..PriceTier::default()
            },
        ];
        // 100k prompt: the 200k tier. 100,000·3 + 1,000·15 = 315,000 µ$.
        close(
            calculate_cost(&info, &tokens(100_000, 1_000, 0, 0), 0),
            0.315,
        );
        // 150k non-cached + 100k cache reads = 250k: the 1M tier's input and output prices,
        // the model's cache-read price (the tier gives none). 150,000·6 + 1,000·22.5 +
        // 100,000·0.3 = 952,500 µ$.
        close(
            calculate_cost(&info, &tokens(150_000, 1_000, 0, 100_000), 0),
            0.9525,
        );
        // Past every tier: the last (largest) one.
        close(calculate_cost(&info, &tokens(2_000_000, 0, 0, 0), 0), 12.0);
        // Exactly at a bound: that tier.
        close(calculate_cost(&info, &tokens(200_000, 0, 0, 0), 0), 0.6);
    }

    #[test]
    fn a_thinking_budget_bills_output_at_the_thinking_price() {
        // gemini-2.5-flash's reference prices: 0.3 in, 2.5 out, 3.5 out while thinking.
        let mut info = priced(0.3, 2.5, 0.0, 0.075);
        info.thinking_config = Some(ThinkingConfig {
            max_budget: Some(24_576),
            output_price: Some(3.5),
            ..ThinkingConfig::default()
        });
        // No budget: 10,000·0.3 + 2,000·2.5 = 8,000 µ$.
        close(
            calculate_cost(&info, &tokens(10_000, 2_000, 0, 0), 0),
            0.008,
        );
        // A budget: 10,000·0.3 + 2,000·3.5 = 10,000 µ$.
        close(
            calculate_cost(&info, &tokens(10_000, 2_000, 0, 0), 8_192),
            0.010,
        );
        // A model without a thinking price keeps its output price.
        let plain = priced(0.3, 2.5, 0.0, 0.0);
        close(
            calculate_cost(&plain, &tokens(10_000, 2_000, 0, 0), 8_192),
            0.008,
        );
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
        assert_eq!(t.cost_usd(&priced(3.0, 15.0, 0.0, 0.0), 0), Some(0.2));
        // The provider's cost is known even when the model's prices are not.
        assert_eq!(t.cost_usd(&ModelInfo::default(), 0), Some(0.2));
        let mut t = UsageTotals::default();
        t.add(&Usage {
            input_tokens: 10,
            ..Default::default()
        });
        assert_eq!(t.cost_usd(&ModelInfo::default(), 0), None);
    }

    #[test]
    fn costs_add_up_unless_one_is_unknown() {
        assert_eq!(add_costs(Some(0.25), Some(0.5)), Some(0.75));
        assert_eq!(add_costs(Some(0.25), None), None);
        assert_eq!(add_costs(None, Some(0.5)), None);
    }
}
