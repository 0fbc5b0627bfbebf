//! A task's usage for people, with a cost that may be unknown.
//! Spec: R2.3.

use switchyard_core::store::TaskUsage;
use switchyard_core::task::TaskEvent;

/// Every request's usage of the task, summed; `estimated` when any request's counts were.
#[derive(Debug, Default)]
pub(super) struct UsageSum {
    total: Option<TaskUsage>,
    estimated: bool,
}

impl UsageSum {
    pub(super) fn add(&mut self, event: &TaskEvent) {
        if let Some(usage) = event.usage() {
            *self.total.get_or_insert_with(TaskUsage::default) += usage;
            self.estimated |= matches!(
                event,
                TaskEvent::Usage {
                    estimated: true,
                    ..
                }
            );
        }
    }

    /// "N in · M out tokens · cache … · $C", or "no usage reported".
    pub(super) fn line(&self) -> String {
        let Some(total) = &self.total else {
            return "no usage reported".to_owned();
        };
        let approx = if self.estimated { "~" } else { "" };
        let mut s = format!(
            "{approx}{} in · {approx}{} out tokens",
            total.tokens_in, total.tokens_out
        );
        if self.estimated {
            s.push_str(" (estimated: the provider reported no usage)");
        }
        if total.cache_reads > 0 || total.cache_writes > 0 {
            s.push_str(&format!(
                " · cache {} read / {} written",
                total.cache_reads, total.cache_writes
            ));
        }
        s.push_str(" · ");
        s.push_str(&cost_label(total, 6));
        s
    }
}

/// A cost for people, such as `$0.001234`, or `cost unknown` for a model without prices.
pub fn cost_label(usage: &TaskUsage, decimals: usize) -> String {
    match usage.cost() {
        Some(c) => format!("${c:.decimals$}"),
        None if usage.cost_usd > 0.0 => {
            format!("cost unknown (at least ${:.decimals$})", usage.cost_usd)
        }
        None => "cost unknown".to_owned(),
    }
}
