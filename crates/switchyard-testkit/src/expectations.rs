//! The expectations of `tests/cases`: each `{id}.expected.json` (schema in
//! `tests/cases/README.md`, "H cases"), read for the table-driven tests that replay every case
//! through the provider layer and through the CLI.

/// Every `tests/cases/{id}.expected.json` as `(id, parsed JSON)`, sorted by id.
///
/// # Panics
///
/// If the folder cannot be read or a file is not JSON: the calling test fails, naming it.
pub fn case_expectations() -> Vec<(String, serde_json::Value)> {
    let dir = crate::test_data_dir().join("cases");
    let entries = std::fs::read_dir(&dir).expect("tests/cases cannot be read");
    let mut cases: Vec<(String, serde_json::Value)> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".expected.json").map(str::to_owned))
        .map(|id| {
            let path = dir.join(format!("{id}.expected.json"));
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let case = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
            (id, case)
        })
        .collect();
    cases.sort_by(|a, b| a.0.cmp(&b.0));
    cases
}
