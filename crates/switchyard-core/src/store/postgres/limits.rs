//! The limits state on PostgreSQL; a rate slot is taken under an advisory lock on its key.
//! Spec: R12, R13.2.

use deadpool_postgres::Transaction;
use tokio_postgres::Statement;
use tokio_postgres::types::ToSql;

use super::PgStore;
use crate::limits::state::{
    Cooldown, EntryKey, LearntLimits, LimitsStore, RATE_WINDOW_MS, RateState, SlotGrant,
    SlotRequest, decide_slot, slot_window,
};
use crate::store::rows::{
    COOLDOWN_COLUMNS, Columns, LEARNT_COLUMNS, SLOT_REQUESTS, cooldown_from_row, expand_slots,
    learnt_columns, learnt_from_row, rate_state_from_row, slot_from_row, to_i64, to_u64,
    window_start,
};
use crate::store::{BudgetWindow, StoreError, StoreFuture};

impl LimitsStore for PgStore {
    fn set_cooldown<'a>(&'a self, cooldown: &'a Cooldown) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.rows(
                "INSERT INTO cooldowns (provider, model, base_url, since_ms, until_ms, reason)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (provider, model, base_url) DO UPDATE SET
                   since_ms = excluded.since_ms, until_ms = excluded.until_ms,
                   reason = excluded.reason
                 WHERE excluded.until_ms > cooldowns.until_ms",
                &[
                    &cooldown.entry.provider,
                    &cooldown.entry.model,
                    &cooldown.entry.base_url,
                    &cooldown.since_ms,
                    &cooldown.until_ms,
                    &cooldown.reason,
                ],
            )
            .await
            .map(drop)
        })
    }

    fn clear_cooldown<'a>(&'a self, entry: &'a EntryKey) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.rows(
                "DELETE FROM cooldowns WHERE provider = $1 AND model = $2 AND base_url = $3",
                &[&entry.provider, &entry.model, &entry.base_url],
            )
            .await
            .map(drop)
        })
    }

    fn cooldowns(&self, now_ms: i64) -> StoreFuture<'_, Vec<Cooldown>> {
        Box::pin(async move {
            let rows = self
                .rows(
                    &format!(
                        "SELECT {COOLDOWN_COLUMNS} FROM cooldowns
                         WHERE until_ms > $1 ORDER BY until_ms, provider, model, base_url"
                    ),
                    &[&now_ms],
                )
                .await?;
            self.mapped(&rows, cooldown_from_row)
        })
    }

    fn spend_between(&self, from_ms: i64, to_ms: i64) -> StoreFuture<'_, f64> {
        Box::pin(async move {
            // A whole UTC day is read from the gateway's running total.
            if from_ms == BudgetWindow::Day.bucket_ms(from_ms) && to_ms == from_ms + 86_400_000 {
                let rows = self
                    .rows(
                        "SELECT settled_usd FROM budget_totals WHERE scope = 'gateway' AND id = ''
                           AND span = 'day' AND bucket_ms = $1",
                        &[&from_ms],
                    )
                    .await?;
                return (rows.first().map_or(Ok(0.0), |r| r.real(0))).map_err(|e| self.err(e));
            }
            let rows = self
                .rows(
                    "SELECT coalesce(sum(cost_usd), 0.0)::float8 FROM spend
                     WHERE ts_ms >= $1 AND ts_ms < $2",
                    &[&from_ms, &to_ms],
                )
                .await?;
            rows.first()
                .map_or(Ok(0.0), |r| r.real(0))
                .map_err(|e| self.err(e))
        })
    }

    fn acquire_rate_slot<'a>(&'a self, request: &'a SlotRequest) -> StoreFuture<'a, SlotGrant> {
        Box::pin(acquire_rate_slot(self, request))
    }

    fn record_learnt_limits<'a>(
        &'a self,
        key: &'a str,
        learnt: &'a LearntLimits,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let [requests, requests_reset, tokens, tokens_reset] = learnt_columns(learnt);
            self.rows(
                &format!(
                    "INSERT INTO rate_learnt (key, {LEARNT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)
                     ON CONFLICT (key) DO UPDATE SET observed_ms = excluded.observed_ms,
                       requests_remaining = excluded.requests_remaining,
                       requests_reset_ms = excluded.requests_reset_ms,
                       tokens_remaining = excluded.tokens_remaining,
                       tokens_reset_ms = excluded.tokens_reset_ms"
                ),
                &[
                    &key,
                    &learnt.observed_ms,
                    &requests,
                    &requests_reset,
                    &tokens,
                    &tokens_reset,
                ],
            )
            .await
            .map(drop)
        })
    }

    fn rate_states(&self, now_ms: i64) -> StoreFuture<'_, Vec<RateState>> {
        Box::pin(async move {
            let window_start = window_start(now_ms);
            let rows = self
                .rows(
                    &format!(
                        "WITH keys AS (
                           SELECT key FROM rate_slots WHERE ts_ms > $1
                           UNION
                           SELECT key FROM rate_learnt
                           WHERE greatest(coalesce(requests_reset_ms, 0), coalesce(tokens_reset_ms, 0)) > $2
                         )
                         SELECT keys.key,
                           (SELECT coalesce(sum({SLOT_REQUESTS}), 0)::bigint FROM rate_slots s
                              WHERE s.key = keys.key AND s.ts_ms > $1),
                           (SELECT coalesce(sum(input_tokens), 0)::bigint FROM rate_slots s
                              WHERE s.key = keys.key AND s.ts_ms > $1),
                           (SELECT min(ts_ms) FROM rate_slots s WHERE s.key = keys.key AND s.ts_ms > $1),
                           {LEARNT_COLUMNS}
                         FROM keys LEFT JOIN rate_learnt l ON l.key = keys.key
                         ORDER BY keys.key"
                    ),
                    &[&window_start, &now_ms],
                )
                .await?;
            self.mapped(&rows, rate_state_from_row)
        })
    }
}

