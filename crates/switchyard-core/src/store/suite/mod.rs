//! The test suite every [`TaskStore`] implementation passes (SPEC R13.1): each test is a
//! function of the store (or of a [`StoreFixture`] when it needs a second handle), and
//! [`task_store_suite!`] turns them into `#[tokio::test]`s for one backend:
//!
//! ```ignore
//! crate::store::suite::task_store_suite!(Some(SqliteFixture::new()));
//! ```
//!
//! `$fixture` gives an `Option`: `None` when the backend is not available here (after
//! `switchyard_testkit::skip_or_fail`, which fails in CI), and the test returns at once.
//!
//! A backend-specific test (a damaged file, a read-only file, a schema migration) stays beside
//! its backend. The tests are grouped by topic: `tasks.rs` (tasks, messages, events, R10),
//! `import.rs` (whole tasks and reference directories, R10.1, R10.3), `limits.rs` (the R12
//! state shared through the store, R13.2), `requests.rs` (the gateway's request log, R14.4), `responses.rs` (the gateway's stored
//! Responses, R14.1), `keys.rs` (client keys, teams and budget holds, R14.6, R14.7).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod audit;
mod fixture;
mod import;
pub(crate) mod keys;
mod leases;
mod limits;
mod lost;
mod requests;
mod responses;
mod tasks;
mod totals;
mod usage;
mod users;

pub(crate) use audit::{
    a_change_that_finds_nothing_writes_no_row, a_changed_budget_ends_the_leases_of_it,
    every_change_is_audited_once_with_its_actor_and_no_secret,
    pruning_the_audit_log_deletes_only_older_rows_oldest_first,
};
pub(crate) use fixture::StoreFixture;

pub(crate) use import::{
    a_directory_without_a_history_is_a_clear_error, a_reference_task_directory_is_imported,
    importing_a_taken_id_is_a_conflict_and_leaves_nothing_behind,
};
pub(crate) use keys::{
    a_batch_of_records_settles_its_holds_whole_and_pruning_keeps_budgets,
    client_keys_are_kept_as_hashes_revoked_and_rotated,
    holds_respect_key_team_gateway_and_parallel_caps_and_settle,
    holds_taken_at_once_by_many_connections_never_pass_the_budget,
};
pub(crate) use leases::{
    a_slot_row_holding_tokens_counts_a_request,
    leases_raced_for_by_three_handles_never_pass_the_budget,
    parallel_leases_and_holds_share_a_keys_limit,
    slot_leases_hold_the_limit_over_every_sliding_minute,
    store_check_finds_a_planted_difference_and_repairs_it,
};
pub(crate) use limits::{
    a_slot_of_a_vanished_process_ages_out_of_the_window,
    cooldowns_keep_the_later_end_and_every_connection_sees_them,
    learnt_limits_are_kept_per_key_and_make_requests_wait,
    rate_slots_are_taken_atomically_by_concurrent_connections, spend_is_summed_over_tasks_by_time,
};
pub(crate) use lost::lost_requests_are_charged_once_at_their_reservations;
pub(crate) use requests::gateway_requests_are_recorded_listed_newest_first_and_spent;
pub(crate) use responses::stored_responses_round_trip_conflict_and_expire;
pub(crate) use tasks::{
    a_resumed_task_records_its_model_and_its_merged_prompt,
    a_task_created_with_its_first_message_holds_it,
    a_task_round_trips_messages_events_usage_and_range,
    appending_at_a_taken_index_is_a_conflict_and_unknown_tasks_are_named,
    events_are_numbered_found_by_kind_and_deleted, task_ids_are_unique_within_one_millisecond,
    two_connections_write_the_same_store_without_losing_rows,
};
pub(crate) use totals::{
    a_refused_lease_still_holds_what_was_recorded_against_it,
    totals_follow_the_ledger_through_random_interleavings,
};
pub(crate) use usage::usage_is_summed_per_bucket_and_group_within_a_range;
pub(crate) use users::{
    a_key_names_its_owner_through_every_change, a_sign_in_makes_or_rewrites_one_user_audited,
    changing_a_keys_owner_moves_its_later_spend, first_sign_ins_at_once_make_one_user,
    holds_of_two_keys_share_their_owners_budget,
};

/// One `#[tokio::test]` per suite test, each on a fresh store from `$fixture` (an expression
/// giving an `Option` of a [`StoreFixture`]; `None` skips).
macro_rules! task_store_suite {
    ($fixture:expr) => {
        $crate::store::suite::task_store_suite!(@store $fixture;
            usage_is_summed_per_bucket_and_group_within_a_range,
            appending_at_a_taken_index_is_a_conflict_and_unknown_tasks_are_named,
            task_ids_are_unique_within_one_millisecond,
            a_task_created_with_its_first_message_holds_it,
            events_are_numbered_found_by_kind_and_deleted,
            a_resumed_task_records_its_model_and_its_merged_prompt,
            importing_a_taken_id_is_a_conflict_and_leaves_nothing_behind,
            a_reference_task_directory_is_imported,
            a_directory_without_a_history_is_a_clear_error,
            learnt_limits_are_kept_per_key_and_make_requests_wait,
            client_keys_are_kept_as_hashes_revoked_and_rotated,
            holds_respect_key_team_gateway_and_parallel_caps_and_settle,
            a_batch_of_records_settles_its_holds_whole_and_pruning_keeps_budgets,
            parallel_leases_and_holds_share_a_keys_limit,
            every_change_is_audited_once_with_its_actor_and_no_secret,
            a_change_that_finds_nothing_writes_no_row,
            a_changed_budget_ends_the_leases_of_it,
            pruning_the_audit_log_deletes_only_older_rows_oldest_first,
            a_sign_in_makes_or_rewrites_one_user_audited,
            a_key_names_its_owner_through_every_change,
            changing_a_keys_owner_moves_its_later_spend,
            lost_requests_are_charged_once_at_their_reservations,
            holds_of_two_keys_share_their_owners_budget,
            a_refused_lease_still_holds_what_was_recorded_against_it);
        $crate::store::suite::task_store_suite!(@fixture $fixture;
            a_task_round_trips_messages_events_usage_and_range,
            two_connections_write_the_same_store_without_losing_rows,
            cooldowns_keep_the_later_end_and_every_connection_sees_them,
            spend_is_summed_over_tasks_by_time,
            rate_slots_are_taken_atomically_by_concurrent_connections,
            a_slot_of_a_vanished_process_ages_out_of_the_window,
            gateway_requests_are_recorded_listed_newest_first_and_spent,
            stored_responses_round_trip_conflict_and_expire,
            holds_taken_at_once_by_many_connections_never_pass_the_budget,
            totals_follow_the_ledger_through_random_interleavings,
            leases_raced_for_by_three_handles_never_pass_the_budget,
            slot_leases_hold_the_limit_over_every_sliding_minute,
            a_slot_row_holding_tokens_counts_a_request,
            store_check_finds_a_planted_difference_and_repairs_it,
            first_sign_ins_at_once_make_one_user);
    };
    (@store $fixture:expr; $($name:ident),*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let Some(fixture) = $fixture else { return };
            let store = $crate::store::suite::StoreFixture::open(&fixture);
            $crate::store::suite::$name(&*store).await;
        }
    )*};
    (@fixture $fixture:expr; $($name:ident),*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let Some(fixture) = $fixture else { return };
            $crate::store::suite::$name(&fixture).await;
        }
    )*};
}
pub(crate) use task_store_suite;
