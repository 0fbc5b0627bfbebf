//! Budget and slot leases on SQLite, each call one `BEGIN IMMEDIATE` transaction.

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use super::reals;
use super::requests::{split, write_records};
use crate::limits::state::RATE_WINDOW_MS;
use crate::store::gateway::claims::{Claim, others_sql};
use crate::store::gateway::leases::{
    LeaseGrant, LeaseStore, LeaseWant, LeasedRecord, SlotLease, SlotLeaseRequest, decide_lease,
    decide_slot_lease, kept_one,
};
use crate::store::rows::{LEARNT_COLUMNS, SLOT_REQUESTS, learnt_from_row, to_i64, to_u64};
use crate::store::sqlite::{Db, SqliteStore};
use crate::store::{StoreError, StoreFuture};

/// Runs `f` in one immediate transaction with `synchronous = NORMAL`, as holds are taken.
fn immediate<T>(
    db: &Db,
    f: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<T>,
) -> Result<T, StoreError> {
    let mut conn = db.conn();
    conn.execute_batch("PRAGMA synchronous = NORMAL")
        .map_err(|e| db.err(e))?;
    let run = |conn: &mut Connection| {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    };
    let result = run(&mut conn);
    conn.execute_batch("PRAGMA synchronous = FULL")
        .map_err(|e| db.err(e))?;
    result.map_err(|e| db.err(e))
}

fn lease_one(
    tx: &Transaction<'_>,
    holder: &str,
    (now, expires): (i64, i64),
    want: &LeaseWant,
) -> rusqlite::Result<LeaseGrant> {
    let claim = Claim::of_want(want, now);
    let (scope, span) = (want.scope.name(), claim.window.name());
    let bucket = claim.window.bucket_ms(now);
    let others = reals(tx, &others_sql(&claim, holder, '?', true), 1)?[0];
    let previous: f64 = tx
        .prepare_cached(
            "SELECT amount FROM budget_leases WHERE scope = ?1 AND id = ?2 AND holder = ?3
               AND span = ?4 AND bucket_ms = ?5 AND expires_ms > ?6",
        )?
        .query_row(params![scope, want.id, holder, span, bucket, now], |r| {
            r.get(0)
        })
        .optional()?
        .unwrap_or(0.0);
    let grant = decide_lease(want, others, previous, now);
    tx.prepare_cached(
        "DELETE FROM budget_leases WHERE scope = ?1 AND id = ?2 AND expires_ms <= ?3",
    )?
    .execute(params![scope, want.id, now])?;
    if grant.amount > 0.0 {
        tx.prepare_cached(
            "INSERT INTO budget_leases (scope, id, holder, span, bucket_ms, amount, expires_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (scope, id, holder) DO UPDATE SET
               span = excluded.span, bucket_ms = excluded.bucket_ms, amount = excluded.amount,
               expires_ms = excluded.expires_ms",
        )?
        .execute(params![
            scope,
            want.id,
            holder,
            span,
            bucket,
            grant.amount,
            expires
        ])?;
    } else {
        tx.prepare_cached(
            "DELETE FROM budget_leases WHERE scope = ?1 AND id = ?2 AND holder = ?3",
        )?
        .execute(params![scope, want.id, holder])?;
    }
    Ok(grant)
}

/// Requests and tokens of `key`'s slots stamped after `after_ms`.
fn slots_after(tx: &Transaction<'_>, key: &str, after_ms: i64) -> rusqlite::Result<SlotLease> {
    let sql = format!(
        "SELECT coalesce(sum({SLOT_REQUESTS}), 0), coalesce(sum(input_tokens), 0) FROM rate_slots
         WHERE key = ?1 AND ts_ms > ?2"
    );
    tx.prepare_cached(&sql)?
        .query_row(params![key, after_ms], |r| {
            Ok(SlotLease {
                requests: to_u64(r.get(0)?),
                tokens: to_u64(r.get(1)?),
            })
        })
}

