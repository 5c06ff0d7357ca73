//! Line protocol points to events of a stream (DESIGN.md section 4,
//! "Events": a fixed schema of typed attributes and a timestamp): the
//! measurement names the stream, every field is an attribute, every
//! attribute must be given, tags are not allowed. Types match strictly
//! (InfluxDB's field types): `i64`/`i32` take integers (`10i`, or `10u`
//! within range), `f64`/`f32` take floats (`10.5`, `10`), `bool` takes
//! booleans, strings take strings of at most their length. A point that
//! does not fit is rejected with a reason naming the attribute.

use strata_events::event::{Event, Value};
use strata_events::schema::{AttrType, StreamSchema};
use strata_series::{FieldValue, LineRejection, Point};

fn kind(v: &FieldValue) -> &'static str {
    match v {
        FieldValue::Float(_) => "a float",
        FieldValue::Integer(_) => "an integer",
        FieldValue::Unsigned(_) => "an unsigned integer",
        FieldValue::Boolean(_) => "a boolean",
        FieldValue::String(_) => "a string",
    }
}

fn expects(ty: AttrType) -> String {
    match ty {
        AttrType::I64 => "i64 (an integer such as 10i)".into(),
        AttrType::I32 => "i32 (an integer such as 10i)".into(),
        AttrType::F64 => "f64 (a float such as 10.5)".into(),
        AttrType::F32 => "f32 (a float such as 10.5)".into(),
        AttrType::Bool => "bool (true or false)".into(),
        AttrType::FixedStr(len) => format!("a string of at most {len} bytes"),
    }
}

/// The attribute value for a field value, or why it does not fit.
fn value_for(stream: &str, attr: &str, ty: AttrType, v: &FieldValue) -> Result<Value, LineRejection> {
    let wrong = || {
        LineRejection::Unfit(format!(
            "attribute '{attr}' of stream '{stream}' is {}, got {}",
            expects(ty),
            kind(v)
        ))
    };
    let integer = match v {
        FieldValue::Integer(i) => Some(i128::from(*i)),
        FieldValue::Unsigned(u) => Some(i128::from(*u)),
        _ => None,
    };
    Ok(match (ty, v) {
        (AttrType::I64, _) if integer.is_some() => {
            Value::I64(i64::try_from(integer.unwrap_or(0)).map_err(|_| {
                LineRejection::Unfit(format!(
                    "attribute '{attr}' of stream '{stream}': {} is out of range for i64",
                    integer.unwrap_or(0)
                ))
            })?)
        }
        (AttrType::I32, _) if integer.is_some() => {
            Value::I32(i32::try_from(integer.unwrap_or(0)).map_err(|_| {
                LineRejection::Unfit(format!(
                    "attribute '{attr}' of stream '{stream}': {} is out of range for i32",
                    integer.unwrap_or(0)
                ))
            })?)
        }
        (AttrType::F64, FieldValue::Float(f)) => Value::F64(*f),
        (AttrType::F32, FieldValue::Float(f)) => {
            let narrow = *f as f32;
            if f.is_finite() && !narrow.is_finite() {
                return Err(LineRejection::Unfit(format!(
                    "attribute '{attr}' of stream '{stream}': {f} is out of range for f32"
                )));
            }
            Value::F32(narrow)
        }
        (AttrType::Bool, FieldValue::Boolean(b)) => Value::Bool(*b),
        (AttrType::FixedStr(len), FieldValue::String(s)) => {
            if s.len() > len as usize {
                return Err(LineRejection::Unfit(format!(
                    "attribute '{attr}' of stream '{stream}' holds at most {len} bytes, got {} bytes",
                    s.len()
                )));
            }
            if s.contains('\0') {
                return Err(LineRejection::Unfit(format!(
                    "attribute '{attr}' of stream '{stream}': strings may not contain NUL"
                )));
            }
            Value::Str(s.clone())
        }
        _ => return Err(wrong()),
    })
}

