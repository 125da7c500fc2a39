//! Cron schedules as CronJobs read them (the standard five fields of robfig/cron, which
//! kube-controller-manager uses): `*`, `?`, `a-b`, lists, steps (`*/n`, `a-b/n`, `a/n`),
//! month and weekday names, `7` for Sunday, the `@yearly`, `@annually`, `@monthly`, `@weekly`,
//! `@daily`, `@midnight` and `@hourly` macros; day-of-month and day-of-week are OR-ed unless
//! one of them is a bare `*`. Pure functions.

use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;

/// A parsed schedule: one bit per allowed value of each field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    /// Day of month or day of week is `*`/`?` (then both must match, else either may).
    any_day_star: bool,
}

const MONTHS: &[&str] = &[
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: &[&str] = &["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// Parses one field; answers its bits and whether it is a bare star.
fn field(
    text: &str,
    min: u32,
    max: u32,
    names: &[&str],
    name_base: u32,
) -> Result<(u64, bool), String> {
    let value = |s: &str| -> Result<u32, String> {
        let lower = s.to_ascii_lowercase();
        if let Some(i) = names.iter().position(|n| *n == lower) {
            return Ok(i as u32 + name_base);
        }
        s.parse::<u32>()
            .map_err(|_| format!("failed to parse int from {s}: invalid syntax"))
    };
    let mut bits = 0u64;
    let mut star = false;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (
                r,
                Some(
                    s.parse::<u32>()
                        .map_err(|_| format!("failed to parse int from {s}: invalid syntax"))?,
                ),
            ),
            None => (part, None),
        };
        let (start, end, is_star) = if range == "*" || range == "?" {
            (min, max, true)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a)?, value(b)?, false)
        } else {
            let v = value(range)?;
            // `N/step` means `N-max/step`.
            (v, if step.is_some() { max } else { v }, false)
        };
        if start < min || end > max {
            return Err(format!(
                "end of range ({end}) above maximum ({max}): {part}"
            ));
        }
        if start > end {
            return Err(format!(
                "beginning of range ({start}) beyond end of range ({end}): {part}"
            ));
        }
        let step = step.unwrap_or(1);
        if step == 0 {
            return Err(format!("step of range should be a positive number: {part}"));
        }
        star |= is_star && step == 1;
        let mut v = start;
        while v <= end {
            bits |= 1 << v;
            v += step;
        }
    }
    Ok((bits, star))
}

/// Parses a schedule (5 fields or a macro), with robfig/cron's error wording.
pub fn parse(spec: &str) -> Result<Schedule, String> {
    let spec = spec.trim();
    let expanded = match spec {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        s if s.starts_with('@') => return Err(format!("unrecognized descriptor: {s}")),
        s => s,
    };
    let fields: Vec<&str> = expanded.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: {spec}",
            fields.len()
        ));
    }
    let (minutes, _) = field(fields[0], 0, 59, &[], 0)?;
    let (hours, _) = field(fields[1], 0, 23, &[], 0)?;
    let (days, day_star) = field(fields[2], 1, 31, &[], 0)?;
    let (months, _) = field(fields[3], 1, 12, MONTHS, 1)?;
    let (mut weekdays, weekday_star) = field(fields[4], 0, 7, WEEKDAYS, 0)?;
    // 7 is Sunday too.
    if weekdays & (1 << 7) != 0 {
        weekdays |= 1;
    }
    Ok(Schedule {
        minutes,
        hours,
        days,
        months,
        weekdays,
        any_day_star: day_star || weekday_star,
    })
}

impl Schedule {
    fn day_matches(&self, date: Date) -> bool {
        let dom = self.days & (1 << date.day()) != 0;
        let dow = self.weekdays & (1 << date.weekday().to_sunday_zero_offset()) != 0;
        if self.any_day_star {
            dom && dow
        } else {
            dom || dow
        }
    }

    /// The first scheduled time strictly after `after`, in the schedule's time zone.
    pub fn next_after(&self, after: jiff::Timestamp, tz: &TimeZone) -> Option<jiff::Timestamp> {
        let local = after.to_zoned(tz.clone()).datetime();
        let mut dt = DateTime::new(
            local.year(),
            local.month(),
            local.day(),
            local.hour(),
            local.minute(),
            0,
            0,
        )
        .ok()?
        .checked_add(jiff::SignedDuration::from_mins(1))
        .ok()?;
        // Months, days and hours are skipped whole, so a few thousand steps cover years.
        for _ in 0..100_000 {
            if self.months & (1 << dt.month()) == 0 {
                let first = dt.date().first_of_month();
                let next = first.checked_add(jiff::Span::new().months(1)).ok()?;
                dt = next.to_datetime(jiff::civil::Time::midnight());
                continue;
            }
            if !self.day_matches(dt.date()) {
                dt = dt
                    .date()
                    .tomorrow()
                    .ok()?
                    .to_datetime(jiff::civil::Time::midnight());
                continue;
            }
            if self.hours & (1 << dt.hour()) == 0 {
                let hour =
                    DateTime::new(dt.year(), dt.month(), dt.day(), dt.hour(), 0, 0, 0).ok()?;
                dt = hour.checked_add(jiff::SignedDuration::from_hours(1)).ok()?;
                continue;
            }
            if self.minutes & (1 << dt.minute()) == 0 {
                dt = dt.checked_add(jiff::SignedDuration::from_mins(1)).ok()?;
                continue;
            }
            let at = tz.to_ambiguous_timestamp(dt).compatible().ok()?;
            if at > after {
                return Some(at);
            }
            dt = dt.checked_add(jiff::SignedDuration::from_mins(1)).ok()?;
        }
        None
    }

