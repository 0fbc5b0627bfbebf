//! Unit tests of slices: what a lease call asks and how its answer is applied.
//! Spec: R14.16, R14.17.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::slice::{Slice, SliceKey};
use crate::store::{BudgetWindow, LeaseGrant, LeaseScope, decide_lease};

fn key() -> SliceKey {
    SliceKey {
        scope: LeaseScope::Key,
        id: "key_a".into(),
    }
}

fn grant(amount: f64, full: bool, free: f64) -> LeaseGrant {
    LeaseGrant {
        amount,
        full,
        free,
        resets_ms: None,
    }
}

/// A slice holding $1 of which $0.6 is taken, $0.3 written and not yet lowered: a renewal
/// refused by the store keeps the written part counted, a granted one drops it.
#[test]
fn written_costs_leave_the_slice_only_with_a_new_grant() {
    let now = 1_000;
    let mut s = Slice::new(10.0, BudgetWindow::Total, now);
    s.granted = 1.0;
    s.expires_ms = now + 15_000;
    s.take(0.6);
    s.settle(s.bucket, 0.6, 0.3);
    s.written(s.bucket, 0.3);
    assert!((s.usage() - 0.3).abs() < 1e-12 && (s.room(now, 0) - 0.7).abs() < 1e-12);
    let plan = s.plan(&key(), (0.0, true), (now, 0.1));
    // Idle: it wants nothing more than it owes, and nothing may be taken meanwhile past it.
    assert_eq!((plan.want.want, plan.want.need), (0.0, 0.0));
    let mut refused = s.clone();
    refused.apply(&plan, &grant(1.0, false, 0.0), now + 15_000);
    assert!((refused.usage() - 0.3).abs() < 1e-12, "{refused:?}");
    s.apply(&plan, &grant(0.0, true, 9.0), now + 15_000);
    assert_eq!((s.usage(), s.granted), (0.0, 0.0));
}

/// During a lease call the slice may be taken from only up to what any answer covers.
#[test]
fn a_call_in_flight_caps_what_is_taken() {
    let now = 1_000;
    let mut s = Slice::new(10.0, BudgetWindow::Total, now);
    s.granted = 2.0;
    s.expires_ms = now + 15_000;
    s.take(0.5);
    let plan = s.plan(&key(), (0.0, false), (now, 0.1));
    // Headroom is four of the last request, at most a tenth of the budget.
    assert!((plan.want.want - 1.5).abs() < 1e-12, "{plan:?}");
    assert!((plan.want.need - 1.5).abs() < 1e-12, "{plan:?}");
    assert!((s.room(now, 0) - 1.0).abs() < 1e-12);
    let shrink = s.plan(&key(), (0.0, true), (now, 0.1));
    assert!((shrink.want.want - 0.5).abs() < 1e-12 && s.room(now, 0).abs() < 1e-12);
    // Whatever the store answers to the shrink (refused keeps 2, else at least need), the
    // 0.5 taken stays covered; a store that cut a refused lease to what is free would not.
    for g in [
        decide_lease(&shrink.want, 9.9, 2.0, now),
        decide_lease(&shrink.want, 0.0, 2.0, now),
    ] {
        let mut after = s.clone();
        after.apply(&shrink, &g, now + 15_000);
        assert!(after.granted + 1e-12 >= after.usage(), "{g:?} {after:?}");
    }
}

/// A new window starts a new slice: what the old one held counts in the old window.
#[test]
fn a_new_day_starts_over() {
    let day = 86_400_000;
    let mut s = Slice::new(5.0, BudgetWindow::Day, day + 10);
    s.granted = 1.0;
    s.expires_ms = 2 * day;
    s.take(0.4);
    let old = s.bucket;
    s.roll(2 * day + 1);
    assert_eq!((s.granted, s.usage()), (0.0, 0.0));
    s.settle(old, 0.4, 0.4);
    assert_eq!(s.usage(), 0.0);
}

mod property {
    use proptest::prelude::*;

    use super::super::slice::{Plan, Slice, SliceKey};
    use crate::store::{BudgetWindow, LeaseGrant, LeaseScope, decide_lease};

    const LIMIT: f64 = 1.0;
    const NOW: i64 = 1_000;

    #[derive(Debug, Clone)]
    enum Op {
        Take(usize, f64),
        Settle(usize, f64),
        Write(usize),
        Send(usize, bool),
        Decide(usize),
        Apply(usize, bool),
    }

    fn op() -> impl Strategy<Value = Op> {
        let h = 0..3usize;
        prop_oneof![
            (h.clone(), 1..30u32).prop_map(|(h, c)| Op::Take(h, f64::from(c) / 100.0)),
            (h.clone(), 0..=10u32).prop_map(|(h, f)| Op::Settle(h, f64::from(f) / 10.0)),
            h.clone().prop_map(Op::Write),
            (h.clone(), any::<bool>()).prop_map(|(h, idle)| Op::Send(h, idle)),
            h.clone().prop_map(Op::Decide),
            (h, any::<bool>()).prop_map(|(h, failed)| Op::Apply(h, failed)),
        ]
    }

    /// One simulated process: its slice, requests in flight, costs not yet written, and its
    /// lease call out, sent and maybe decided by the store.
    struct Holder {
        slice: Slice,
        inflight: Vec<f64>,
        unwritten: Vec<f64>,
        call: Option<(Plan, Option<LeaseGrant>)>,
    }

