//! Timestamp precision of a line protocol write (the `precision=` query
//! parameter of InfluxDB's `/write` endpoint) and the scaling of timestamps
//! between that unit and nanoseconds.

/// The unit of the timestamps in a line protocol body.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Precision {
    Nanoseconds,
    Microseconds,
    Milliseconds,
    Seconds,
    Minutes,
    Hours,
}

impl Precision {
    /// Every precision, finest first.
    pub const ALL: [Precision; 6] = [
        Precision::Nanoseconds,
        Precision::Microseconds,
        Precision::Milliseconds,
        Precision::Seconds,
        Precision::Minutes,
        Precision::Hours,
    ];

    /// Parses a `precision=` query value. Accepts InfluxDB 1.x names
    /// (`n`, `u`, `ms`, `s`, `m`, `h`), the 2.x names (`ns`, `us`, `ms`,
    /// `s`) and `µ` / `µs`. The empty string is nanoseconds, as in InfluxDB
    /// 1.x where `precision=` with no value means the default. Anything else
    /// is `None` (InfluxDB answers 400 "invalid precision").
    pub fn parse(s: &str) -> Option<Precision> {
        Some(match s {
            "" | "n" | "ns" => Precision::Nanoseconds,
            "u" | "us" | "µ" | "µs" => Precision::Microseconds,
            "ms" => Precision::Milliseconds,
            "s" => Precision::Seconds,
            "m" => Precision::Minutes,
            "h" => Precision::Hours,
            _ => return None,
        })
    }

    /// Nanoseconds in one unit of this precision.
    pub fn nanos_per_unit(self) -> i64 {
        match self {
            Precision::Nanoseconds => 1,
            Precision::Microseconds => 1_000,
            Precision::Milliseconds => 1_000_000,
            Precision::Seconds => 1_000_000_000,
            Precision::Minutes => 60 * 1_000_000_000,
            Precision::Hours => 3_600 * 1_000_000_000,
        }
    }

    /// The InfluxDB 1.x name of this precision (`n`, `u`, `ms`, `s`, `m`,
    /// `h`), the form a 1.x server accepts in `precision=`.
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Nanoseconds => "n",
            Precision::Microseconds => "u",
            Precision::Milliseconds => "ms",
            Precision::Seconds => "s",
            Precision::Minutes => "m",
            Precision::Hours => "h",
        }
    }

    /// A timestamp in this unit as nanoseconds; `None` when it does not fit
    /// in an `i64`.
    pub fn units_to_nanos(self, units: i64) -> Option<i64> {
        units.checked_mul(self.nanos_per_unit())
    }

    /// Nanoseconds as a timestamp in this unit, truncated toward zero (as
    /// InfluxDB's clients do: `UnixNano() / multiplier`).
    pub fn nanos_to_units(self, nanos: i64) -> i64 {
        nanos / self.nanos_per_unit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_to_their_precision() {
        let table = [
            ("", Precision::Nanoseconds),
            ("n", Precision::Nanoseconds),
            ("ns", Precision::Nanoseconds),
            ("u", Precision::Microseconds),
            ("us", Precision::Microseconds),
            ("µ", Precision::Microseconds),
            ("µs", Precision::Microseconds),
            ("ms", Precision::Milliseconds),
            ("s", Precision::Seconds),
            ("m", Precision::Minutes),
            ("h", Precision::Hours),
        ];
        for (name, want) in table {
            assert_eq!(Precision::parse(name), Some(want), "{name:?}");
        }
        for bad in ["x", "S", "sec", "NS", "mu", " s", "d"] {
            assert_eq!(Precision::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn as_str_parses_back_and_units_grow() {
        let mut previous = 0;
        for p in Precision::ALL {
            assert_eq!(Precision::parse(p.as_str()), Some(p));
            assert!(p.nanos_per_unit() > previous);
            previous = p.nanos_per_unit();
        }
        assert_eq!(Precision::Hours.nanos_per_unit(), 3_600_000_000_000);
        assert_eq!(Precision::Minutes.nanos_per_unit(), 60_000_000_000);
    }

    #[test]
    fn scaling_checks_overflow_and_truncates_toward_zero() {
        assert_eq!(Precision::Seconds.units_to_nanos(2), Some(2_000_000_000));
        assert_eq!(Precision::Seconds.units_to_nanos(i64::MAX / 1_000_000_000 + 1), None);
        assert_eq!(Precision::Nanoseconds.units_to_nanos(i64::MIN), Some(i64::MIN));
        assert_eq!(Precision::Hours.units_to_nanos(-3), Some(-10_800_000_000_000));
        assert_eq!(Precision::Milliseconds.nanos_to_units(1_999_999), 1);
        assert_eq!(Precision::Milliseconds.nanos_to_units(-1_999_999), -1);
    }
}
