//! The retention policy rules against InfluxDB 1.8's meta behaviour:
//! defaults, shard group durations, refusals and their messages.

use super::*;

const H: i64 = NS_PER_HOUR;

fn spec(duration_h: Option<i64>, replication: Option<u32>) -> PolicySpec {
    PolicySpec { duration_ns: duration_h.map(|h| h * H), replication, ..PolicySpec::default() }
}

fn create(name: &str, spec: PolicySpec) -> RetentionChange {
    RetentionChange::Create { name: name.into(), spec }
}

#[test]
fn a_database_starts_with_autogen_infinite_and_default() {
    let r = DbRetention::autogen();
    let p = r.default_policy().unwrap();
    assert_eq!(
        (p.name.as_str(), p.duration_ns, p.shard_group_duration_ns, p.replication),
        (AUTOGEN, 0, 168 * H, 1)
    );
}

#[test]
fn shard_group_durations_follow_the_policy_duration() {
    assert_eq!(shard_group_duration(0), 168 * H);
    assert_eq!(shard_group_duration(H), H);
    assert_eq!(shard_group_duration(48 * H), 24 * H);
    assert_eq!(shard_group_duration(180 * 24 * H), 168 * H);
    let p = PolicySpec { shard_duration_ns: Some(H / 2), ..spec(Some(3), Some(1)) }.new_policy("x");
    assert_eq!(p.shard_group_duration_ns, H, "a shard duration below 1h becomes 1h");
}

#[test]
fn create_alter_drop_follow_influxdb() {
    let mut r = DbRetention::autogen();
    let week = PolicySpec { make_default: true, ..spec(Some(168), Some(1)) };
    r.apply(&create("week", week.clone())).unwrap();
    assert_eq!(r.default.as_deref(), Some("week"));
    assert_eq!(r.policies.len(), 2);
    r.apply(&create("week", week)).unwrap();
    assert_eq!(r.policies.len(), 2, "the same settings again are no error");
    assert_eq!(r.apply(&create("week", spec(Some(24), Some(1)))), Err(RetentionError::Exists));
    assert_eq!(r.apply(&create("short", spec(Some(0), Some(1)))), Ok(()));
    let too_low = PolicySpec { duration_ns: Some(H - 1), ..PolicySpec::default() };
    assert_eq!(r.apply(&create("tiny", too_low.clone())), Err(RetentionError::DurationTooLow));
    assert_eq!(r.apply(&create("zero", spec(Some(2), Some(0)))), Err(RetentionError::ReplicationZero));
    let alter = |name: &str, spec| RetentionChange::Alter { name: name.into(), spec };
    assert_eq!(r.apply(&alter("nope", spec(Some(2), None))), Err(RetentionError::NotFound));
    assert_eq!(r.apply(&alter("week", too_low)), Err(RetentionError::DurationTooLow));
    let shard = PolicySpec { shard_duration_ns: Some(48 * H), ..PolicySpec::default() };
    assert_eq!(
        r.apply(&alter("week", PolicySpec { duration_ns: Some(24 * H), ..shard })),
        Err(RetentionError::IncompatibleDurations)
    );
    let two_hours = PolicySpec { duration_ns: Some(2 * H), make_default: true, ..PolicySpec::default() };
    assert_eq!(
        r.apply(&alter("autogen", two_hours.clone())),
        Err(RetentionError::IncompatibleDurations),
        "168h shards"
    );
    r.apply(&alter("autogen", PolicySpec { shard_duration_ns: Some(H), ..two_hours })).unwrap();
    assert_eq!(r.default_policy().map(|p| p.duration_ns), Some(2 * H));
    r.apply(&RetentionChange::Drop { name: "autogen".into() }).unwrap();
    r.apply(&RetentionChange::Drop { name: "autogen".into() }).unwrap();
    assert_eq!(r.default_policy(), None, "dropping the default leaves none");
    assert_eq!(r.policies.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["week", "short"]);
}

#[test]
fn create_database_with_replaces_autogen_or_must_match() {
    let mut r = DbRetention::autogen();
    let with = |name: Option<&str>, spec, created| RetentionChange::DatabaseWith {
        name: name.map(Into::into),
        spec,
        created,
    };
    r.apply(&with(Some("day"), spec(Some(24), None), true)).unwrap();
    assert_eq!(r.policies.len(), 1);
    assert_eq!(r.default_policy().map(|p| (p.name.as_str(), p.duration_ns)), Some(("day", 24 * H)));
    assert_eq!(r.apply(&with(Some("day"), spec(Some(24), None), false)), Ok(()));
    assert_eq!(r.apply(&with(Some("day"), spec(Some(48), None), false)), Err(RetentionError::Conflict));
    assert_eq!(r.apply(&with(None, spec(None, None), false)), Err(RetentionError::Conflict));
    assert_eq!(r.apply(&with(None, spec(Some(0), None), true).clone()), Ok(()));
    assert_eq!(r.default_policy().map(|p| p.name.as_str()), Some(AUTOGEN));
}

#[test]
fn messages_are_influxdbs() {
    assert_eq!(
        RetentionError::DurationTooLow.to_string(),
        "retention policy duration must be at least 1h0m0s"
    );
    assert_eq!(RetentionError::NotFound.to_string(), "retention policy not found");
    assert_eq!(RetentionError::Exists.to_string(), "retention policy already exists");
}
