//! The primary rubric: executability, instruction following and correctness for each
//! response, then a 1-7 side-by-side preference, with explanations where the answer
//! calls for one.

use std::sync::LazyLock;

use super::{Choice, Explain, Field, Kind, Rubric};
use crate::metrics::agreement::Level;

fn choice(value: &'static str, label: &'static str) -> Choice {
    Choice { value, label }
}

static BLACKHAT: LazyLock<Rubric> = LazyLock::new(|| Rubric {
    name: "blackhat",
    title: "Side-by-side review of two answers",
    per_response: vec![
        Field {
            key: "executability",
            label: "Could you run the code?",
            help: "Run the code yourself where you can. Partially: only some of it ran, or \
                   only after changes.",
            kind: Kind::Choice {
                options: vec![
                    choice("yes_fully", "Yes, fully"),
                    choice("yes_partially", "Yes, partially"),
                    choice("no", "No"),
                    choice("no_code", "No code present"),
                ],
            },
            explain: Explain::OnValues(vec!["yes_partially", "no"]),
            explain_prompt: "What could not be run, and why?",
            level: Level::Nominal,
            unscaled: vec![],
        },
        Field {
            key: "instruction_following",
            label: "Instruction following",
            help: "Did the answer do what the prompt asked, in the form it asked for \
                   (language, length, format, constraints)?",
            kind: Kind::Choice {
                options: vec![
                    choice("no_issues", "No issues"),
                    choice("minor_issues", "Minor issue(s)"),
                    choice("major_issues", "Major issue(s)"),
                    choice("not_applicable", "N/A"),
                ],
            },
            explain: Explain::OnValues(vec!["minor_issues", "major_issues"]),
            explain_prompt: "Which instructions were missed or bent?",
            level: Level::Ordinal,
            unscaled: vec!["not_applicable"],
        },
        Field {
            key: "correctness",
            label: "Correctness",
            help: "Is the code and the explanation right? Minor: small mistakes that are easy \
                   to fix. Major: wrong results, crashes, or misleading claims.",
            kind: Kind::Choice {
                options: vec![
                    choice("no_issues", "No issues"),
                    choice("minor_issues", "Minor issue(s)"),
                    choice("major_issues", "Major issue(s)"),
                    choice("cannot_assess", "Cannot assess"),
                    choice("not_applicable", "N/A"),
                ],
            },
            explain: Explain::OnValues(vec!["minor_issues", "major_issues"]),
            explain_prompt: "What is wrong, and where?",
            level: Level::Ordinal,
            unscaled: vec!["cannot_assess", "not_applicable"],
        },
    ],
    pair: vec![Field {
        key: "sxs",
        label: "Which answer is better overall?",
        help: "1 = A is much better, 4 = about the same, 7 = B is much better.",
        kind: Kind::Scale {
            min: 1,
            max: 7,
            labels: vec![
                "A much better",
                "A better",
                "A slightly better",
                "About the same",
                "B slightly better",
                "B better",
                "B much better",
            ],
        },
        explain: Explain::Always,
        explain_prompt: "Why? Name the differences that decided it.",
        level: Level::Ordinal,
        unscaled: vec![],
    }],
});

pub fn rubric() -> &'static Rubric {
    &BLACKHAT
}