fn lease_slots(tx: &Transaction<'_>, req: &SlotLeaseRequest) -> rusqlite::Result<SlotLease> {
    crate::store::sqlite::limits::prune_slots(tx, &req.key, req.now_ms)?;
    let learnt = tx
        .prepare_cached(&format!(
            "SELECT {LEARNT_COLUMNS} FROM rate_learnt WHERE key = ?1"
        ))?
        .query_row([&req.key], |r| learnt_from_row(r, 0))
        .optional()?
        .flatten();
    let start = req.now_ms - RATE_WINDOW_MS;
    let window = slots_after(tx, &req.key, start)?;
    let since = match &learnt {
        Some(l) => slots_after(tx, &req.key, start.max(l.observed_ms - 1))?,
        None => SlotLease::default(),
    };
    let grant = decide_slot_lease(req, window, since, learnt.as_ref());
    if grant.requests > 0 {
        tx.prepare_cached(
            "INSERT INTO rate_slots (key, ts_ms, input_tokens, requests, holder)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![
            req.key,
            req.valid_until_ms.max(req.now_ms),
            to_i64(grant.tokens),
            to_i64(grant.requests),
            req.holder
        ])?;
    }
    Ok(grant)
}

fn return_slots(
    tx: &Transaction<'_>,
    key: &str,
    holder: &str,
    unused: SlotLease,
) -> rusqlite::Result<SlotLease> {
    let rows: Vec<(i64, u64, u64)> = tx
        .prepare_cached(
            "SELECT rowid, requests, input_tokens FROM rate_slots
             WHERE holder = ?1 AND key = ?2 ORDER BY ts_ms",
        )?
        .query_map(params![holder, key], |r| {
            Ok((r.get(0)?, to_u64(r.get(1)?), to_u64(r.get(2)?)))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut left = unused;
    for (rowid, requests, tokens) in rows {
        let t = tokens.min(left.tokens);
        let r = kept_one(requests, left.requests, tokens - t);
        left.requests -= r;
        left.tokens -= t;
        let (requests, tokens) = (requests - r, tokens - t);
        if requests == 0 && tokens == 0 {
            tx.prepare_cached("DELETE FROM rate_slots WHERE rowid = ?1")?
                .execute([rowid])?;
        } else {
            tx.prepare_cached(
                "UPDATE rate_slots SET requests = ?2, input_tokens = ?3 WHERE rowid = ?1",
            )?
            .execute(params![rowid, to_i64(requests), to_i64(tokens)])?;
        }
    }
    Ok(SlotLease {
        requests: unused.requests - left.requests,
        tokens: unused.tokens - left.tokens,
    })
}

impl LeaseStore for SqliteStore {
    fn lease<'a>(
        &'a self,
        holder: &'a str,
        now_ms: i64,
        expires_ms: i64,
        wants: &'a [LeaseWant],
    ) -> StoreFuture<'a, Vec<LeaseGrant>> {
        let (holder, wants) = (holder.to_owned(), wants.to_vec());
        self.call(move |db| {
            immediate(db, |tx| {
                (wants.iter())
                    .map(|w| lease_one(tx, &holder, (now_ms, expires_ms), w))
                    .collect()
            })
        })
    }

    fn release<'a>(&'a self, holder: &'a str) -> StoreFuture<'a, u64> {
        let holder = holder.to_owned();
        self.call(move |db| {
            let n = db
                .conn()
                .execute("DELETE FROM budget_leases WHERE holder = ?1", [&holder])
                .map_err(|e| db.err(e))?;
            Ok(n as u64)
        })
    }

    fn lease_slots<'a>(&'a self, request: &'a SlotLeaseRequest) -> StoreFuture<'a, SlotLease> {
        self.with(request, |db, req| immediate(db, |tx| lease_slots(tx, req)))
    }

    fn return_slots<'a>(
        &'a self,
        key: &'a str,
        holder: &'a str,
        unused: SlotLease,
    ) -> StoreFuture<'a, SlotLease> {
        let (key, holder) = (key.to_owned(), holder.to_owned());
        self.call(move |db| immediate(db, |tx| return_slots(tx, &key, &holder, unused)))
    }

    fn record_leased<'a>(&'a self, records: &'a [LeasedRecord]) -> StoreFuture<'a, ()> {
        let (records, reserved) = split(records);
        self.call(move |db| write_records(db, &records, &reserved))
    }
}