    /// The store: settled totals and each holder's lease.
    struct Store {
        totals: f64,
        leases: [f64; 3],
    }

    fn step(hs: &mut [Holder], store: &mut Store, op: &Op) {
        let key = SliceKey {
            scope: LeaseScope::Key,
            id: "k".into(),
        };
        match *op {
            Op::Take(h, usd) if hs[h].slice.room(NOW, 0) + 1e-12 >= usd => {
                hs[h].slice.take(usd);
                hs[h].inflight.push(usd);
            }
            Op::Take(..) => {}
            Op::Settle(h, part) => {
                if let Some(r) = hs[h].inflight.pop() {
                    let bucket = hs[h].slice.bucket;
                    hs[h].slice.settle(bucket, r, r * part);
                    hs[h].unwritten.push(r * part);
                }
            }
            Op::Write(h) => {
                let bucket = hs[h].slice.bucket;
                for c in std::mem::take(&mut hs[h].unwritten) {
                    store.totals += c;
                    hs[h].slice.written(bucket, c);
                }
            }
            Op::Send(h, idle) if hs[h].call.is_none() => {
                let plan = hs[h].slice.plan(&key, (0.0, idle), (NOW, 0.3));
                hs[h].call = Some((plan, None));
            }
            Op::Send(..) => {}
            Op::Decide(h) => {
                if let Some((plan, grant @ None)) = &mut hs[h].call {
                    let others: f64 = (0..3).filter(|o| *o != h).map(|o| store.leases[o]).sum();
                    let g = decide_lease(&plan.want, store.totals + others, store.leases[h], NOW);
                    store.leases[h] = g.amount;
                    *grant = Some(g);
                }
            }
            // A failed call may or may not have reached the store.
            Op::Apply(h, true) => {
                if let Some((plan, _)) = hs[h].call.take() {
                    hs[h].slice.failed(&plan);
                }
            }
            Op::Apply(h, false) => match hs[h].call.take() {
                Some((plan, Some(g))) => hs[h].slice.apply(&plan, &g, NOW + 60_000),
                other => hs[h].call = other,
            },
        }
    }

    fn holders() -> (Vec<Holder>, Store) {
        let hs = (0..3)
            .map(|_| Holder {
                slice: Slice::new(LIMIT, BudgetWindow::Total, NOW),
                inflight: Vec::new(),
                unwritten: Vec::new(),
                call: None,
            })
            .collect();
        (
            hs,
            Store {
                totals: 0.0,
                leases: [0.0; 3],
            },
        )
    }

    fn check(hs: &[Holder], store: &Store) -> Result<(), String> {
        let owed: f64 = (hs.iter())
            .map(|h| h.inflight.iter().sum::<f64>() + h.unwritten.iter().sum::<f64>())
            .sum();
        if store.totals + owed > LIMIT + 1e-9 {
            return Err(format!("{} settled + {owed} owed", store.totals));
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2_000, failure_persistence: None, ..ProptestConfig::default() })]

        /// Three processes taking, settling, writing and leasing in any interleaving, the
        /// store deciding each call at any point while it is out: settled totals plus every
        /// reservation in flight and every cost not yet written never pass the limit.
        #[test]
        fn slices_never_let_a_budget_pass(ops in prop::collection::vec(op(), 1..120)) {
            let (mut hs, mut store) = holders();
            for op in &ops {
                step(&mut hs, &mut store, op);
                check(&hs, &store).map_err(|e| TestCaseError::fail(format!("{e} after {op:?}")))?;
            }
        }
    }
}

/// BerriAI/litellm#10973: a request that reserves nothing, to a model priced at $0, takes from
/// no budget, so a spent one cannot refuse it; its key's parallel limit still counts.
#[test]
fn a_request_reserving_nothing_takes_only_its_parallel_slot() {
    use super::ask::AdmissionAsk;
    use crate::store::suite::keys::key;
    use crate::store::{Budget, Team};
    let key = key("key_a", "sk-sy-aaaaaa", Some("core"), Some("1/day"));
    let team = Team {
        name: "core".to_owned(),
        budget: Budget::parse("10/month"),
        created_ms: 1,
    };
    let user = crate::store::User {
        id: "usr_0123456789abcdef".to_owned(),
        issuer: "https://idp".to_owned(),
        subject: "jane".to_owned(),
        email: None,
        name: None,
        role: crate::store::Role::Member,
        team: None,
        models: vec![],
        budget: Budget::parse("2/day"),
        created_ms: 1,
        signed_in_ms: 1,
        disabled_ms: None,
    };
    let ask = |reserve_usd| AdmissionAsk {
        key: Some(key.clone()),
        team: Some(team.clone()),
        user: Some(user.clone()),
        gateway_per_day: Some(5.0),
        reserve_usd,
        input_tokens: 10,
    };
    let scopes =
        |usd| -> Vec<LeaseScope> { ask(usd).needs().iter().map(|n| n.key.scope).collect() };
    assert_eq!(scopes(0.0), [LeaseScope::Parallel]);
    assert_eq!(
        scopes(0.01),
        [
            LeaseScope::Key,
            LeaseScope::Parallel,
            LeaseScope::User,
            LeaseScope::Team,
            LeaseScope::Gateway
        ]
    );
    let owners = ask(0.01).needs();
    assert_eq!(
        (owners[2].key.id.as_str(), owners[2].limit),
        (user.id.as_str(), 2.0)
    );
}
