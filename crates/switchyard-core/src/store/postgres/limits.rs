//! The limits state of SPEC R12 on PostgreSQL ([`crate::limits::LimitsStore`]), shared by every
//! process on every machine using the store (R13.2).
//!
//! A rate-limit slot is taken in one transaction that first takes a transaction-scoped
//! advisory lock on the key (`pg_advisory_xact_lock(hashtext(key))`), then reads the key's
//! slots in the window, decides with [`decide_slot`] and inserts the new slot. Callers of one
//! key queue on the lock, so no two can both count the same free slot (no lost update); other
//! keys do not wait. The lock ends with the transaction, or with the connection when a process
//! dies mid-way; a slot is a timestamp that ages out of the 60 s window, so nothing a dead
//! process left holds anyone back for longer. The statements after the lock are pipelined:
//! a slot costs four round trips (begin; lock + clean-up + two reads; insert; commit).

use super::PgStore;
use crate::limits::state::{
    Cooldown, EntryKey, LearntLimits, LimitsStore, RateState, SlotGrant, SlotRequest, decide_slot,
    slot_window,
};
use crate::store::StoreFuture;
use crate::store::rows::{
    COOLDOWN_COLUMNS, Columns, LEARNT_COLUMNS, cooldown_from_row, learnt_columns, learnt_from_row,
    rate_state_from_row, slot_from_row, to_i64, to_u64, window_start,
};

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
        Box::pin(async move {
            let window_start = window_start(request.now_ms);
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(|e| self.err(e))?;
            let learnt_sql = format!("SELECT {LEARNT_COLUMNS} FROM rate_learnt WHERE key = $1");
            let (lock, clean, select, learnt) = tokio::try_join!(
                tx.prepare_cached("SELECT pg_advisory_xact_lock(hashtext($1))"),
                tx.prepare_cached("DELETE FROM rate_slots WHERE key = $1 AND ts_ms <= $2"),
                tx.prepare_cached(
                    "SELECT count(*), coalesce(sum(input_tokens), 0)::bigint FROM rate_slots
                     WHERE key = $1 AND ts_ms > $2"
                ),
                tx.prepare_cached(&learnt_sql),
            )
            .map_err(|e| self.err(e))?;
            // Sent together, run in order: the lock is held before anything is read.
            let key: &[&(dyn tokio_postgres::types::ToSql + Sync)] = &[&request.key];
            let key_window: &[&(dyn tokio_postgres::types::ToSql + Sync)] =
                &[&request.key, &window_start];
            let (_, _, window, learnt) = tokio::try_join!(
                tx.query(&lock, key),
                tx.execute(&clean, key_window),
                tx.query_one(&select, key_window),
                tx.query_opt(&learnt, key),
            )
            .map_err(|e| self.err(e))?;
            let learnt = match &learnt {
                Some(r) => learnt_from_row(r, 0).map_err(|e| self.err(e))?,
                None => None,
            };
            // The window's rows only when a limit could bind (`slot_window`).
            let (count, tokens): (i64, i64) = (window.get(0), window.get(1));
            let grant = match slot_window(learnt.as_ref(), request) {
                Some(could_wait) if could_wait(to_u64(count), to_u64(tokens)) => {
                    let rows = tx
                        .query(
                            "SELECT ts_ms, input_tokens FROM rate_slots
                             WHERE key = $1 AND ts_ms > $2 ORDER BY ts_ms",
                            key_window,
                        )
                        .await
                        .map_err(|e| self.err(e))?;
                    let slots = self.mapped(&rows, slot_from_row)?;
                    decide_slot(&slots, learnt.as_ref(), request)
                }
                _ => SlotGrant::Granted,
            };
            if grant == SlotGrant::Granted {
                let insert = tx
                    .prepare_cached(
                        "INSERT INTO rate_slots (key, ts_ms, input_tokens) VALUES ($1, $2, $3)",
                    )
                    .await
                    .map_err(|e| self.err(e))?;
                tx.execute(
                    &insert,
                    &[&request.key, &request.now_ms, &to_i64(request.input_tokens)],
                )
                .await
                .map_err(|e| self.err(e))?;
            }
            tx.commit().await.map_err(|e| self.err(e))?;
            Ok(grant)
        })
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
                           (SELECT count(*) FROM rate_slots s WHERE s.key = keys.key AND s.ts_ms > $1),
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
