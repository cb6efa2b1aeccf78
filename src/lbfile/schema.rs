//! The rules of vt's `scripts/LBDatafile_schema.py`, checked on a parsed
//! file: the keys each object may have (no others), which are required,
//! and their types as Python's `json` reads them (`1` is an int, `1.0` a
//! float, and a float field refuses an int). An entity needs `seq_id` or
//! `id`, and a migratable one with a `seq_id` a `collection_id`; an entity
//! of a communication needs `migratable` (the schema's check reads it).
//! An error names the phase and the field.

use serde_json::{Map, Value};

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

/// A field's type in the schema.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Int,
    Float,
    Str,
    Bool,
    Dict,
    IntList,
    IntLists,
}

/// Where the checker is: the phase, and the path so far.
struct At<'a> {
    phase: Option<u64>,
    path: &'a str,
}

impl At<'_> {
    fn fail(&self, field: &str, problem: impl Into<String>) -> SchemaError {
        SchemaError {
            phase: self.phase,
            field: join(self.path, field),
            problem: problem.into(),
        }
    }
}

fn join(path: &str, field: &str) -> String {
    match (path.is_empty(), field.starts_with('[')) {
        (true, _) => field.to_string(),
        (false, true) => format!("{path}{field}"),
        (false, false) => format!("{path}.{field}"),
    }
}

fn is_int(v: &Value) -> bool {
    v.as_i64().is_some() || v.as_u64().is_some()
}

fn of_kind(v: &Value, kind: Kind) -> bool {
    match kind {
        Kind::Int => is_int(v),
        Kind::Float => v.is_f64(),
        Kind::Str => v.is_string(),
        Kind::Bool => v.is_boolean(),
        Kind::Dict => v.is_object(),
        Kind::IntList => v.as_array().is_some_and(|a| a.iter().all(is_int)),
        Kind::IntLists => v.as_array().is_some_and(|a| {
            a.iter()
                .all(|l| l.as_array().is_some_and(|l| l.iter().all(is_int)))
        }),
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Int => "an integer",
        Kind::Float => "a number with a decimal point (a float)",
        Kind::Str => "a string",
        Kind::Bool => "true or false",
        Kind::Dict => "an object",
        Kind::IntList => "a list of integers",
        Kind::IntLists => "a list of lists of integers",
    }
}

/// Checks that `v` is an object whose keys are among `fields` (name,
/// required, kind; `None`: checked by the caller), required ones present,
/// each of its kind.
fn object<'v>(
    v: &'v Value,
    at: &At<'_>,
    here: &str,
    fields: &[(&str, bool, Option<Kind>)],
) -> Result<&'v Map<String, Value>, SchemaError> {
    let Some(map) = v.as_object() else {
        return Err(at.fail(here, "is not an object"));
    };
    let path = join(at.path, here);
    let inner = At {
        phase: at.phase,
        path: &path,
    };
    for key in map.keys() {
        if !fields.iter().any(|(name, _, _)| name == key) {
            return Err(inner.fail(key, "is not a field the schema allows here"));
        }
    }
    for &(name, required, kind) in fields {
        match (map.get(name), kind) {
            (None, _) if required => return Err(inner.fail(name, "is missing")),
            (Some(v), Some(kind)) if !of_kind(v, kind) => {
                return Err(inner.fail(name, format!("is not {}", kind_name(kind))));
            }
            _ => {}
        }
    }
    Ok(map)
}

/// An entity: a task's, or either end of a communication's.
fn entity(v: &Value, at: &At<'_>, here: &str, of_task: bool) -> Result<(), SchemaError> {
    use Kind::*;
    let fields: &[(&str, bool, Option<Kind>)] = &[
        ("collection_id", false, Some(Int)),
        ("home", of_task, Some(Int)),
        ("id", false, Some(Int)),
        ("seq_id", false, Some(Int)),
        ("index", false, Some(IntList)),
        ("type", true, Some(Str)),
        ("migratable", of_task, Some(Bool)),
        ("objgroup_id", false, Some(Int)),
    ];
    let map = object(v, at, here, fields)?;
    if !map.contains_key("seq_id") && !map.contains_key("id") {
        return Err(at.fail(here, "has neither `seq_id` nor `id`"));
    }
    let Some(migratable) = map.get("migratable") else {
        return Err(at.fail(&join(here, "migratable"), "is missing"));
    };
    if migratable.as_bool() == Some(true)
        && map.contains_key("seq_id")
        && !map.contains_key("collection_id")
    {
        return Err(at.fail(
            here,
            "is migratable with a `seq_id` but has no `collection_id`",
        ));
    }
    Ok(())
}

