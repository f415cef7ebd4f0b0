//! A custom connector's OpenAPI document, as an account uploads it: any JSON is answered with
//! tools or a typed error, never a panic, and the tools it yields are well formed.
#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use platform_domain::custom::{MAX_TOOLS, openapi::derive};

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    if let Ok(derived) = derive("fuzz", &doc, Some("https://api.example.com/openapi.json")) {
        assert!(derived.tools.len() <= MAX_TOOLS);
        let mut names = HashSet::new();
        for t in &derived.tools {
            assert!(t.name.starts_with("custom.fuzz."), "{}", t.name);
            assert!(names.insert(t.name.as_str()), "duplicate tool {}", t.name);
        }
    }
});
