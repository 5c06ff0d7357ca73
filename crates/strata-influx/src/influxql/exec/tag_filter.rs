//! Which tag sets a WHERE clause can match, from the measurement's tag
//! postings (issue 21, item 3; [`strata_series::tag_index`]): `tag = 'v'`
//! is its posting list, AND intersects, OR unites. Anything else (a field
//! comparison, `!=`, a regex, `tag = ''`, which a tag set lacking the tag
//! matches) leaves every tag set possible. The result is a superset: the
//! planner still evaluates the whole condition on each candidate.

use strata_series::tag_index::{MeasurementTags, TagSetNo};

use super::condition::{Cond, Val};
use crate::influxql::ast::BinaryOp;

/// The tag sets `cond` may match, ascending; `None`: any of them.
pub fn candidate_tagsets(cond: &Cond, tags: &MeasurementTags) -> Option<Vec<TagSetNo>> {
    match cond {
        Cond::Binary(BinaryOp::Eq, l, r) => match (l.as_ref(), r.as_ref()) {
            (Cond::Tag(key), Cond::Lit(Val::Str(value))) | (Cond::Lit(Val::Str(value)), Cond::Tag(key))
                if !value.is_empty() =>
            {
                Some(tags.with_tag(key, value).to_vec())
            }
            _ => None,
        },
        Cond::Binary(BinaryOp::And, l, r) => match (candidate_tagsets(l, tags), candidate_tagsets(r, tags)) {
            (Some(a), Some(b)) => Some(intersect(&a, &b)),
            (Some(one), None) | (None, Some(one)) => Some(one),
            (None, None) => None,
        },
        Cond::Binary(BinaryOp::Or, l, r) => {
            Some(unite(&candidate_tagsets(l, tags)?, &candidate_tagsets(r, tags)?))
        }
        _ => None,
    }
}

fn intersect(a: &[TagSetNo], b: &[TagSetNo]) -> Vec<TagSetNo> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

fn unite(a: &[TagSetNo], b: &[TagSetNo]) -> Vec<TagSetNo> {
    let mut out: Vec<TagSetNo> = a.iter().chain(b).copied().collect();
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use strata_series::{FieldType, SeriesId, SeriesInfo};

    use super::*;

    fn tags() -> MeasurementTags {
        let series: Vec<SeriesInfo> = [("a", "eu"), ("b", "eu"), ("c", "us"), ("d", "us")]
            .iter()
            .enumerate()
            .map(|(i, (host, region))| SeriesInfo {
                id: SeriesId(i as u64),
                measurement: "cpu".into(),
                tags: vec![("host".into(), host.to_string()), ("region".into(), region.to_string())],
                field: "usage".into(),
                field_type: FieldType::Float,
            })
            .collect();
        MeasurementTags::from_series(&series)
    }

    fn eq(key: &str, value: &str) -> Cond {
        Cond::Binary(
            BinaryOp::Eq,
            Box::new(Cond::Tag(key.into())),
            Box::new(Cond::Lit(Val::Str(value.into()))),
        )
    }

    fn op(op: BinaryOp, l: Cond, r: Cond) -> Cond {
        Cond::Binary(op, Box::new(l), Box::new(r))
    }

    #[test]
    fn equalities_use_postings_and_combine_by_and_and_or() {
        let t = tags();
        assert_eq!(candidate_tagsets(&eq("host", "b"), &t), Some(vec![1]));
        let reversed = Cond::Binary(
            BinaryOp::Eq,
            Box::new(Cond::Lit(Val::Str("c".into()))),
            Box::new(Cond::Tag("host".into())),
        );
        assert_eq!(candidate_tagsets(&reversed, &t), Some(vec![2]));
        let either = op(BinaryOp::Or, eq("host", "d"), eq("host", "a"));
        assert_eq!(candidate_tagsets(&either, &t), Some(vec![0, 3]));
        let both = op(BinaryOp::And, either, eq("region", "us"));
        assert_eq!(candidate_tagsets(&both, &t), Some(vec![3]));
        assert_eq!(candidate_tagsets(&eq("host", "zz"), &t), Some(vec![]));
    }

    #[test]
    fn what_postings_cannot_answer_leaves_every_tag_set_possible() {
        let t = tags();
        let field = op(BinaryOp::Gt, Cond::Field(0), Cond::Lit(Val::Float(90.0)));
        assert_eq!(candidate_tagsets(&field, &t), None);
        assert_eq!(candidate_tagsets(&eq("host", ""), &t), None, "a missing tag reads as ''");
        assert_eq!(
            candidate_tagsets(
                &op(BinaryOp::Neq, Cond::Tag("host".into()), Cond::Lit(Val::Str("a".into()))),
                &t
            ),
            None
        );
        assert_eq!(candidate_tagsets(&op(BinaryOp::Or, eq("host", "a"), field), &t), None);
        let field = op(BinaryOp::Gt, Cond::Field(0), Cond::Lit(Val::Float(90.0)));
        assert_eq!(candidate_tagsets(&op(BinaryOp::And, field, eq("host", "a")), &t), Some(vec![0]));
    }
}
