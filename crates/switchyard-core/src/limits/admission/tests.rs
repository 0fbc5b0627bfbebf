//! Unit tests of slices: what a lease call asks and how its answer is applied (issue 41).
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
    // 0.5 taken stays covered.
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
