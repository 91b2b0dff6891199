//! The types section of the header: a forward declaration of each type the
//! library names but does not define, then the definition of each type it
//! defines, every definition after the definitions it uses.
//!
//! The order comes from the strongly connected components of the "uses"
//! graph (a field or typedef that names another type, by value or behind
//! a pointer), dependencies first. A component of more than one type, or
//! a type that points to itself, is a pointer cycle: its structs that
//! the cycle points to are forward-declared (`typedef struct Node Node;`),
//! and only there.

use std::collections::BTreeMap;

use crate::comment::{doc_comment, member_comment};
use crate::declaration::{Declaration, Kind, RustType};
use crate::format;
use crate::scan::Error;

/// The types section, planned: what to forward-declare and what to define,
/// in order.
pub(crate) struct Types<'a> {
    /// Named but not defined by the library nor by the prelude.
    pub opaque: Vec<RustType>,
    /// The definitions in the order C needs, each with whether a forward
    /// declaration comes before it.
    pub definitions: Vec<(&'a Declaration, bool)>,
}

/// Plans the types section for `declarations` (sorted by name), leaving
/// out the types the prelude defines (`defined`).
///
/// # Errors
///
/// [`Error::TypeCycle`] when typedefs point to each other, which no order
/// of C declarations can express.
pub(crate) fn plan<'a>(
    declarations: &'a [Declaration],
    defined: &[String],
) -> Result<Types<'a>, Error> {
    let definitions: BTreeMap<&str, &Declaration> = declarations
        .iter()
        .filter(|declaration| declaration.kind.is_type())
        .filter(|declaration| !defined.contains(&declaration.name))
        .map(|declaration| (declaration.name.as_str(), declaration))
        .collect();
    let mut opaque: Vec<RustType> = Vec::new();
    for used in declarations.iter().flat_map(|d| &d.types) {
        let known = declarations
            .iter()
            .any(|d| d.kind.is_type() && d.name == used.name);
        if known || defined.contains(&used.name) || !is_c_identifier(&used.name) {
            continue;
        }
        match opaque.iter_mut().find(|known| known.name == used.name) {
            Some(known) => known.by_value |= used.by_value,
            None => opaque.push(used.clone()),
        }
    }
    opaque.sort();
    let graph = Graph::new(&definitions);
    let mut ordered = Vec::new();
    for component in graph.components() {
        ordered.extend(graph.order_component(&component)?);
    }
    Ok(Types {
        opaque,
        definitions: ordered,
    })
}

impl Types<'_> {
    pub(crate) fn is_empty(&self) -> bool {
        self.opaque.is_empty() && self.definitions.is_empty()
    }

    /// Writes the section.
    pub(crate) fn write(&self, out: &mut String) {
        if self.is_empty() {
            return;
        }
        out.push_str("\n/* Types defined in Rust. */\n");
        for RustType { name, by_value } in &self.opaque {
            out.push_str(&format!("typedef struct {name} {name};"));
            if *by_value {
                out.push_str(
                    " /* passed by value, but the library records no definition (a type alias?): \
                     define it in the prelude */",
                );
            }
            out.push('\n');
        }
        for (declaration, forward) in &self.definitions {
            if *forward {
                let name = &declaration.name;
                out.push_str(&format!("typedef struct {name} {name};\n"));
            }
        }
        for (declaration, forward) in &self.definitions {
            out.push('\n');
            doc_comment(out, declaration.docs(), "");
            out.push_str(&definition(declaration, *forward));
        }
    }
}

/// The C definition of the type `declaration`, ending with a newline;
/// `forward_declared` when `typedef struct Name Name;` came before (a
/// struct in a pointer cycle), so the struct is defined without a typedef.
/// The type's own doc comment is not included.
pub(crate) fn definition(declaration: &Declaration, forward_declared: bool) -> String {
    let name = &declaration.name;
    match declaration.kind {
        Kind::Enum => enum_definition(declaration),
        Kind::Struct => {
            let mut fields = String::new();
            for member in declaration.members() {
                member_comment(&mut fields, member.docs);
                fields.push_str(&format!("    {};\n", member.declaration));
            }
            if forward_declared {
                format!("struct {name} {{\n{fields}}};\n")
            } else {
                format!("typedef struct {name} {{\n{fields}}} {name};\n")
            }
        }
        _ => format!(
            "typedef {};\n",
            declaration.signature.replace(format::NAME_SLOT, name)
        ),
    }
}

