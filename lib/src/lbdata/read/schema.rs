//! vt's `scripts/LBDatafile_schema.py` as data ([`FILE`]), and the check
//! of a parsed file against it. The rules are kept in this one table; a
//! test reads the verbatim copy of vt's file in `tests/vt/` and compares
//! it with the table field by field, so a schema change upstream shows as
//! that one failing test once the copy is refreshed.
//!
//! Types are as Python's `json` reads them (`1` is an int, `1.0` a float,
//! and a float field refuses an int). An entity needs `seq_id` or `id`,
//! and a migratable one with a `seq_id` a `collection_id` (vt's
//! `validate_ids`). An error names the phase and the field.

use std::collections::BTreeMap;

use serde_json::Value;
use serde_json::value::RawValue;

/// A file that does not follow the schema: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}field `{field}`: {problem}", phase.map(|p| format!("phase {p}: ")).unwrap_or_default())]
pub struct SchemaError {
    /// The phase's `id` (its index if it has none), if in a phase.
    pub phase: Option<u64>,
    /// The field's path, e.g. `phases[2].tasks[0].entity.home`.
    pub field: String,
    /// What is wrong.
    pub problem: String,
}

/// What a value must be, as vt's schema says it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Spec {
    /// Python's `int`.
    Int,
    /// Python's `float`.
    Float,
    /// Python's `str`.
    Str,
    /// Python's `bool`.
    Bool,
    /// Python's `dict`: any object.
    Dict,
    /// `And(float, lambda x: x >= 0.0)`.
    NonNegativeFloat,
    /// `And(str, "LBDatafile")`: that string.
    Literal(&'static str),
    /// `[spec]`: a list of them.
    List(&'static Spec),
    /// `{...}`: an object with these keys and no others.
    Object(&'static [Field]),
    /// `And({...}, validate_ids)`: an object, and an entity's ids.
    Entity(&'static [Field]),
}

/// One key of an object: `'name'` (required) or `Optional('name')`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Field {
    /// The key.
    pub name: &'static str,
    /// Whether it must be there.
    pub required: bool,
    /// What its value must be.
    pub spec: Spec,
}

const fn req(name: &'static str, spec: Spec) -> Field {
    Field {
        name,
        required: true,
        spec,
    }
}

const fn opt(name: &'static str, spec: Spec) -> Field {
    Field {
        name,
        required: false,
        spec,
    }
}

const INTS: Spec = Spec::List(&Spec::Int);
const INT_LISTS: Spec = Spec::List(&INTS);

/// vt's `task`.
const TASK: Spec = Spec::Object(&[
    req(
        "entity",
        Spec::Entity(&[
            opt("collection_id", Spec::Int),
            req("home", Spec::Int),
            opt("id", Spec::Int),
            opt("seq_id", Spec::Int),
            opt("index", INTS),
            req("type", Spec::Str),
            req("migratable", Spec::Bool),
            opt("objgroup_id", Spec::Int),
        ]),
    ),
    req("node", Spec::Int),
    req("resource", Spec::Str),
    opt(
        "subphases",
        Spec::List(&Spec::Object(&[
            req("id", Spec::Int),
            req("time", Spec::Float),
        ])),
    ),
    req("time", Spec::Float),
    opt("user_defined", Spec::Dict),
    opt("attributes", Spec::Dict),
]);

/// Either end of vt's `communication`.
const END: Spec = Spec::Entity(&[
    req("type", Spec::Str),
    opt("id", Spec::Int),
    opt("seq_id", Spec::Int),
    opt("home", Spec::Int),
    opt("collection_id", Spec::Int),
    opt("migratable", Spec::Bool),
    opt("index", INTS),
    opt("objgroup_id", Spec::Int),
]);

/// vt's `communication`.
const COMMUNICATION: Spec = Spec::Object(&[
    req("type", Spec::Str),
    req("to", END),
    req("messages", Spec::Int),
    req("from", END),
    req("bytes", Spec::Float),
]);

const PHASE_SET: Spec = Spec::Object(&[req("list", INTS), req("range", INT_LISTS)]);

/// vt's `LBDatafile_schema`: a whole file.
pub(crate) const FILE: Spec = Spec::Object(&[
    opt("type", Spec::Literal("LBDatafile")),
    opt(
        "metadata",
        Spec::Object(&[
            opt("type", Spec::Literal("LBDatafile")),
            opt("rank", Spec::Int),
            opt("rank_alpha", Spec::NonNegativeFloat),
            opt(
                "shared_node",
                Spec::Object(&[
                    req("id", Spec::Int),
                    req("size", Spec::Int),
                    req("rank", Spec::Int),
                    req("num_nodes", Spec::Int),
                ]),
            ),
            opt(
                "phases",
                Spec::Object(&[
                    opt("count", Spec::Int),
                    req("skipped", PHASE_SET),
                    req("identical_to_previous", PHASE_SET),
                ]),
            ),
            opt("attributes", Spec::Dict),
        ]),
    ),
    req(
        "phases",
        Spec::List(&Spec::Object(&[
            req("id", Spec::Int),
            req("tasks", Spec::List(&TASK)),
            opt("communications", Spec::List(&COMMUNICATION)),
            opt("user_defined", Spec::Dict),
            opt(
                "lb_iterations",
                Spec::List(&Spec::Object(&[
                    req("id", Spec::Int),
                    req("tasks", Spec::List(&TASK)),
                    opt("communications", Spec::List(&COMMUNICATION)),
                    opt("user_defined", Spec::Dict),
                ])),
            ),
        ])),
    ),
]);

/// Where the walk is: a field or a list's item below where it was, made
/// into text (`phases[2].tasks[0].entity.home`) only for an error.
#[derive(Clone, Copy)]
enum At<'a> {
    File,
    Field(&'a At<'a>, &'a str),
    Item(&'a At<'a>, usize),
}

impl At<'_> {
    fn text(&self) -> String {
        match self {
            At::File => "(the file)".into(),
            At::Field(At::File, name) => name.to_string(),
            At::Field(up, name) => format!("{}.{name}", up.text()),
            At::Item(up, i) => format!("{}[{i}]", up.text()),
        }
    }

    /// Whether this is the file's list of phases.
    fn is_phases(&self) -> bool {
        matches!(self, At::Field(At::File, "phases"))
    }
}

fn is_int(v: &Value) -> bool {
    v.as_i64().is_some() || v.as_u64().is_some()
}

fn describe(spec: Spec) -> String {
    match spec {
        Spec::Int => "an integer".into(),
        Spec::Float => "a number with a decimal point (a float)".into(),
        Spec::Str => "a string".into(),
        Spec::Bool => "true or false".into(),
        Spec::Dict | Spec::Object(_) | Spec::Entity(_) => "an object".into(),
        Spec::NonNegativeFloat => "a float of at least 0.0".into(),
        Spec::Literal(s) => format!("{s:?}"),
        Spec::List(&Spec::Int) => "a list of integers".into(),
        Spec::List(&Spec::List(&Spec::Int)) => "a list of lists of integers".into(),
        Spec::List(_) => "a list".into(),
    }
}

/// An object's fields as raw JSON, one level parsed (the last of a key
/// given twice, as Python's `json` keeps it).
type Fields<'t> = BTreeMap<String, &'t RawValue>;

/// What a raw JSON value opens with: `{`, `[`, or anything else.
fn opens(v: &RawValue) -> u8 {
    v.get()
        .bytes()
        .find(|b| !b.is_ascii_whitespace())
        .unwrap_or(b' ')
}

/// Checks `v` (at `at`, in `phase`) against `spec`. The walk parses one
/// level at a time and keeps no more than the list or object it is in, so
/// a file of millions of tasks is checked in little more memory than its
/// text.
fn walk(v: &RawValue, spec: Spec, phase: Option<u64>, at: At<'_>) -> Result<(), SchemaError> {
    let fail = |problem: String| SchemaError {
        phase,
        field: at.text(),
        problem,
    };
    let wrong = || fail(format!("is not {}", describe(spec)));
    match spec {
        Spec::List(item) => {
            let list: Vec<&RawValue> = match opens(v) {
                b'[' => serde_json::from_str(v.get()).map_err(|_| wrong())?,
                _ => return Err(wrong()),
            };
            for (i, x) in list.iter().enumerate() {
                // A phase's errors name the phase (its id, else its index).
                let phase = match at.is_phases() {
                    true => Some(phase_id(x).unwrap_or(i as u64)),
                    false => phase,
                };
                walk(x, *item, phase, At::Item(&at, i))?;
            }
            Ok(())
        }
        Spec::Dict if opens(v) == b'{' => Ok(()),
        Spec::Object(fields) => object(v, fields, phase, at).map(drop),
        Spec::Entity(fields) => {
            let map = object(v, fields, phase, at)?;
            if !map.contains_key("seq_id") && !map.contains_key("id") {
                return Err(fail("has neither `seq_id` nor `id`".into()));
            }
            if map
                .get("migratable")
                .is_some_and(|m| m.get().trim() == "true")
                && map.contains_key("seq_id")
                && !map.contains_key("collection_id")
            {
                return Err(fail(
                    "is migratable with a `seq_id` but has no `collection_id`".into(),
                ));
            }
            Ok(())
        }
        // A scalar: parsed whole (a list or object here is wrong unparsed).
        _ if matches!(opens(v), b'{' | b'[') => Err(wrong()),
        _ => {
            let x: Value = serde_json::from_str(v.get()).map_err(|_| wrong())?;
            match spec {
                Spec::Int if is_int(&x) => Ok(()),
                Spec::Float if x.is_f64() => Ok(()),
                Spec::NonNegativeFloat if x.as_f64().is_some_and(|f| x.is_f64() && f >= 0.0) => {
                    Ok(())
                }
                Spec::Str if x.is_string() => Ok(()),
                Spec::Bool if x.is_boolean() => Ok(()),
                Spec::Literal(s) if x.as_str() == Some(s) => Ok(()),
                Spec::Literal(s) => Err(fail(format!("must be {s:?}"))),
                _ => Err(wrong()),
            }
        }
    }
}

/// A phase's `id`, if it is an object with a whole-number one.
fn phase_id(v: &RawValue) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct Id {
        id: Option<Value>,
    }
    if opens(v) != b'{' {
        return None;
    }
    let id: Id = serde_json::from_str(v.get()).ok()?;
    id.id?.as_u64()
}