/// The most slot rows of a key one write deletes.
const PRUNE_ROWS: i64 = 64;

/// The statements that lock a key's slots, prepared before anything is sent.
pub(crate) struct SlotLock {
    lock: Statement,
    prune: Statement,
}

/// Prepares [`SlotLock`] in `tx`.
pub(crate) async fn prepare_slot_lock(
    store: &PgStore,
    tx: &Transaction<'_>,
) -> Result<SlotLock, StoreError> {
    let (lock, prune) = tokio::try_join!(
        tx.prepare_cached("SELECT pg_advisory_xact_lock(hashtext($1))"),
        tx.prepare_cached(
            "DELETE FROM rate_slots WHERE ctid = ANY (ARRAY(
               SELECT ctid FROM rate_slots WHERE key = $1 AND ts_ms <= $2 LIMIT $3))"
        ),
    )
    .map_err(|e| store.err(e))?;
    Ok(SlotLock { lock, prune })
}

/// Takes `key`'s lock and deletes a few slots two minutes old, for clocks a minute behind.
pub(crate) async fn lock_slots(
    tx: &Transaction<'_>,
    s: &SlotLock,
    key: &str,
    now_ms: i64,
) -> Result<(), tokio_postgres::Error> {
    let old = now_ms - 2 * RATE_WINDOW_MS;
    let lock: [&(dyn ToSql + Sync); 1] = [&key];
    let prune: [&(dyn ToSql + Sync); 3] = [&key, &old, &PRUNE_ROWS];
    tokio::try_join!(tx.query(&s.lock, &lock), tx.execute(&s.prune, &prune)).map(drop)
}

async fn acquire_rate_slot(
    store: &PgStore,
    request: &SlotRequest,
) -> Result<SlotGrant, StoreError> {
    let window_start = window_start(request.now_ms);
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(|e| store.err(e))?;
    let learnt_sql = format!("SELECT {LEARNT_COLUMNS} FROM rate_learnt WHERE key = $1");
    let count_sql = format!(
        "SELECT coalesce(sum({SLOT_REQUESTS}), 0)::bigint, coalesce(sum(input_tokens), 0)::bigint
         FROM rate_slots WHERE key = $1 AND ts_ms > $2"
    );
    let (slot_lock, (select, learnt)) = tokio::try_join!(prepare_slot_lock(store, &tx), async {
        tokio::try_join!(
            tx.prepare_cached(&count_sql),
            tx.prepare_cached(&learnt_sql)
        )
        .map_err(|e| store.err(e))
    })?;
    let key: &[&(dyn ToSql + Sync)] = &[&request.key];
    let key_window: &[&(dyn ToSql + Sync)] = &[&request.key, &window_start];
    // Sent together, run in order: the lock is held before anything is read.
    let ((), window, learnt) = tokio::try_join!(
        lock_slots(&tx, &slot_lock, &request.key, request.now_ms),
        tx.query_one(&select, key_window),
        tx.query_opt(&learnt, key),
    )
    .map_err(|e| store.err(e))?;
    let learnt = match &learnt {
        Some(r) => learnt_from_row(r, 0).map_err(|e| store.err(e))?,
        None => None,
    };
    let (count, tokens): (i64, i64) = (window.get(0), window.get(1));
    let grant = match slot_window(learnt.as_ref(), request) {
        Some(could_wait) if could_wait(to_u64(count), to_u64(tokens)) => {
            let rows = tx
                .query(
                    "SELECT ts_ms, input_tokens, requests FROM rate_slots
                     WHERE key = $1 AND ts_ms > $2 ORDER BY ts_ms",
                    key_window,
                )
                .await
                .map_err(|e| store.err(e))?;
            let rows = store.mapped(&rows, slot_from_row)?;
            decide_slot(&expand_slots(&rows), learnt.as_ref(), request)
        }
        _ => SlotGrant::Granted,
    };
    if grant == SlotGrant::Granted {
        let tokens = to_i64(request.input_tokens);
        tx.execute(
            "INSERT INTO rate_slots (key, ts_ms, input_tokens) VALUES ($1, $2, $3)",
            &[&request.key, &request.now_ms, &tokens],
        )
        .await
        .map_err(|e| store.err(e))?;
    }
    tx.commit().await.map_err(|e| store.err(e))?;
    Ok(grant)
}
