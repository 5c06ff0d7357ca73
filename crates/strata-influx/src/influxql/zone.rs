//! `tz('Area/City')` (InfluxDB 1.8): the zone's UTC offset at an instant,
//! GROUP BY time window starts aligned in local time, and RFC3339 times
//! printed with the zone's offset. Window alignment follows InfluxDB's
//! `IteratorOptions.Window`: truncate the local time to the interval, then
//! move the start by the change of offset between the point and the start
//! when that change is shorter than the interval (a day window across a
//! DST change starts at local midnight; hour windows stay UTC-aligned).

use chrono::{Offset, TimeZone};
use chrono_tz::Tz;

use crate::influxql::time::{format_rfc3339, NS_PER_S};

/// The zone's offset from UTC at `t_ns`, in nanoseconds (0 outside chrono's range).
pub fn utc_offset_ns(zone: Tz, t_ns: i128) -> i128 {
    let seconds = t_ns.div_euclid(i128::from(NS_PER_S));
    let Ok(seconds) = i64::try_from(seconds) else { return 0 };
    match chrono::DateTime::from_timestamp(seconds, 0) {
        Some(utc) => {
            let offset = zone.offset_from_utc_datetime(&utc.naive_utc()).fix().local_minus_utc();
            i128::from(offset) * i128::from(NS_PER_S)
        }
        None => 0,
    }
}

/// The start of the window of `interval_ns` (after removing `offset_ns`)
/// holding `t_ns`, aligned in `zone`'s local time.
pub fn window_start(zone: Tz, interval_ns: i64, offset_ns: i64, t_ns: i64) -> i128 {
    let interval = i128::from(interval_ns);
    let t = i128::from(t_ns) - i128::from(offset_ns);
    let zone_ns = utc_offset_ns(zone, t);
    let mut start = t - (t + zone_ns).rem_euclid(interval);
    let change = zone_ns - utc_offset_ns(zone, start);
    if change != 0 && change.abs() < interval {
        start += change;
    }
    start + i128::from(offset_ns)
}

/// RFC3339 with the zone's offset at `ns` (`Z` where it is zero, as Go prints).
pub fn format_rfc3339_in(zone: Tz, ns: i64) -> String {
    let offset = utc_offset_ns(zone, i128::from(ns));
    let local = i64::try_from(i128::from(ns) + offset).unwrap_or(ns);
    let text = format_rfc3339(local);
    if offset == 0 {
        return text;
    }
    let minutes = (offset / i128::from(60 * NS_PER_S)) as i64;
    let sign = if minutes < 0 { '-' } else { '+' };
    let (h, m) = (minutes.abs() / 60, minutes.abs() % 60);
    format!("{}{sign}{h:02}:{m:02}", text.trim_end_matches('Z'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2021-03-28: Paris moves from +01:00 to +02:00 at 01:00Z.
    #[test]
    fn paris_day_windows_start_at_local_midnight_across_dst() {
        let paris: Tz = "Europe/Paris".parse().unwrap();
        let day = 86_400 * NS_PER_S;
        let mar28_00z = 1_616_889_600 * NS_PER_S;
        // 2021-03-28T23:30Z is 01:30 on the 29th (+02:00): midnight there is 22:00Z on the 28th.
        let t = mar28_00z + 23 * 3_600 * NS_PER_S + 1_800 * NS_PER_S;
        assert_eq!(window_start(paris, day, 0, t), i128::from(mar28_00z - 2 * 3_600 * NS_PER_S + day));
        // 2021-03-27T23:00Z is midnight on the 28th (+01:00).
        let t = mar28_00z - 3_600 * NS_PER_S;
        assert_eq!(window_start(paris, day, 0, t), i128::from(t));
        assert_eq!(format_rfc3339_in(paris, t), "2021-03-28T00:00:00+01:00");
        assert_eq!(format_rfc3339_in(paris, mar28_00z + 2 * 3_600 * NS_PER_S), "2021-03-28T04:00:00+02:00");
        assert_eq!(format_rfc3339_in(chrono_tz::UTC, t), "2021-03-27T23:00:00Z");
    }
}
