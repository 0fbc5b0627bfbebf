//! Test support for the stream mappers (SPEC R1.2): an SSE event from its name and data, and
//! the two agreement tests every mapper with a fast reading runs (issue 17).

use crate::wire::sse::SseEventRef;

/// The SSE event `name` carrying `data`, without id or retry.
pub(crate) fn sse<'a>(name: &'a str, data: &'a str) -> SseEventRef<'a> {
    SseEventRef {
        event: name,
        data,
        id: None,
        retry: None,
    }
}

/// The agreement tests of a parser with two readings
/// ([`TwoReadings`](crate::providers::agreement::TwoReadings)): every recorded event, and
/// one changed byte in any of them, maps alike through the fast reading and the general path.
macro_rules! agreement_tests {
    ($parser:ty) => {
        /// The fast reading maps every recorded event, and every changed copy of it, exactly as
        /// the general `serde_json::Value` path does (issue 17).
        #[test]
        fn the_fast_reading_agrees_with_the_general_path_on_every_recorded_event() {
            crate::providers::agreement::assert_agreement_on_recorded_events::<$parser>();
        }

        proptest::proptest! {
            #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

            /// One byte changed in any recorded event (the events before it as recorded): the
            /// fast reading and the general path still map it alike.
            #[test]
            fn one_changed_byte_in_a_recorded_event_maps_alike(
                file: proptest::sample::Index,
                event: proptest::sample::Index,
                at: proptest::sample::Index,
                edit: u8,
            ) {
                crate::providers::agreement::agreement_after_one_changed_byte::<$parser>(
                    file, event, at, edit,
                )?;
            }
        }
    };
}
pub(crate) use agreement_tests;