    /// The latest scheduled time in `(earliest, now]` and how many there were (upstream
    /// `mostRecentScheduleTime`); the count stops at `limit`.
    pub fn most_recent(
        &self,
        earliest: jiff::Timestamp,
        now: jiff::Timestamp,
        tz: &TimeZone,
        limit: usize,
    ) -> (Option<jiff::Timestamp>, usize) {
        let mut latest = None;
        let mut count = 0;
        let mut t = earliest;
        while let Some(next) = self.next_after(t, tz) {
            if next > now || count >= limit {
                break;
            }
            latest = Some(next);
            count += 1;
            t = next;
        }
        (latest, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> jiff::Timestamp {
        s.parse().expect("timestamp")
    }

    #[test]
    fn next_times() {
        let utc = TimeZone::UTC;
        let cases = [
            ("* * * * *", "2024-05-01T10:00:30Z", "2024-05-01T10:01:00Z"),
            ("* * * * *", "2024-05-01T10:00:00Z", "2024-05-01T10:01:00Z"),
            (
                "*/15 * * * *",
                "2024-05-01T10:07:00Z",
                "2024-05-01T10:15:00Z",
            ),
            (
                "*/15 * * * *",
                "2024-05-01T10:45:00Z",
                "2024-05-01T11:00:00Z",
            ),
            ("5 4 * * *", "2024-05-01T10:00:00Z", "2024-05-02T04:05:00Z"),
            (
                "0 9-17/4 * * *",
                "2024-05-01T10:00:00Z",
                "2024-05-01T13:00:00Z",
            ),
            (
                "0 0 1,15 * *",
                "2024-05-02T00:00:00Z",
                "2024-05-15T00:00:00Z",
            ),
            (
                "0 0 * * mon",
                "2024-05-01T00:00:00Z",
                "2024-05-06T00:00:00Z",
            ),
            ("0 0 * * 7", "2024-05-01T00:00:00Z", "2024-05-05T00:00:00Z"),
            ("0 0 13 * 5", "2024-05-01T00:00:00Z", "2024-05-03T00:00:00Z"),
            (
                "0 0 * FEB *",
                "2024-05-01T00:00:00Z",
                "2025-02-01T00:00:00Z",
            ),
            ("0 0 29 2 *", "2024-03-01T00:00:00Z", "2028-02-29T00:00:00Z"),
            ("@hourly", "2024-05-01T10:59:59Z", "2024-05-01T11:00:00Z"),
            ("@daily", "2024-05-01T10:00:00Z", "2024-05-02T00:00:00Z"),
            ("@weekly", "2024-05-01T10:00:00Z", "2024-05-05T00:00:00Z"),
            ("@monthly", "2024-05-01T10:00:00Z", "2024-06-01T00:00:00Z"),
            ("@yearly", "2024-05-01T10:00:00Z", "2025-01-01T00:00:00Z"),
            (
                "30/10 * * * *",
                "2024-05-01T10:55:00Z",
                "2024-05-01T11:30:00Z",
            ),
        ];
        for (spec, after, expected) in cases {
            let schedule = parse(spec).expect(spec);
            assert_eq!(
                schedule.next_after(ts(after), &utc),
                Some(ts(expected)),
                "{spec} after {after}"
            );
        }
    }

    #[test]
    fn time_zones_shift_the_schedule() {
        let tz = TimeZone::get("Asia/Tokyo").expect("bundled time zone");
        let schedule = parse("0 9 * * *").expect("parse");
        assert_eq!(
            schedule.next_after(ts("2024-05-01T00:30:00Z"), &tz),
            Some(ts("2024-05-02T00:00:00Z"))
        );
    }

    #[test]
    fn bad_schedules_are_refused() {
        for spec in [
            "* * * *",
            "60 * * * *",
            "* 24 * * *",
            "* * 0 * *",
            "*/0 * * * *",
            "5-1 * * * *",
            "x * * * *",
            "@reboot",
            "* * * * * *",
        ] {
            assert!(parse(spec).is_err(), "{spec}");
        }
    }

    #[test]
    fn most_recent_counts_missed_times() {
        let schedule = parse("*/5 * * * *").expect("parse");
        let (latest, count) = schedule.most_recent(
            ts("2024-05-01T10:00:00Z"),
            ts("2024-05-01T10:17:00Z"),
            &TimeZone::UTC,
            100,
        );
        assert_eq!(latest, Some(ts("2024-05-01T10:15:00Z")));
        assert_eq!(count, 3);
        let (none, _) = schedule.most_recent(
            ts("2024-05-01T10:00:00Z"),
            ts("2024-05-01T10:04:00Z"),
            &TimeZone::UTC,
            100,
        );
        assert_eq!(none, None);
    }
}