/// Checks that `v` is an object whose keys are among `fields`, the
/// required ones present, each as its spec says.
fn object<'t>(
    v: &'t RawValue,
    fields: &[Field],
    phase: Option<u64>,
    at: At<'_>,
) -> Result<Fields<'t>, SchemaError> {
    let fail = |field: At<'_>, problem: &str| SchemaError {
        phase,
        field: field.text(),
        problem: problem.into(),
    };
    let map: Fields<'t> = match opens(v) {
        b'{' => serde_json::from_str(v.get()).map_err(|_| fail(at, "is not an object"))?,
        _ => return Err(fail(at, "is not an object")),
    };
    if let Some(key) = map.keys().find(|k| !fields.iter().any(|f| f.name == *k)) {
        return Err(fail(
            At::Field(&at, key),
            "is not a field the schema allows here",
        ));
    }
    for f in fields {
        match map.get(f.name) {
            None if f.required => return Err(fail(At::Field(&at, f.name), "is missing")),
            None => {}
            Some(x) => walk(x, f.spec, phase, At::Field(&at, f.name))?,
        }
    }
    Ok(map)
}

/// Checks a parsed LB data file against vt's schema.
pub fn check(file: &Value) -> Result<(), SchemaError> {
    let text = file.to_string();
    let raw: &RawValue = serde_json::from_str(&text).expect("a value's own text is JSON");
    check_raw(raw)
}

