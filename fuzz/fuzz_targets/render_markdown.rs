//! The Markdown renderer and its sanitiser, on any text: as Markdown, or (when it holds a
//! NUL, which splits messages) as a conversation, and when it is JSON as a stored prompt.
//! Invariants: see `verdict_fuzz::html::check_output`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use verdict_fuzz::html::check_output;
use verdict_fuzz::render;

fuzz_target!(|text: &str| {
    if text.contains('\0') {
        // Each message: its first line is the role (any text: unknown roles show as
        // user), the rest its content.
        let messages: Vec<Value> = text
            .split('\0')
            .map(|message| {
                let (role, content) = message.split_once('\n').unwrap_or(("user", message));
                json!({"role": role, "content": content})
            })
            .collect();
        let conversation = Value::Array(messages);
        check_output(&conversation, &render::prompt(&conversation));
    } else {
        check_output(&text, &render::markdown(text));
    }
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        check_output(&value, &render::prompt(&value));
    }
});
