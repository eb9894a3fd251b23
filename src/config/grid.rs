//! The n grid: an explicit list `[2, 8, 64]` or powers of two
//! `{log2: [lo, hi]}` (2^lo, …, 2^hi inclusive).

use serde::{Deserialize, Serialize};

/// The configured n values, as written (expanded by [`NGrid::values`]).
#[derive(Clone, Debug, PartialEq)]
pub enum NGrid {
    List(Vec<i64>),
    Log2(i64, i64),
}

const EXPECTED: &str = "expected a list of integers like [2, 8, 64] or {log2: [1, 12]}";

impl<'de> Deserialize<'de> for NGrid {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        use yaml_serde::Value;
        let v = Value::deserialize(d)?;
        match &v {
            Value::Sequence(items) => items
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    x.as_i64().ok_or_else(|| {
                        D::Error::custom(format!("[{i}] is {}: {EXPECTED}", show(x)))
                    })
                })
                .collect::<Result<Vec<_>, _>>()
                .map(NGrid::List),
            Value::Mapping(m) => {
                if m.len() != 1 {
                    return Err(D::Error::custom(EXPECTED));
                }
                let Some(range) = m.get("log2") else {
                    return Err(D::Error::custom(EXPECTED));
                };
                match range.as_sequence().map(|s| s.as_slice()) {
                    Some([a, b]) => match (a.as_i64(), b.as_i64()) {
                        (Some(a), Some(b)) => Ok(NGrid::Log2(a, b)),
                        _ => Err(D::Error::custom(EXPECTED)),
                    },
                    _ => Err(D::Error::custom(EXPECTED)),
                }
            }
            other => Err(D::Error::custom(format!("got {}: {EXPECTED}", show(other)))),
        }
    }
}

fn show(v: &yaml_serde::Value) -> String {
    yaml_serde::to_string(v)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "a value".into())
}

impl Serialize for NGrid {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            NGrid::List(v) => v.serialize(s),
            NGrid::Log2(a, b) => {
                use serde::ser::SerializeMap;
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("log2", &[a, b])?;
                m.end()
            }
        }
    }
}

impl NGrid {
    /// The n values in ascending order without duplicates, or a message
    /// (without the key path) saying what is wrong.
    pub fn values(&self) -> Result<Vec<usize>, String> {
        let mut out: Vec<usize> = match self {
            NGrid::List(v) => {
                if v.is_empty() {
                    return Err("is empty; list at least one n, e.g. [2, 8, 64]".into());
                }
                let mut out = Vec::with_capacity(v.len());
                for (i, &x) in v.iter().enumerate() {
                    if x < 1 {
                        return Err(format!(
                            "[{i}] is {x}; n is the number of candidates per query and must be at least 1"
                        ));
                    }
                    out.push(x as usize);
                }
                out
            }
            &NGrid::Log2(a, b) => {
                if a < 0 {
                    return Err(format!(
                        "log2 starts at {a}; n = 2^{a} is below 1, start at 0 or more"
                    ));
                }
                if a > b {
                    return Err(format!(
                        "log2: [{a}, {b}] is empty; give [lo, hi] with lo ≤ hi"
                    ));
                }
                if b > 30 {
                    return Err(format!(
                        "log2 ends at {b}; n = 2^{b} is far beyond any pool"
                    ));
                }
                (a..=b).map(|k| 1usize << k).collect()
            }
        };
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_expands_inclusive() {
        assert_eq!(NGrid::Log2(1, 4).values().unwrap(), vec![2, 4, 8, 16]);
        assert_eq!(NGrid::Log2(0, 0).values().unwrap(), vec![1]);
        assert_eq!(
            NGrid::List(vec![64, 2, 8, 2]).values().unwrap(),
            vec![2, 8, 64]
        );
        assert!(
            NGrid::List(vec![2, 0])
                .values()
                .unwrap_err()
                .contains("[1] is 0")
        );
        assert!(NGrid::Log2(3, 1).values().is_err());
    }

    #[test]
    fn parses_both_forms() {
        let g: NGrid = yaml_serde::from_str("[2, 8]").unwrap();
        assert_eq!(g, NGrid::List(vec![2, 8]));
        let g: NGrid = yaml_serde::from_str("{log2: [1, 12]}").unwrap();
        assert_eq!(g, NGrid::Log2(1, 12));
        assert!(yaml_serde::from_str::<NGrid>("{log3: [1, 2]}").is_err());
        assert!(yaml_serde::from_str::<NGrid>("[2, x]").is_err());
    }
}
