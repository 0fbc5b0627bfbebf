//! `case_replies` against every `tests/cases/*.meta.json`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: failing loudly is the point

use std::time::Duration;

use switchyard_testkit::{AfterBody, HttpResponse, Split, case_replies, test_data_dir};

#[test]
fn test_data_dir_holds_fixtures_and_cases() {
    let dir = test_data_dir();
    assert!(
        dir.join("fixtures").join("anthropic_text.http").is_file(),
        "{}",
        dir.display()
    );
    assert!(
        dir.join("cases").join("C01.http").is_file(),
        "{}",
        dir.display()
    );
}

#[test]
fn every_meta_json_parses() {
    let cases = test_data_dir().join("cases");
    let mut ids = Vec::new();
    for entry in std::fs::read_dir(&cases).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(id) = name.strip_suffix(".meta.json") {
            ids.push(id.to_string());
        }
    }
    ids.sort();
    assert!(ids.len() >= 15, "found only {} meta files", ids.len());
    for id in &ids {
        let meta: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(cases.join(format!("{id}.meta.json"))).unwrap(),
        )
        .unwrap();
        let replies = case_replies(id);
        let files: Vec<String> = match meta["sequence"].as_array() {
            Some(seq) => seq
                .iter()
                .map(|f| f.as_str().unwrap().to_string())
                .collect(),
            None => vec![format!("{id}.http")],
        };
        assert_eq!(replies.len(), files.len(), "{id}");
        for (reply, file) in replies.iter().zip(&files) {
            let want = HttpResponse::load(cases.join(file));
            assert_eq!(reply.response, want, "{id}: {file}");
            assert_eq!(reply.delay_before, Duration::ZERO);
            assert_eq!(reply.write_gap, Duration::ZERO);
            assert!(reply.stall_at.is_none() && reply.drop_at.is_none());
            let own = *file == format!("{id}.http");
            let expected_after = match (own, meta["after_body"].as_str()) {
                (true, Some("hold_open")) => AfterBody::HoldOpen(Duration::from_secs_f64(
                    meta["hold_open_seconds"].as_f64().unwrap_or(600.0),
                )),
                (true, Some("reset")) => AfterBody::Reset,
                _ => AfterBody::Close,
            };
            assert_eq!(reply.after_body, expected_after, "{id}: {file}");
            let expected_split = match (own, meta["splits"].as_array()) {
                (true, Some(offsets)) if !offsets.is_empty() => Split::At(
                    offsets
                        .iter()
                        .map(|o| o.as_u64().unwrap() as usize)
                        .collect(),
                ),
                _ => Split::Whole,
            };
            assert_eq!(reply.split, expected_split, "{id}: {file}");
        }
    }
}

#[test]
fn known_cases_have_the_expected_scripts() {
    let after = |id: &str| -> Vec<AfterBody> {
        case_replies(id).into_iter().map(|r| r.after_body).collect()
    };
    let hold = AfterBody::HoldOpen(Duration::from_secs(600));
    assert_eq!(after("C33"), [hold.clone(), AfterBody::Close]);
    assert_eq!(after("C33b"), [hold]);
    assert_eq!(after("C31"), [AfterBody::Reset]);
    assert_eq!(after("C34"), [AfterBody::Reset, AfterBody::Close]);
    assert_eq!(
        after("C04"),
        [AfterBody::Close, AfterBody::Close, AfterBody::Close]
    );
    let c04: Vec<u16> = case_replies("C04")
        .iter()
        .map(|r| r.response.status())
        .collect();
    assert_eq!(c04, [529, 529, 200]);
    assert_eq!(case_replies("C16").len(), 4);
}

#[test]
fn cases_without_meta_are_a_single_reply() {
    for id in ["C01", "C10", "C37.http"] {
        let replies = case_replies(id);
        assert_eq!(replies.len(), 1);
        assert_eq!(
            replies[0].response,
            HttpResponse::case(id.trim_end_matches(".http"))
        );
        assert_eq!(replies[0].after_body, AfterBody::Close);
        assert_eq!(replies[0].split, Split::Whole);
    }
}

#[test]
fn response_accessors_on_shared_files() {
    let r = HttpResponse::fixture("anthropic_429");
    assert_eq!(r.status(), 429);
    assert_eq!(r.header("Retry-After").as_deref(), Some("17"));
    assert_eq!(
        r.header("content-length")
            .unwrap()
            .parse::<usize>()
            .unwrap(),
        r.body.len()
    );
    let gemini = HttpResponse::fixture("gemini_stream");
    // Split at the first blank line only: the body keeps its own CRLF pairs.
    assert!(gemini.head.ends_with(b"\r\n\r\n"));
    assert!(gemini.body.windows(4).any(|w| w == b"\r\n\r\n"));
    assert_eq!(gemini.header("vary").as_deref(), Some("Origin"));
    assert_eq!(HttpResponse::case("C38").status(), 404);
}
