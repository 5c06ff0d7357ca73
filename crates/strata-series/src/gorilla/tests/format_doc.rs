//! Keeps `docs/format/series-block.md` in agreement with the code: every
//! constant, the field type codes, both bucket tables and the worked example.

use crate::gorilla::delta::Bucket;
use crate::gorilla::floats::{
    FLOAT_FIRST_BITS, FLOAT_LEADING_ZEROS_BITS, FLOAT_MAX_LEADING_ZEROS, FLOAT_MEANINGFUL_BITS_FIELD,
};
use crate::gorilla::header::{
    BLOCK_FORMAT_VERSION, MAX_VARINT_BYTES, MIN_HEADER_BYTES, OFFSET_FIELD_TYPE, OFFSET_POINT_COUNT,
    OFFSET_VERSION,
};
use crate::gorilla::integers::{INT_FIRST_BITS, UVAR_BUCKETS};
use crate::gorilla::strings::{STRING_EXPANSION_RATIO, STRING_EXPANSION_SLACK_BYTES};
use crate::gorilla::timestamps::{TS_BUCKETS, TS_ESCAPE_DOD_BITS, TS_ESCAPE_VALUE, TS_FIRST_BITS};
use crate::gorilla::{decode_block, encode_points};
use crate::model::{FieldType, FieldValue};
use strata_testkit::markdown_table as table;

const DOC: &str = include_str!("../../../../../docs/format/series-block.md");

/// The rows of the first table after `heading`, without the header row.
fn rows(heading: &str) -> Vec<Vec<String>> {
    table(DOC, heading).split_off(1)
}

#[test]
fn constants_table_matches_the_code() {
    let expected: Vec<(&str, String)> = vec![
        ("BLOCK_FORMAT_VERSION", BLOCK_FORMAT_VERSION.to_string()),
        ("OFFSET_VERSION", OFFSET_VERSION.to_string()),
        ("OFFSET_FIELD_TYPE", OFFSET_FIELD_TYPE.to_string()),
        ("OFFSET_POINT_COUNT", OFFSET_POINT_COUNT.to_string()),
        ("MAX_VARINT_BYTES", MAX_VARINT_BYTES.to_string()),
        ("MIN_HEADER_BYTES", MIN_HEADER_BYTES.to_string()),
        ("TS_FIRST_BITS", TS_FIRST_BITS.to_string()),
        ("TS_ESCAPE_VALUE", TS_ESCAPE_VALUE.to_string()),
        ("TS_ESCAPE_DOD_BITS", TS_ESCAPE_DOD_BITS.to_string()),
        ("FLOAT_FIRST_BITS", FLOAT_FIRST_BITS.to_string()),
        ("FLOAT_LEADING_ZEROS_BITS", FLOAT_LEADING_ZEROS_BITS.to_string()),
        ("FLOAT_MAX_LEADING_ZEROS", FLOAT_MAX_LEADING_ZEROS.to_string()),
        ("FLOAT_MEANINGFUL_BITS_FIELD", FLOAT_MEANINGFUL_BITS_FIELD.to_string()),
        ("INT_FIRST_BITS", INT_FIRST_BITS.to_string()),
        ("STRING_EXPANSION_RATIO", STRING_EXPANSION_RATIO.to_string()),
        ("STRING_EXPANSION_SLACK_BYTES", STRING_EXPANSION_SLACK_BYTES.to_string()),
    ];
    let rows = rows("## Constants");
    let documented: Vec<(String, String)> = rows.iter().map(|r| (r[0].clone(), r[1].clone())).collect();
    let coded: Vec<(String, String)> = expected.iter().map(|(n, v)| (n.to_string(), v.clone())).collect();
    assert_eq!(documented, coded, "the Constants table and the code disagree");
}

#[test]
fn field_type_codes_match_the_model() {
    let rows = rows("Field type codes");
    let all =
        [FieldType::Float, FieldType::Integer, FieldType::Unsigned, FieldType::Boolean, FieldType::String];
    assert_eq!(rows.len(), all.len());
    for (row, ft) in rows.iter().zip(all) {
        assert_eq!(row[0], ft.code().to_string(), "{ft:?}");
        assert_eq!(row[1], ft.influx_name(), "{ft:?}");
    }
}

fn control_string(code: u64, bits: u32) -> String {
    format!("{code:0width$b}", width = bits as usize)
}

/// The bucket rows of a bucket table, each with the bucket's value bits,
/// after checking the single-bit zero row and each row's control code and
/// value bits; the range column is left to the caller.
fn bucket_rows(heading: &str, buckets: &[Bucket]) -> Vec<(Vec<String>, u32)> {
    let rows = rows(heading);
    assert_eq!(rows[0][..3], ["0", "0", "0"], "{heading}");
    assert_eq!(rows.len(), buckets.len() + 1, "{heading}");
    let mut out = Vec::new();
    for (row, &(code, code_bits, value_bits)) in rows[1..].iter().zip(buckets) {
        assert_eq!(row[0], control_string(code, code_bits), "{heading}");
        assert_eq!(row[1], value_bits.to_string(), "{heading}");
        out.push((row.clone(), value_bits));
    }
    out
}

#[test]
fn timestamp_bucket_table_matches_the_code() {
    for (row, value_bits) in bucket_rows("## Timestamp stream", &TS_BUCKETS) {
        // The dod range: [-(2^(b-1) - 1), 2^(b-1)].
        let half = 1i64 << (value_bits - 1);
        assert!(row[2].starts_with(&format!("[{}, {}]", -(half - 1), half)), "row {row:?}");
    }
}

#[test]
fn integer_bucket_table_matches_the_code() {
    for (row, value_bits) in bucket_rows("## Integer and unsigned values", &UVAR_BUCKETS) {
        assert_eq!(row[2], format!("[0, 2^{value_bits})"));
    }
}

#[test]
fn worked_example_is_what_the_encoder_writes() {
    let t0 = 1_700_000_000_000_000_000i64;
    let points: Vec<_> = [20.0, 20.0, 20.5, 20.0]
        .into_iter()
        .enumerate()
        .map(|(i, v)| (t0 + i as i64 * 10_000_000_000, FieldValue::Float(v)))
        .collect();
    let bytes = encode_points(FieldType::Float, &points).unwrap();
    let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let section = &DOC[DOC.find("## Example").expect("doc lacks the example")..];
    assert!(section.contains(&format!("\n{}\n", hex.join(" "))), "example bytes differ: {}", hex.join(" "));
    assert!(section.contains(&format!("{} bytes", bytes.len())));
    assert_eq!(decode_block(&bytes).unwrap().into_points(), points);
}
