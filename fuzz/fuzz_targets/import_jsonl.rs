//! The JSON importers: any bytes, read as JSON Lines and as a JSON array.
//! Invariants: see `verdict_fuzz::tasks::check_file`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use verdict_fuzz::import::Format;
use verdict_fuzz::tasks::check_file;

fuzz_target!(|data: &[u8]| {
    check_file(Format::Jsonl, data);
    check_file(Format::JsonArray, data);
});
