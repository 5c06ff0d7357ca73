//! URL query and `application/x-www-form-urlencoded` parameters: decoded
//! pairs, the first occurrence of a key winning (as Go's `Values.Get`).

/// Decoded `key=value` pairs in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params {
    pairs: Vec<(String, String)>,
}

impl Params {
    /// Parses a URL query string (without `?`) or a form body.
    pub fn parse(encoded: &[u8]) -> Params {
        Params {
            pairs: form_urlencoded::parse(encoded).map(|(k, v)| (k.into_owned(), v.into_owned())).collect(),
        }
    }

    pub fn from_query(query: Option<&str>) -> Params {
        Params::parse(query.unwrap_or("").as_bytes())
    }

    /// The first value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The first value of `key` with surrounding whitespace removed; `None` when absent or blank.
    pub fn get_nonblank(&self, key: &str) -> Option<&str> {
        self.get(key).map(str::trim).filter(|v| !v.is_empty())
    }

    /// Appends `other`'s pairs after this one's (so this one's win).
    pub fn extend(&mut self, other: Params) {
        self.pairs.extend(other.pairs);
    }

    /// Whether a flag such as `pretty` or `verbose` is on ("true", "1", any
    /// other non-empty value except "0"/"false").
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some(v) if !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_and_first_wins() {
        let mut p = Params::from_query(Some("q=SELECT+*+FROM+%22cpu%22&db=a&db=b&pretty=true&blank=+"));
        assert_eq!(p.get("q"), Some("SELECT * FROM \"cpu\""));
        assert_eq!(p.get("db"), Some("a"));
        assert_eq!(p.get_nonblank("blank"), None);
        assert!(p.flag("pretty"));
        assert!(!p.flag("verbose"));
        p.extend(Params::parse(b"db=c&epoch=ms"));
        assert_eq!(p.get("db"), Some("a"));
        assert_eq!(p.get("epoch"), Some("ms"));
        assert!(!Params::parse(b"pretty=false").flag("pretty"));
        assert_eq!(Params::from_query(None), Params::default());
    }
}