/// The event a point describes, or why the point does not fit the schema.
pub fn point_to_event(stream: &str, schema: &StreamSchema, point: &Point) -> Result<Event, LineRejection> {
    if let Some((key, _)) = point.tags.first() {
        return Err(LineRejection::Unfit(format!(
            "stream '{stream}' takes no tags (got tag '{key}'): write every attribute as a field"
        )));
    }
    let mut values: Vec<Option<Value>> = vec![None; schema.attr_count()];
    for (name, value) in &point.fields {
        let Some(i) = schema.index_of(name) else {
            let names: Vec<&str> = schema.attrs().iter().map(|a| a.name.as_str()).collect();
            return Err(LineRejection::Unfit(format!(
                "stream '{stream}' has no attribute '{name}' (its attributes: {})",
                names.join(", ")
            )));
        };
        if values[i].is_some() {
            return Err(LineRejection::Unfit(format!(
                "attribute '{name}' of stream '{stream}' is given twice"
            )));
        }
        values[i] = Some(value_for(stream, name, schema.attrs()[i].ty, value)?);
    }
    let mut out = Vec::with_capacity(values.len());
    for (attr, value) in schema.attrs().iter().zip(values) {
        match value {
            Some(v) => out.push(v),
            None => {
                return Err(LineRejection::Unfit(format!(
                    "missing attribute '{}' of stream '{stream}' (every event carries every attribute)",
                    attr.name
                )))
            }
        }
    }
    Ok(Event::new(point.timestamp_ns, out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_events::schema::Attr;

    fn schema() -> StreamSchema {
        StreamSchema::new(vec![
            Attr::new("n", AttrType::I32),
            Attr::new("x", AttrType::F64),
            Attr::new("ok", AttrType::Bool),
            Attr::new("sym", AttrType::FixedStr(3)),
        ])
        .unwrap()
    }

    fn point(fields: Vec<(&str, FieldValue)>, tags: Vec<(&str, &str)>) -> Point {
        Point {
            measurement: "s".into(),
            tags: tags.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
            fields: fields.into_iter().map(|(k, v)| (k.into(), v)).collect(),
            timestamp_ns: 7,
        }
    }

    fn good() -> Vec<(&'static str, FieldValue)> {
        vec![
            ("sym", FieldValue::String("abc".into())),
            ("x", FieldValue::Float(1.5)),
            ("n", FieldValue::Integer(-4)),
            ("ok", FieldValue::Boolean(true)),
        ]
    }

    #[test]
    fn fields_in_any_order_become_the_event() {
        let e = point_to_event("s", &schema(), &point(good(), vec![])).unwrap();
        assert_eq!(e.ts, 7);
        assert_eq!(
            e.values,
            vec![Value::I32(-4), Value::F64(1.5), Value::Bool(true), Value::Str("abc".into())]
        );
    }

    #[test]
    fn every_misfit_is_named() {
        let s = schema();
        let err = |fields: Vec<(&str, FieldValue)>, tags| {
            point_to_event("s", &s, &point(fields, tags)).unwrap_err().to_string()
        };
        assert!(err(good(), vec![("host", "a")]).contains("takes no tags (got tag 'host')"));
        let mut f = good();
        f.push(("y", FieldValue::Float(1.0)));
        assert!(err(f, vec![]).contains("has no attribute 'y' (its attributes: n, x, ok, sym)"));
        let mut f = good();
        f.pop();
        assert!(err(f, vec![]).contains("missing attribute 'ok'"));
        let mut f = good();
        f[1].1 = FieldValue::Integer(3);
        assert!(err(f, vec![])
            .contains("attribute 'x' of stream 's' is f64 (a float such as 10.5), got an integer"));
        let mut f = good();
        f[0].1 = FieldValue::String("abcd".into());
        assert!(err(f, vec![]).contains("at most 3 bytes, got 4 bytes"));
        let mut f = good();
        f[2].1 = FieldValue::Integer(1 << 40);
        assert!(err(f, vec![]).contains("out of range for i32"));
        let mut f = good();
        f[2].1 = FieldValue::Unsigned(5);
        assert!(point_to_event("s", &s, &point(f, vec![])).is_ok(), "an in-range unsigned fits an i32");
    }
}