/// Checks a parsed LB data file against vt's schema.
pub fn check(file: &Value) -> Result<(), SchemaError> {
    use Kind::*;
    let top = At {
        phase: None,
        path: "",
    };
    let root = object(
        file,
        &top,
        "",
        &[
            ("type", false, Some(Str)),
            ("metadata", false, None),
            ("phases", true, None),
        ],
    )
    .map_err(|e| SchemaError {
        field: if e.field.is_empty() {
            "(the file)".into()
        } else {
            e.field
        },
        ..e
    })?;
    if let Some(t) = root.get("type")
        && t != "LBDatafile"
    {
        return Err(top.fail("type", "must be \"LBDatafile\""));
    }
    if let Some(m) = root.get("metadata") {
        let meta = object(
            m,
            &top,
            "metadata",
            &[
                ("type", false, Some(Str)),
                ("rank", false, Some(Int)),
                ("shared_node", false, None),
                ("phases", false, None),
                ("attributes", false, Some(Dict)),
            ],
        )?;
        if let Some(t) = meta.get("type")
            && t != "LBDatafile"
        {
            return Err(top.fail("metadata.type", "must be \"LBDatafile\""));
        }
        if let Some(n) = meta.get("shared_node") {
            let fields = [
                ("id", true, Some(Int)),
                ("size", true, Some(Int)),
                ("rank", true, Some(Int)),
                ("num_nodes", true, Some(Int)),
            ];
            object(n, &top, "metadata.shared_node", &fields)?;
        }
        if let Some(p) = meta.get("phases") {
            let map = object(
                p,
                &top,
                "metadata.phases",
                &[
                    ("count", false, Some(Int)),
                    ("skipped", true, None),
                    ("identical_to_previous", true, None),
                ],
            )?;
            for key in ["skipped", "identical_to_previous"] {
                let fields = [
                    ("list", true, Some(IntList)),
                    ("range", true, Some(IntLists)),
                ];
                object(&map[key], &top, &format!("metadata.phases.{key}"), &fields)?;
            }
        }
    }
    let Some(phases) = root["phases"].as_array() else {
        return Err(top.fail("phases", "is not a list"));
    };
    for (i, phase) in phases.iter().enumerate() {
        let path = format!("phases[{i}]");
        let id = phase.get("id").and_then(Value::as_u64).unwrap_or(i as u64);
        let at = At {
            phase: Some(id),
            path: "",
        };
        let map = object(
            phase,
            &at,
            &path,
            &[
                ("id", true, Some(Int)),
                ("tasks", true, None),
                ("communications", false, None),
                ("user_defined", false, Some(Dict)),
            ],
        )?;
        let Some(tasks) = map["tasks"].as_array() else {
            return Err(at.fail(&join(&path, "tasks"), "is not a list"));
        };
        for (k, task) in tasks.iter().enumerate() {
            let here = format!("{path}.tasks[{k}]");
            let fields = [
                ("entity", true, None),
                ("node", true, Some(Int)),
                ("resource", true, Some(Str)),
                ("subphases", false, None),
                ("time", true, Some(Float)),
                ("user_defined", false, Some(Dict)),
                ("attributes", false, Some(Dict)),
            ];
            let t = object(task, &at, &here, &fields)?;
            entity(&t["entity"], &at, &join(&here, "entity"), true)?;
            if let Some(subs) = t.get("subphases") {
                let Some(subs) = subs.as_array() else {
                    return Err(at.fail(&join(&here, "subphases"), "is not a list"));
                };
                for (j, sp) in subs.iter().enumerate() {
                    let fields = [("id", true, Some(Int)), ("time", true, Some(Float))];
                    object(sp, &at, &format!("{here}.subphases[{j}]"), &fields)?;
                }
            }
        }
        if let Some(comms) = map.get("communications") {
            let Some(comms) = comms.as_array() else {
                return Err(at.fail(&join(&path, "communications"), "is not a list"));
            };
            for (k, c) in comms.iter().enumerate() {
                let here = format!("{path}.communications[{k}]");
                let fields = [
                    ("type", true, Some(Str)),
                    ("to", true, None),
                    ("messages", true, Some(Int)),
                    ("from", true, None),
                    ("bytes", true, Some(Float)),
                ];
                let m = object(c, &at, &here, &fields)?;
                entity(&m["from"], &at, &join(&here, "from"), false)?;
                entity(&m["to"], &at, &join(&here, "to"), false)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn valid() -> Value {
        json!({
            "type": "LBDatafile",
            "metadata": {"type": "LBDatafile", "rank": 0,
                         "shared_node": {"id": 0, "size": 2, "rank": 0, "num_nodes": 1}},
            "phases": [{"id": 7, "tasks": [{
                "entity": {"type": "object", "seq_id": 3, "home": 0, "migratable": true, "collection_id": 0},
                "node": 0, "resource": "cpu", "time": 0.5,
                "subphases": [{"id": 0, "time": 0.25}]
            }], "communications": [{
                "type": "SendRecv", "messages": 2, "bytes": 64.0,
                "from": {"type": "object", "seq_id": 3, "migratable": true, "collection_id": 0},
                "to": {"type": "object", "id": 9, "migratable": false}
            }]}]
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
                Box::new(|v| {
                    drop(
                        v["phases"][0]["communications"][0]["to"]
                            .as_object_mut()
                            .unwrap()
                            .remove("migratable"),
                    )
                }),
                Some(7),
                "phases[0].communications[0].to.migratable".into(),
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
}
