//! Stalls: tasks that still need ratings but that too few people could give now, so a
//! batch stops short of done while every rater is told there is nothing for them.
//!
//! A task is *stuck* when it needs more ratings (its overlap, plus any rater adaptive
//! overlap added, less the ratings and open assignments it has) than there are people who
//! could take it now: active, allowed on the batch, not failed its qualification, holding
//! the task's skill where the batch routes strictly (see [`crate::routing::skills_for`]),
//! and not having rated, skipped or taken it already. Tasks are looked at in groups that
//! share who could take them: one group for a batch that does not route strictly, one per
//! route key (and one for tasks without a key) for a batch that does. Each group's stuck
//! tasks are put down to one reason, with what would unstick them.

use std::collections::BTreeMap;

use serde::Serialize;

/// Why a group's tasks are stuck.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The batch routes strictly and nobody who may rate it has the task's skill.
    NoRaterWithSkill,
    /// Some who would do failed the batch's qualification.
    RatersDisqualified,
    /// Everyone who could take them has had them, or there are fewer such people than the
    /// ratings still needed.
    TooFewRaters,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NoRaterWithSkill => "no_rater_with_skill",
            Reason::RatersDisqualified => "raters_disqualified",
            Reason::TooFewRaters => "too_few_raters",
        }
    }

    /// The reason of a group whose tasks are stuck, from how many of those who could
    /// take its tasks are left (`able`), and how many more would be if they had not
    /// failed the qualification (`disqualified`). `key` is the group's route key under
    /// strict routing.
    pub fn of(key: Option<&str>, able: usize, disqualified: usize) -> Self {
        match (key, able, disqualified) {
            (_, _, 1..) => Reason::RatersDisqualified,
            (Some(_), 0, 0) => Reason::NoRaterWithSkill,
            _ => Reason::TooFewRaters,
        }
    }
}

/// One group of stuck tasks.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct StalledGroup {
    /// The route key its tasks share under strict routing (`null`: tasks without a key,
    /// or a batch that does not route strictly).
    pub key: Option<String>,
    pub tasks: i64,
    pub reason: Reason,
    /// The most ratings one of its tasks is short of, beyond what the people who could
    /// take it can give: how many more raters (with the skill, where one is named) it takes.
    pub raters_needed: i64,
    /// What would unstick them, in words.
    pub remedy: String,
}

impl StalledGroup {
    pub fn new(key: Option<String>, tasks: i64, reason: Reason, raters_needed: i64) -> Self {
        let more = |n: i64| {
            if n == 1 {
                "1 more rater".to_owned()
            } else {
                format!("{n} more raters")
            }
        };
        let skill = key
            .as_deref()
            .map_or(String::new(), |k| format!(" with the skill {k}"));
        let remedy = match reason {
            Reason::NoRaterWithSkill => format!(
                "give {} the skill {} (or route this batch by preference)",
                if raters_needed == 1 {
                    "a rater allowed on this batch".to_owned()
                } else {
                    format!("{raters_needed} raters allowed on this batch")
                },
                key.as_deref().unwrap_or_default()
            ),
            Reason::RatersDisqualified => format!(
                "raters{skill} failed the qualification: add {}{skill}, or look at their tries",
                more(raters_needed)
            ),
            Reason::TooFewRaters => format!(
                "add {}{skill} to the batch, or lower its overlap",
                more(raters_needed)
            ),
        };
        Self {
            key,
            tasks,
            reason,
            raters_needed,
            remedy,
        }
    }
}

/// A batch's stuck tasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Stalled {
    /// How many tasks are stuck.
    pub tasks: i64,
    /// Stuck tasks by reason (`no_rater_with_skill`, `raters_disqualified`,
    /// `too_few_raters`).
    pub reasons: BTreeMap<String, i64>,
    /// Each group of stuck tasks, with what would unstick it.
    pub groups: Vec<StalledGroup>,
    /// The external ids of the first stuck tasks: group by group (by key, tasks without
    /// one first), in upload order within each.
    pub first: Vec<String>,
}

impl Stalled {
    /// Adds a group of stuck tasks (nothing for a group of none), with the first of them.
    pub fn add(&mut self, group: StalledGroup, first: Vec<String>, keep: usize) {
        if group.tasks == 0 {
            return;
        }
        self.tasks += group.tasks;
        *self
            .reasons
            .entry(group.reason.as_str().to_owned())
            .or_default() += group.tasks;
        self.groups.push(group);
        let room = keep.saturating_sub(self.first.len());
        self.first.extend(first.into_iter().take(room));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_names_what_holds_the_tasks() {
        assert_eq!(Reason::of(Some("rust"), 0, 0), Reason::NoRaterWithSkill);
        assert_eq!(Reason::of(Some("rust"), 0, 2), Reason::RatersDisqualified);
        assert_eq!(Reason::of(None, 1, 1), Reason::RatersDisqualified);
        assert_eq!(Reason::of(Some("rust"), 1, 0), Reason::TooFewRaters);
        assert_eq!(Reason::of(None, 0, 0), Reason::TooFewRaters);
    }

    #[test]
    fn groups_add_up_by_reason_and_say_what_would_unstick_them() {
        let mut stalled = Stalled::default();
        let rust = StalledGroup::new(Some("rust".into()), 3, Reason::NoRaterWithSkill, 2);
        assert_eq!(
            rust.remedy,
            "give 2 raters allowed on this batch the skill rust (or route this batch by preference)"
        );
        stalled.add(rust, vec!["t1".into(), "t2".into(), "t3".into()], 4);
        let few = StalledGroup::new(None, 2, Reason::TooFewRaters, 1);
        assert_eq!(
            few.remedy,
            "add 1 more rater to the batch, or lower its overlap"
        );
        stalled.add(few, vec!["t4".into(), "t5".into()], 4);
        stalled.add(
            StalledGroup::new(None, 0, Reason::TooFewRaters, 0),
            vec![],
            4,
        );
        assert_eq!(stalled.tasks, 5);
        assert_eq!(
            stalled.reasons,
            BTreeMap::from([
                ("no_rater_with_skill".to_owned(), 3),
                ("too_few_raters".to_owned(), 2)
            ])
        );
        assert_eq!(stalled.first, ["t1", "t2", "t3", "t4"]);
        assert_eq!(stalled.groups.len(), 2);
    }
}
