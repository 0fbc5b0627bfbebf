//! What a keyed request reserves against its budgets before it is sent, and the shorter output
//! limit that lets it fit what is left, so a budget is never pinned by an output limit the
//! answer will not use.
//! Spec: R14.7.

use switchyard_api::ChainEntry;

/// The shortest answer a lowered output limit allows: below it a request is refused, since an
/// agent's turn would be cut before its first tool call.
pub(crate) const MIN_ANSWER_TOKENS: u64 = 1_024;

/// The output limit `entry` answers `asked` with: the request's, at most the model's.
fn output_limit(entry: &ChainEntry, asked: Option<u64>) -> u64 {
    let most = entry.handler.get_model().info.max_tokens;
    match asked {
        Some(asked) if most > 0 => asked.min(most),
        Some(asked) => asked,
        None => most,
    }
}

/// The reservation in USD for `input_tokens` in and at most `max_output` out at the dearest
/// entry of `chain`, or `unpriced` for an entry whose prices are unknown.
pub(crate) fn reservation(
    chain: &[ChainEntry],
    input_tokens: u64,
    max_output: Option<u64>,
    unpriced: f64,
) -> f64 {
    let one = |entry: &ChainEntry| {
        let info = entry.handler.get_model().info;
        let output = output_limit(entry, max_output);
        match (info.input_price, info.output_price) {
            (Some(i), Some(o)) if output > 0 => {
                (input_tokens as f64 * i + output as f64 * o) / 1_000_000.0
            }
            _ => unpriced,
        }
    };
    chain.iter().map(one).fold(0.0, f64::max)
}

/// The largest output limit below the one `asked` whose reservation at every entry of `chain`
/// fits in `left` USD, when it is at least [`MIN_ANSWER_TOKENS`]; `None` when the asked one
/// fits, an entry's prices are unknown, or what is left pays less.
pub(crate) fn affordable_output(
    chain: &[ChainEntry],
    input_tokens: u64,
    asked: Option<u64>,
    left: f64,
) -> Option<u64> {
    let mut lowest: Option<u64> = None;
    let mut below_asked = false;
    for entry in chain {
        let info = entry.handler.get_model().info;
        let (Some(i), Some(o)) = (info.input_price, info.output_price) else {
            return None;
        };
        if o <= 0.0 {
            continue;
        }
        let pays = (left * 1_000_000.0 - input_tokens as f64 * i) / o;
        // One token less than the exact quotient, so rounding never reserves past `left`.
        let tokens = (pays.floor() - 1.0).max(0.0) as u64;
        let limit = output_limit(entry, asked);
        below_asked |= limit == 0 || tokens < limit;
        lowest = Some(lowest.map_or(tokens, |l| l.min(tokens)));
    }
    lowest.filter(|t| below_asked && *t >= MIN_ANSWER_TOKENS)
}
