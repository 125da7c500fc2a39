//! Status conditions: build one, and upsert it so that `lastTransitionTime` only moves when
//! the status does and unchanged conditions cause no write.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// A condition with `status` `True`/`False`.
pub fn condition(
    type_: &str,
    status: bool,
    reason: &str,
    message: impl Into<String>,
    observed_generation: Option<i64>,
    now: Timestamp,
) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: if status { "True" } else { "False" }.to_owned(),
        reason: reason.to_owned(),
        message: message.into(),
        observed_generation,
        last_transition_time: Time(now),
    }
}

/// Inserts or updates `new` in `conditions` (by type); keeps the old transition time when the
/// status is unchanged. Returns whether anything but times changed.
pub fn upsert_condition(conditions: &mut Vec<Condition>, new: Condition) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(old) => {
            let changed = old.status != new.status
                || old.reason != new.reason
                || old.message != new.message
                || old.observed_generation != new.observed_generation;
            if changed {
                let keep_time = old.status == new.status;
                let time = old.last_transition_time.clone();
                *old = new;
                if keep_time {
                    old.last_transition_time = time;
                }
            }
            changed
        }
        None => {
            conditions.push(new);
            true
        }
    }
}

/// The condition of a type, if present.
pub fn find<'c>(conditions: &'c [Condition], type_: &str) -> Option<&'c Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn upsert_table() {
        let t0 = at("2025-01-01T00:00:00Z");
        let t1 = at("2025-01-02T00:00:00Z");
        let mut conditions = Vec::new();
        // (new condition, changed, expected transition time)
        let steps = [
            (condition("Valid", true, "Valid", "ok", None, t0), true, t0),
            (condition("Valid", true, "Valid", "ok", None, t1), false, t0),
            (
                condition("Valid", true, "Valid", "still ok", None, t1),
                true,
                t0,
            ),
            (
                condition("Valid", false, "Bad", "broken", None, t1),
                true,
                t1,
            ),
        ];
        for (i, (new, changed, time)) in steps.into_iter().enumerate() {
            assert_eq!(upsert_condition(&mut conditions, new), changed, "step {i}");
            assert_eq!(conditions.len(), 1);
            assert_eq!(conditions[0].last_transition_time, Time(time), "step {i}");
        }
        assert!(upsert_condition(
            &mut conditions,
            condition("Active", false, "OutOfTimeWindow", "", None, t1)
        ));
        assert_eq!(conditions.len(), 2);
        assert_eq!(
            find(&conditions, "Active").unwrap().reason,
            "OutOfTimeWindow"
        );
    }
}
