//! How a task is named to whoever works on it: the rules beside the role, with no store
//! behind them (which batches someone may see is the store's query, in the app).

use crate::role::Role;

/// Whether someone of `role` is shown the external ids of a batch's tasks: leads and
/// admins always, raters only where the batch says so. An external id can name a
/// benchmark task a rater could look up, and ids that raters compare tell shared (gold)
/// tasks apart; a rater otherwise knows each task by its number among their own.
pub fn sees_external_ids(role: Role, raters_see_external_ids: bool) -> bool {
    role.can_lead() || raters_see_external_ids
}

/// How a task is named to someone working on it: its external id where they may see it
/// (`sees`, from [`sees_external_ids`]), else `Task N`, N counting their own tasks of
/// the batch in the order they were handed out.
pub fn task_name(sees: bool, external_id: &str, number: i64) -> String {
    if sees {
        external_id.to_owned()
    } else {
        format!("Task {number}")
    }
}

/// How a page heads a task named by [`task_name`]: "task d1" for an external id, and a
/// neutral name ("Task 3") as it is, so it never reads "task Task 3".
pub fn task_heading(name: &str) -> String {
    let neutral = name
        .strip_prefix("Task ")
        .is_some_and(|n| n.parse::<u64>().is_ok());
    if neutral {
        name.to_owned()
    } else {
        format!("task {name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raters_know_a_task_by_its_number_unless_the_batch_shows_ids() {
        assert!(!sees_external_ids(Role::Rater, false));
        assert!(sees_external_ids(Role::Rater, true));
        assert!(sees_external_ids(Role::Lead, false));
        assert_eq!(task_name(false, "humaneval-12", 3), "Task 3");
        assert_eq!(task_name(true, "humaneval-12", 3), "humaneval-12");
        assert_eq!(task_heading("Task 3"), "Task 3");
        assert_eq!(task_heading("humaneval-12"), "task humaneval-12");
        assert_eq!(task_heading("Task three"), "task Task three");
    }
}
