//! The request log summed by group and bucket, for `switchyard usage` and the dashboard.
//! Spec: R14.8, R14.11.

/// How `switchyard usage` groups the request log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageBy {
    /// By client key id.
    Key,
    /// By team.
    Team,
    /// By `provider:model` that answered.
    Model,
    /// By UTC day; the group is the day's number since 1970-01-01.
    Day,
}

/// One group of the request log, in tokens and USD.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageRow {
    /// The group's value; `None` for requests without one, such as those without a key.
    pub group: Option<String>,
    /// Requests.
    pub requests: u64,
    /// Non-cached input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cache reads.
    pub cache_read_tokens: u64,
    /// Cache writes.
    pub cache_write_tokens: u64,
    /// What was charged: the known costs, and for keyed requests without one what their
    /// key's budget counts, their reservation.
    pub cost_usd: f64,
    /// Requests whose cost is unknown.
    pub unpriced: u64,
}

/// How long one bucket of a spend series is, in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageBucket {
    /// One UTC hour.
    Hour,
    /// One UTC day.
    Day,
}

impl UsageBucket {
    /// The bucket's length in milliseconds.
    pub fn millis(self) -> i64 {
        match self {
            Self::Hour => 3_600_000,
            Self::Day => 86_400_000,
        }
    }
}

/// What to sum: the groups, the buckets and the range `[from_ms, to_ms)` of arrival times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsageQuery {
    /// How requests are grouped.
    pub by: UsageBy,
    /// Per hour or per day; `None`: one row per group over the whole range.
    pub bucket: Option<UsageBucket>,
    /// The first arrival counted, Unix ms.
    pub from_ms: i64,
    /// The end of the range, Unix ms, not included.
    pub to_ms: i64,
}

/// One group's sums in one bucket.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageSlice {
    /// The bucket's start, a multiple of its length; `None` for totals.
    pub bucket_ms: Option<i64>,
    /// The arrival of the group's last request in the bucket, Unix ms.
    pub last_ms: i64,
    /// The group and its sums, as `switchyard usage` reports them.
    pub row: UsageRow,
}