/// `typedef int32_t Mode;` and the constants: an anonymous `enum` when
/// every value fits C's `int` (as C11 requires of enumeration constants),
/// else one `#define` per constant, cast to the type.
fn enum_definition(declaration: &Declaration) -> String {
    let name = &declaration.name;
    let repr = declaration.enum_repr().unwrap_or("int");
    let members = declaration.members();
    let mut out = format!("typedef {repr} {name};\n");
    let values: Vec<i128> = members
        .iter()
        .map(|member| member.value.parse().unwrap_or_default())
        .collect();
    let in_int = values
        .iter()
        .all(|value| i128::from(i32::MIN) <= *value && *value <= i128::from(i32::MAX));
    if in_int {
        out.push_str("enum {\n");
        for (index, (member, value)) in members.iter().zip(&values).enumerate() {
            member_comment(&mut out, member.docs);
            let comma = if index + 1 < members.len() { "," } else { "" };
            out.push_str(&format!("    {} = {value}{comma}\n", member.declaration));
        }
        out.push_str("};\n");
    } else {
        let unsigned = repr.starts_with('u') || repr.starts_with("unsigned") || repr == "size_t";
        for (member, value) in members.iter().zip(&values) {
            doc_comment(&mut out, member.docs, "");
            let literal = match (unsigned, *value) {
                (true, value) => format!("UINT64_C({value})"),
                (false, value) if value == i128::from(i64::MIN) => {
                    "(-INT64_C(9223372036854775807) - 1)".to_owned()
                }
                (false, value) => format!("INT64_C({value})"),
            };
            out.push_str(&format!(
                "#define {} (({name}){literal})\n",
                member.declaration
            ));
        }
    }
    out
}

/// The defined types and which others each one names.
struct Graph<'a> {
    /// By name; the `BTreeMap` keeps every walk in name order.
    nodes: BTreeMap<&'a str, &'a Declaration>,
}

impl<'a> Graph<'a> {
    fn new(nodes: &BTreeMap<&'a str, &'a Declaration>) -> Graph<'a> {
        Graph {
            nodes: nodes.clone(),
        }
    }

    /// The defined types `name` names, each with whether it is by value.
    fn uses(&self, name: &str) -> Vec<(&'a str, bool)> {
        let Some(declaration) = self.nodes.get(name) else {
            return Vec::new();
        };
        declaration
            .types
            .iter()
            .filter_map(|used| {
                let (&key, _) = self.nodes.get_key_value(used.name.as_str())?;
                Some((key, used.by_value))
            })
            .collect()
    }

    /// The strongly connected components (Tarjan), each one's uses in
    /// components before it.
    fn components(&self) -> Vec<Vec<&'a str>> {
        struct Walk<'a> {
            index: BTreeMap<&'a str, usize>,
            low: BTreeMap<&'a str, usize>,
            stack: Vec<&'a str>,
            components: Vec<Vec<&'a str>>,
        }
        fn visit<'a>(graph: &Graph<'a>, walk: &mut Walk<'a>, node: &'a str) {
            let index = walk.index.len();
            walk.index.insert(node, index);
            walk.low.insert(node, index);
            walk.stack.push(node);
            for (next, _) in graph.uses(node) {
                if !walk.index.contains_key(next) {
                    visit(graph, walk, next);
                    let low = walk.low[node].min(walk.low[next]);
                    walk.low.insert(node, low);
                } else if walk.stack.contains(&next) {
                    let low = walk.low[node].min(walk.index[next]);
                    walk.low.insert(node, low);
                }
            }
            if walk.low[node] == walk.index[node] {
                let at = walk
                    .stack
                    .iter()
                    .rposition(|&on| on == node)
                    .expect("on the stack");
                let mut component = walk.stack.split_off(at);
                component.sort_unstable();
                walk.components.push(component);
            }
        }
        let mut walk = Walk {
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            components: Vec::new(),
        };
        for &node in self.nodes.keys() {
            if !walk.index.contains_key(node) {
                visit(self, &mut walk, node);
            }
        }
        walk.components
    }

    /// The definitions of one component in an order C accepts, each with
    /// whether it is forward-declared: in a cycle, the structs another
    /// member points to are.
    fn order_component(
        &self,
        component: &[&'a str],
    ) -> Result<Vec<(&'a Declaration, bool)>, Error> {
        let cyclic = component.len() > 1
            || self
                .uses(component[0])
                .iter()
                .any(|(used, _)| *used == component[0]);
        let forward: Vec<&str> = component
            .iter()
            .copied()
            .filter(|name| cyclic && self.nodes[name].kind == Kind::Struct)
            .filter(|name| {
                component.iter().any(|from| {
                    self.uses(from)
                        .iter()
                        .any(|(used, by_value)| used == name && !by_value)
                })
            })
            .collect();
        // What each member needs defined before it: the members it names,
        // but those it only points to that are forward-declared.
        let needs = |name: &str| -> Vec<&'a str> {
            self.uses(name)
                .into_iter()
                .filter(|(used, by_value)| {
                    component.contains(used) && (*by_value || !forward.contains(used))
                })
                .map(|(used, _)| used)
                .collect()
        };
        let mut ordered: Vec<&'a str> = Vec::new();
        while ordered.len() < component.len() {
            let next = component.iter().copied().find(|name| {
                !ordered.contains(name) && needs(name).iter().all(|used| ordered.contains(used))
            });
            match next {
                Some(name) => ordered.push(name),
                None => {
                    let names: Vec<String> = component
                        .iter()
                        .filter(|name| !ordered.contains(name))
                        .map(|name| (*name).to_owned())
                        .collect();
                    return Err(Error::TypeCycle { names });
                }
            }
        }
        Ok(ordered
            .into_iter()
            .map(|name| (self.nodes[name], forward.contains(&name)))
            .collect())
    }
}

pub(crate) fn is_c_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first == '_' || first.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests;