/// Checks an LB data file's JSON text, unparsed, against vt's schema.
pub(crate) fn check_raw(file: &RawValue) -> Result<(), SchemaError> {
    walk(file, FILE, None, At::File)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn valid() -> Value {
        json!({
            "type": "LBDatafile",
            "metadata": {"type": "LBDatafile", "rank": 0,
                         "rank_alpha": 0.5,
                         "shared_node": {"id": 0, "size": 2, "rank": 0, "num_nodes": 1}},
            "phases": [{"id": 7, "tasks": [{
                "entity": {"type": "object", "seq_id": 3, "home": 0, "migratable": true, "collection_id": 0},
                "node": 0, "resource": "cpu", "time": 0.5,
                "subphases": [{"id": 0, "time": 0.25}]
            }], "communications": [{
                "type": "SendRecv", "messages": 2, "bytes": 64.0,
                "from": {"type": "object", "seq_id": 3, "migratable": true, "collection_id": 0},
                "to": {"type": "object", "id": 9}
            }], "lb_iterations": [{"id": 0, "tasks": [{
                "entity": {"type": "object", "seq_id": 3, "home": 0, "migratable": true, "collection_id": 0},
                "node": 1, "resource": "cpu", "time": 0.5
            }]}]}]
        })
    }

    /// `valid()` with `change` applied: the error's phase and field.
    fn broken(change: impl FnOnce(&mut Value)) -> (Option<u64>, String) {
        let mut v = valid();
        change(&mut v);
        let e = check(&v).expect_err("a broken file passed");
        (e.phase, e.field)
    }

    #[test]
    fn a_file_that_follows_the_schema_passes() {
        assert_eq!(check(&valid()), Ok(()));
    }

    #[test]
    fn every_required_field_and_type_is_checked_naming_the_phase_and_field() {
        let task = "phases[0].tasks[0]";
        type Break = Box<dyn FnOnce(&mut Value)>;
        let cases: Vec<(Break, Option<u64>, String)> = vec![
            (
                Box::new(|v| drop(v.as_object_mut().unwrap().remove("phases"))),
                None,
                "phases".into(),
            ),
            (
                Box::new(|v| v["type"] = json!("Other")),
                None,
                "type".into(),
            ),
            (Box::new(|v| v["extra"] = json!(1)), None, "extra".into()),
            (
                Box::new(|v| v["metadata"]["rank"] = json!("0")),
                None,
                "metadata.rank".into(),
            ),
            (
                Box::new(|v| v["metadata"]["shared_node"]["socket"] = json!(1)),
                None,
                "metadata.shared_node.socket".into(),
            ),
            (
                Box::new(|v| {
                    drop(
                        v["metadata"]["shared_node"]
                            .as_object_mut()
                            .unwrap()
                            .remove("num_nodes"),
                    )
                }),
                None,
                "metadata.shared_node.num_nodes".into(),
            ),
            (
                Box::new(|v| drop(v["phases"][0].as_object_mut().unwrap().remove("id"))),
                Some(0),
                "phases[0].id".into(),
            ),
            (
                Box::new(|v| v["phases"][0]["tasks"] = json!({})),
                Some(7),
                "phases[0].tasks".into(),
            ),
            (
                Box::new(|v| {
                    drop(
                        v["phases"][0]["tasks"][0]
                            .as_object_mut()
                            .unwrap()
                            .remove("node"),
                    )
                }),
                Some(7),
                format!("{task}.node"),
            ),
            (
                Box::new(|v| v["phases"][0]["tasks"][0]["resource"] = json!(1)),
                Some(7),
                format!("{task}.resource"),
            ),
            // A float field refuses an integer, as Python's json reads it.
            (
                Box::new(|v| v["phases"][0]["tasks"][0]["time"] = json!(1)),
                Some(7),
                format!("{task}.time"),
            ),
            (
                Box::new(|v| v["phases"][0]["tasks"][0]["subphases"][0]["time"] = json!(0)),
                Some(7),
                format!("{task}.subphases[0].time"),
            ),
            (
                Box::new(|v| {
                    drop(
                        v["phases"][0]["tasks"][0]["entity"]
                            .as_object_mut()
                            .unwrap()
                            .remove("home"),
                    )
                }),
                Some(7),
                format!("{task}.entity.home"),
            ),
            (
                Box::new(|v| {
                    drop(
                        v["phases"][0]["tasks"][0]["entity"]
                            .as_object_mut()
                            .unwrap()
                            .remove("type"),
                    )
                }),
                Some(7),
                format!("{task}.entity.type"),
            ),
            (
                Box::new(|v| v["phases"][0]["tasks"][0]["entity"]["migratable"] = json!(1)),
                Some(7),
                format!("{task}.entity.migratable"),
            ),
            (
                Box::new(|v| {
                    drop(
                        v["phases"][0]["tasks"][0]["entity"]
                            .as_object_mut()
                            .unwrap()
                            .remove("seq_id"),
                    )
                }),
                Some(7),
                format!("{task}.entity"),
            ),
            (
                Box::new(|v| {
                    drop(
                        v["phases"][0]["tasks"][0]["entity"]
                            .as_object_mut()
                            .unwrap()
                            .remove("collection_id"),
                    )
                }),
                Some(7),
                format!("{task}.entity"),
            ),
            (
                Box::new(|v| v["phases"][0]["communications"][0]["bytes"] = json!(64)),
                Some(7),
                "phases[0].communications[0].bytes".into(),
            ),
            (
                Box::new(|v| v["phases"][0]["communications"][0]["messages"] = json!(2.0)),
                Some(7),
                "phases[0].communications[0].messages".into(),
            ),
            (
                Box::new(|v| v["metadata"]["rank_alpha"] = json!(-0.5)),
                None,
                "metadata.rank_alpha".into(),
            ),
            (
                Box::new(|v| v["phases"][0]["lb_iterations"][0]["tasks"][0]["node"] = json!(0.5)),
                Some(7),
                "phases[0].lb_iterations[0].tasks[0].node".into(),
            ),
            (
                Box::new(|v| {
                    drop(
                        v["phases"][0]["communications"][0]["to"]
                            .as_object_mut()
                            .unwrap()
                            .remove("id"),
                    )
                }),
                Some(7),
                "phases[0].communications[0].to".into(),
            ),
            (
                Box::new(|v| {
                    drop(
                        v["phases"][0]["communications"][0]["from"]
                            .as_object_mut()
                            .unwrap()
                            .remove("type"),
                    )
                }),
                Some(7),
                "phases[0].communications[0].from.type".into(),
            ),
        ];
        for (change, phase, field) in cases {
            assert_eq!(broken(change), (phase, field.clone()), "{field}");
        }
    }

    /// A spec as text: `{a: int, ?b: [float]}`, keys sorted, `?` for
    /// optional ones, `ids{..}` for an entity.
    fn render(spec: Spec) -> String {
        let fields = |fields: &[Field]| {
            let mut all: Vec<String> = fields
                .iter()
                .map(|f| {
                    let mark = if f.required { "" } else { "?" };
                    format!("{mark}{}: {}", f.name, render(f.spec))
                })
                .collect();
            all.sort_by(|a, b| a.trim_start_matches('?').cmp(b.trim_start_matches('?')));
            format!("{{{}}}", all.join(", "))
        };
        match spec {
            Spec::Int => "int".into(),
            Spec::Float => "float".into(),
            Spec::Str => "str".into(),
            Spec::Bool => "bool".into(),
            Spec::Dict => "dict".into(),
            Spec::NonNegativeFloat => "float>=0".into(),
            Spec::Literal(s) => format!("str=={s:?}"),
            Spec::List(item) => format!("[{}]", render(*item)),
            Spec::Object(f) => fields(f),
            Spec::Entity(f) => format!("ids{}", fields(f)),
        }
    }

    /// Reads the subset of Python that vt's schema file is written in
    /// (`schema`'s `Schema`, `And`, `Optional`, dicts, lists, types and the
    /// names `task` and `communication`) and renders it as [`render`]
    /// does. Anything else in it fails the test, naming what it met.
    struct Python<'a> {
        text: &'a [u8],
        at: usize,
        names: Vec<(String, String)>,
    }

    impl Python<'_> {
        fn skip(&mut self) {
            while self.at < self.text.len() && self.text[self.at].is_ascii_whitespace() {
                self.at += 1;
            }
        }
        fn eat(&mut self, s: &str) -> bool {
            self.skip();
            let hit = self.text[self.at..].starts_with(s.as_bytes());
            if hit {
                self.at += s.len();
            }
            hit
        }
        fn expect(&mut self, s: &str) {
            assert!(self.eat(s), "expected `{s}` at: {}", self.rest());
        }
        fn rest(&self) -> String {
            String::from_utf8_lossy(&self.text[self.at..(self.at + 60).min(self.text.len())]).into()
        }
        fn word(&mut self) -> String {
            self.skip();
            let start = self.at;
            while self.at < self.text.len()
                && (self.text[self.at].is_ascii_alphanumeric() || self.text[self.at] == b'_')
            {
                self.at += 1;
            }
            String::from_utf8_lossy(&self.text[start..self.at]).into()
        }
        fn string(&mut self) -> String {
            self.skip();
            let quote = self.text[self.at];
            assert!(
                quote == b'\'' || quote == b'"',
                "a string at: {}",
                self.rest()
            );
            let end = self.at
                + 1
                + self.text[self.at + 1..]
                    .iter()
                    .position(|&c| c == quote)
                    .unwrap();
            let s = String::from_utf8_lossy(&self.text[self.at + 1..end]).into();
            self.at = end + 1;
            s
        }
        /// The raw text of an argument, up to the next `,` or `)` at depth 0.
        fn raw_arg(&mut self) -> String {
            self.skip();
            let (start, mut depth) = (self.at, 0i32);
            while self.at < self.text.len() {
                match self.text[self.at] {
                    b'(' | b'[' | b'{' => depth += 1,
                    b')' | b']' | b'}' if depth == 0 => break,
                    b')' | b']' | b'}' => depth -= 1,
                    b',' if depth == 0 => break,
                    _ => {}
                }
                self.at += 1;
            }
            String::from_utf8_lossy(&self.text[start..self.at])
                .trim()
                .into()
        }
        fn value(&mut self) -> String {
            if self.eat("{") {
                let mut all = Vec::new();
                while !self.eat("}") {
                    let key = if self.eat("Optional(") {
                        let k = format!("?{}", self.string());
                        self.expect(")");
                        k
                    } else {
                        self.string()
                    };
                    self.expect(":");
                    all.push(format!("{key}: {}", self.value()));
                    self.eat(",");
                }
                all.sort_by(|a, b| a.trim_start_matches('?').cmp(b.trim_start_matches('?')));
                return format!("{{{}}}", all.join(", "));
            }
            if self.eat("[") {
                let item = self.value();
                self.eat(",");
                self.expect("]");
                return format!("[{item}]");
            }
            let word = self.word();
            match word.as_str() {
                "And" => {
                    self.expect("(");
                    let first = self.value();
                    let mut out = first.clone();
                    while self.eat(",") {
                        let arg = self.raw_arg();
                        out = match arg.as_str() {
                            "validate_ids" => format!("ids{first}"),
                            "\"LBDatafile\"" if first == "str" => "str==\"LBDatafile\"".into(),
                            "lambda x: x >= 0.0" if first == "float" => "float>=0".into(),
                            a if a.starts_with("error=") => out,
                            a => panic!("an And(...) argument braid does not know: {a}"),
                        };
                    }
                    self.expect(")");
                    out
                }
                "int" | "float" | "str" | "bool" | "dict" => word,
                name => match self.names.iter().find(|(n, _)| n == name) {
                    Some((_, v)) => v.clone(),
                    None => panic!("a name braid does not know: `{name}` at {}", self.rest()),
                },
            }
        }
        /// The value assigned by `name = ` at the start of a line.
        fn define(&mut self, name: &str) {
            let text = String::from_utf8_lossy(self.text).into_owned();
            let head = format!("\n{name} = ");
            self.at = text.find(&head).unwrap_or_else(|| panic!("no `{name} =`")) + head.len();
            let schema = self.eat("Schema(");
            let v = self.value();
            if schema {
                self.expect(")");
            }
            self.names.push((name.into(), v));
        }
    }

    #[test]
    fn the_schema_is_vts_own_as_its_copy_in_tests_vt_says() {
        // tests/vt/LBDatafile_schema.py is vt's file verbatim: when vt
        // changes its schema, refresh the copy, and this test says what
        // differs from braid's table.
        let text = include_str!("../../../../tests/vt/LBDatafile_schema.py");
        let mut py = Python {
            text: text.as_bytes(),
            at: 0,
            names: Vec::new(),
        };
        for name in ["task", "communication", "LBDatafile_schema"] {
            py.define(name);
        }
        let vt = &py.names[2].1;
        let braid = render(FILE);
        assert_eq!(
            braid,
            *vt,
            "braid's schema (left) against vt's (right): they differ from character {}",
            braid
                .bytes()
                .zip(vt.bytes())
                .take_while(|(a, b)| a == b)
                .count()
        );
    }
}
