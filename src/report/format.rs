//! One table, five renderings: aligned text, Markdown, LaTeX (booktabs), CSV
//! and JSON (an array of objects keyed by column id), so that the same numbers
//! reach a terminal, a README, a paper and a checking script.

use serde_json::{Map, Value};

/// Output format of a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Markdown,
    Latex,
    Csv,
    Json,
}

/// A column: machine id (CSV/JSON), text header, LaTeX header.
#[derive(Clone, Debug)]
pub struct ColumnSpec {
    pub id: String,
    pub header: String,
    pub latex: String,
}

impl ColumnSpec {
    pub fn new(id: impl Into<String>, header: impl Into<String>, latex: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            header: header.into(),
            latex: latex.into(),
        }
    }
}

/// A cell: a number (formatted per renderer) or text.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Num(f64),
    /// Mean ± standard error (`$m \pm s$` in LaTeX); the SE may be undefined.
    MeanSe(f64, Option<f64>),
    Text(String),
    Empty,
}

#[derive(Clone, Debug)]
pub struct Table {
    pub columns: Vec<ColumnSpec>,
    pub rows: Vec<Vec<Cell>>,
    /// LaTeX caption (also printed under text renderings).
    pub caption: String,
    pub label: String,
    /// Decimal places for numbers in the human renderings.
    pub decimals: usize,
    /// Rows before which LaTeX draws a full `\midrule` (groups).
    pub midrules: Vec<usize>,
    /// Rows before which LaTeX draws `\cmidrule(l){2-k}` (a sub-group).
    pub cmidrules: Vec<usize>,
    /// (row, column) cells rendered bold (`\textbf`, `**`).
    pub bold: Vec<(usize, usize)>,
}

impl Table {
    /// A table without rules or bold cells.
    pub fn new(
        columns: Vec<ColumnSpec>,
        rows: Vec<Vec<Cell>>,
        caption: String,
        label: String,
        decimals: usize,
    ) -> Self {
        Self {
            columns,
            rows,
            caption,
            label,
            decimals,
            midrules: Vec::new(),
            cmidrules: Vec::new(),
            bold: Vec::new(),
        }
    }

    fn is_bold(&self, i: usize, j: usize) -> bool {
        self.bold.contains(&(i, j))
    }
}

fn human(c: &Cell, decimals: usize, latex: bool) -> String {
    match c {
        Cell::Num(x) if x.is_infinite() => {
            if latex {
                "$\\infty$".into()
            } else {
                "inf".into()
            }
        }
        Cell::Num(x) => {
            let s = format!("{x:.decimals$}");
            if latex && s.starts_with('-') {
                format!("$-${}", &s[1..])
            } else {
                s
            }
        }
        Cell::MeanSe(m, se) => {
            let m = format!("{m:.decimals$}");
            match (se, latex) {
                (Some(s), true) => format!("${m} \\pm {s:.decimals$}$"),
                (Some(s), false) => format!("{m} ± {s:.decimals$}"),
                (None, true) => format!("${m}$"),
                (None, false) => m,
            }
        }
        Cell::Text(t) if latex => latex_escape(t),
        Cell::Text(t) => t.clone(),
        Cell::Empty => {
            if latex {
                "--".into()
            } else {
                "-".into()
            }
        }
    }
}

/// Escape LaTeX's special characters in plain text (names of datasets and
/// reward models, row labels such as "Overhead (%)").
pub fn latex_escape(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    for c in t.chars() {
        match c {
            '%' | '&' | '_' | '#' | '$' | '{' | '}' => {
                out.push('\\');
                out.push(c);
            }
            '\\' => out.push_str("\\textbackslash{}"),
            '~' => out.push_str("\\textasciitilde{}"),
            '^' => out.push_str("\\textasciicircum{}"),
            _ => out.push(c),
        }
    }
    out
}

/// One CSV field per RFC 4180: quoted when it holds a comma, a double quote,
/// CR or LF, with inner double quotes doubled.
pub fn csv_field(t: &str) -> String {
    if t.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", t.replace('"', "\"\""))
    } else {
        t.to_string()
    }
}

/// Text for a Markdown table cell: `|` would end the cell and `\\` escapes,
/// so both are backslash-escaped; a line break would end the row, so it
/// becomes a space.
pub fn markdown_escape(t: &str) -> String {
    t.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\r', '\n'], " ")
}

/// Bold a rendered LaTeX cell: `\textbf` bolds its text and `\boldmath` the
/// math of a `$m \pm s$` cell.
fn bold_latex(t: &str) -> String {
    format!("{{\\boldmath\\textbf{{{t}}}}}")
}

