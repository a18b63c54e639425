//! The CSV importer: any bytes, read as a CSV upload.
//! Invariants: see `verdict_fuzz::tasks::check_file`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use verdict_fuzz::import::Format;
use verdict_fuzz::tasks::check_file;

fuzz_target!(|data: &[u8]| {
    check_file(Format::Csv, data);
});