impl Table {
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Table => self.text(),
            Format::Markdown => self.markdown(),
            Format::Latex => self.latex(),
            Format::Csv => self.csv(),
            Format::Json => self.json(),
        }
    }

    fn text(&self) -> String {
        let cells: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.iter().map(|c| human(c, self.decimals, false)).collect())
            .collect();
        let widths: Vec<usize> = self
            .columns
            .iter()
            .enumerate()
            .map(|(j, c)| {
                cells
                    .iter()
                    .map(|r| r[j].chars().count())
                    .chain([c.header.chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |v: Vec<String>| -> String {
            v.iter()
                .zip(&widths)
                .map(|(s, w)| format!("{s:>w$}"))
                .collect::<Vec<_>>()
                .join("  ")
        };
        let mut out = line(self.columns.iter().map(|c| c.header.to_string()).collect()) + "\n";
        for r in cells {
            out += &line(r);
            out.push('\n');
        }
        out + &self.caption + "\n"
    }

    fn markdown(&self) -> String {
        let mut out = format!(
            "| {} |\n",
            self.columns
                .iter()
                .map(|c| markdown_escape(&c.header))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        out += &format!("|{}\n", " ---: |".repeat(self.columns.len()));
        for (i, r) in self.rows.iter().enumerate() {
            out += &format!(
                "| {} |\n",
                r.iter()
                    .enumerate()
                    .map(|(j, c)| {
                        let t = markdown_escape(&human(c, self.decimals, false));
                        if self.is_bold(i, j) {
                            format!("**{t}**")
                        } else {
                            t
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(" | ")
            );
        }
        out + "\n" + &self.caption + "\n"
    }

    fn latex(&self) -> String {
        let mut out = String::from("\\begin{table}[h]\n\\centering\n");
        out += &format!("\\caption{{{}}}\n\\label{{{}}}\n", self.caption, self.label);
        // Leading columns holding only text are left-aligned, the rest centred.
        let text_cols = (0..self.columns.len())
            .take_while(|&j| {
                self.rows
                    .iter()
                    .all(|r| matches!(r[j], Cell::Text(_) | Cell::Empty))
            })
            .count()
            .max(1);
        out += &format!(
            "\\begin{{tabular}}{{{}{}}}\n\\toprule\n",
            "l".repeat(text_cols),
            "c".repeat(self.columns.len() - text_cols)
        );
        out += &self
            .columns
            .iter()
            .map(|c| c.latex.as_str())
            .collect::<Vec<_>>()
            .join(" & ");
        out += " \\\\\n\\midrule\n";
        for (i, r) in self.rows.iter().enumerate() {
            if self.midrules.contains(&i) {
                out += "\\midrule\n";
            }
            if self.cmidrules.contains(&i) {
                out += &format!("\\cmidrule(l){{2-{}}}\n", self.columns.len());
            }
            out += &r
                .iter()
                .enumerate()
                .map(|(j, c)| {
                    let t = human(c, self.decimals, true);
                    if self.is_bold(i, j) {
                        bold_latex(&t)
                    } else {
                        t
                    }
                })
                .collect::<Vec<_>>()
                .join(" & ");
            out += " \\\\\n";
        }
        out + "\\bottomrule\n\\end{tabular}\n\\end{table}\n"
    }

    fn csv(&self) -> String {
        let mut out = self
            .columns
            .iter()
            .map(|c| csv_field(&c.id))
            .collect::<Vec<_>>()
            .join(",")
            + "\n";
        for r in &self.rows {
            out += &r
                .iter()
                .map(|c| match c {
                    Cell::Num(x) => format!("{x:e}"),
                    Cell::MeanSe(m, Some(s)) => format!("{m:e}±{s:e}"),
                    Cell::MeanSe(m, None) => format!("{m:e}"),
                    Cell::Text(t) => csv_field(t),
                    Cell::Empty => String::new(),
                })
                .collect::<Vec<_>>()
                .join(",");
            out.push('\n');
        }
        out
    }

    fn json(&self) -> String {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                let mut m = Map::new();
                for (c, v) in self.columns.iter().zip(r) {
                    m.insert(
                        c.id.clone(),
                        match v {
                            Cell::Num(x) => serde_json::Number::from_f64(*x)
                                .map(Value::Number)
                                .unwrap_or(Value::Null),
                            Cell::MeanSe(m, se) => serde_json::json!({"mean": m, "se": se}),
                            Cell::Text(t) => Value::String(t.clone()),
                            Cell::Empty => Value::Null,
                        },
                    );
                }
                Value::Object(m)
            })
            .collect();
        serde_json::to_string_pretty(&rows).unwrap_or_default() + "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_and_markdown_escaping() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        assert_eq!(markdown_escape("a|b"), "a\\|b");
        assert_eq!(markdown_escape("a\\|b"), "a\\\\\\|b");
    }

    #[test]
    fn latex_special_characters_are_escaped() {
        assert_eq!(latex_escape("Overhead (%)"), "Overhead (\\%)");
        assert_eq!(
            latex_escape("my_rm & #1 $x$ {a}"),
            "my\\_rm \\& \\#1 \\$x\\$ \\{a\\}"
        );
        assert_eq!(
            latex_escape("a\\b~c^d"),
            "a\\textbackslash{}b\\textasciitilde{}c\\textasciicircum{}d"
        );
    }
}
