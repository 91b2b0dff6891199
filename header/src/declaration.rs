//! One declaration, as a library records it: a function, a table of
//! `local` callbacks, or a type defined in Rust.

use crate::format;

/// What a declaration declares: an exported function, a `local`
/// callback's pointer type, a table, or a type defined in Rust.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// An exported symbol (`#[c_callback]`, `export = "sym"`, the error
    /// API): the header declares the function and its pointer type.
    Export,
    /// A `#[c_callback(local)]`: no symbol; the header declares its
    /// function-pointer type `name_fn`.
    LocalCallback,
    /// A table of `local` callbacks (`callgate::export_table!`): an
    /// exported, read-only struct of their function pointers; the header
    /// defines its struct type and declares `extern const Type name`.
    Table,
    /// A `#[derive(CEnum)]` enum: the header defines it as the integer of
    /// its `repr` and names the variants' values.
    Enum,
    /// A `#[derive(CValue)]` `#[repr(C)]` struct: the header defines it,
    /// field for field.
    Struct,
    /// A `#[derive(CValue)]` `#[repr(transparent)]` struct: the header
    /// defines it as its field's type.
    Typedef,
}

impl Kind {
    /// The record's `KIND` field.
    fn field(self) -> &'static str {
        match self {
            Kind::Export => format::EXPORT,
            Kind::LocalCallback => format::LOCAL,
            Kind::Table => format::TABLE,
            Kind::Enum => format::ENUM,
            Kind::Struct => format::STRUCT,
            Kind::Typedef => format::TYPEDEF,
        }
    }

    /// The kind a record's `KIND` field names.
    pub(crate) fn from_field(field: &str) -> Option<Kind> {
        Some(match field {
            format::EXPORT => Kind::Export,
            format::LOCAL => Kind::LocalCallback,
            format::TABLE => Kind::Table,
            format::ENUM => Kind::Enum,
            format::STRUCT => Kind::Struct,
            format::TYPEDEF => Kind::Typedef,
            _ => return None,
        })
    }

    /// True for the kinds that define a type.
    pub fn is_type(self) -> bool {
        matches!(self, Kind::Enum | Kind::Struct | Kind::Typedef)
    }
}

/// A type defined in Rust that a declaration names (a `#[repr(C)]` struct,
/// an opaque handle, a type alias).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RustType {
    pub(crate) name: String,
    pub(crate) by_value: bool,
}

impl RustType {
    /// The type's name, as in Rust and in the header.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// True if C passes or receives it by value somewhere (so C needs its
    /// definition to make the call), false if only behind pointers.
    pub fn by_value(&self) -> bool {
        self.by_value
    }
}

/// One C declaration, as recorded in the compiled library.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Declaration {
    pub(crate) kind: Kind,
    pub(crate) name: String,
    /// The C declaration with [`format::NAME_SLOT`] where the name goes
    /// (for a type, as [`format`](mod@crate::format) says for its kind).
    pub(crate) signature: String,
    /// Sorted by name.
    pub(crate) types: Vec<RustType>,
    pub(crate) docs: String,
    /// The function that frees the owned result, if it returns one.
    pub(crate) free: String,
}

/// A member of an enum or a struct a library defines: a named constant or
/// a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member<'a> {
    /// A field's C declaration (`double x`), or a constant's name.
    pub declaration: &'a str,
    /// A constant's value in decimal; empty for a field.
    pub value: &'a str,
    /// Its doc comment.
    pub docs: &'a str,
}

impl Declaration {
    /// Whether this is an exported function or a `local` callback.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The exported symbol, or the `local` callback's Rust name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The name of its type: the function-pointer type `name_fn` of a
    /// function, the struct type of a table, the name of a type.
    pub fn pointer_type_name(&self) -> String {
        match self.kind {
            Kind::Export | Kind::LocalCallback => format!("{}_fn", self.name),
            Kind::Table => self.table_type().to_owned(),
            Kind::Enum | Kind::Struct | Kind::Typedef => self.name.clone(),
        }
    }

    /// The exported function that frees what this function returns, if it
    /// returns an owned result.
    pub fn free_function(&self) -> Option<&str> {
        Some(self.free.as_str()).filter(|free| !free.is_empty())
    }

    /// An enum's C integer type (`uint8_t`); `None` for other kinds.
    pub fn enum_repr(&self) -> Option<&str> {
        match self.kind {
            Kind::Enum => self.signature.split(format::MEMBER_SEPARATOR).next(),
            _ => None,
        }
    }

    /// An enum's constants or a struct's fields, in order, with their
    /// docs; empty for other kinds.
    pub fn members(&self) -> Vec<Member<'_>> {
        let mut signature = self.signature.split(format::MEMBER_SEPARATOR);
        match self.kind {
            Kind::Enum => {
                signature.next();
            }
            Kind::Struct => {}
            _ => return Vec::new(),
        }
        let mut docs = self.docs.split(format::MEMBER_SEPARATOR).skip(1);
        signature
            .map(|member| {
                let (declaration, value) = match self.kind {
                    Kind::Enum => member.split_once('=').unwrap_or((member, "")),
                    _ => (member, ""),
                };
                Member {
                    declaration,
                    value,
                    docs: docs.next().unwrap_or_default(),
                }
            })
            .collect()
    }

    /// The C declaration of its symbol without the `;`: a function's
    /// prototype, e.g. `int32_t parse(const char *text, double *out)`, or a
    /// table's `extern const Callbacks callbacks`; `None` for a `local`
    /// callback or a type, which have no symbol to declare.
    pub fn prototype(&self) -> Option<String> {
        match self.kind {
            Kind::Export => Some(self.signature.replace(format::NAME_SLOT, &self.name)),
            Kind::Table => Some(format!("extern const {} {}", self.table_type(), self.name)),
            _ => None,
        }
    }

    /// The typedef of its type without the `;`: a function's pointer type,
    /// e.g. `typedef int32_t (*parse_fn)(const char *text, double *out)`,
    /// or a table's struct, each field of the type `name_fn` of its
    /// `local` callback `name`, and named `name` (`name_` if C or C++ code
    /// cannot use it: [`format::is_reserved`]). For a type, its definition
    /// as the header writes it when no pointer cycle runs through it.
    pub fn pointer_typedef(&self) -> String {
        if self.kind.is_type() {
            return crate::types::definition(self, false);
        }
        if self.kind == Kind::Table {
            let ty = self.table_type();
            let fields: String = self
                .table_fields()
                .into_iter()
                .map(|field| {
                    let escape = if format::is_reserved(field) { "_" } else { "" };
                    format!("    {field}_fn {field}{escape};\n")
                })
                .collect();
            return format!("typedef struct {ty} {{\n{fields}}} {ty}");
        }
        let declarator = format!("(*{})", self.pointer_type_name());
        format!(
            "typedef {}",
            self.signature.replace(format::NAME_SLOT, &declarator)
        )
    }

    /// A table's fields, each the name of a `local` callback; empty for a
    /// function.
    pub fn table_fields(&self) -> Vec<&str> {
        match self.kind {
            Kind::Table => self
                .signature
                .split(format::TYPE_SEPARATOR)
                .skip(1)
                .filter(|field| !field.is_empty())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// A table's struct type: the first word of its signature.
    fn table_type(&self) -> &str {
        self.signature
            .split(format::TYPE_SEPARATOR)
            .next()
            .unwrap_or_default()
    }

    /// The Rust-defined types its signature names, sorted by name.
    pub fn rust_types(&self) -> &[RustType] {
        &self.types
    }

    /// The Rust doc comment, one line per `///` line (of the type only,
    /// for an enum or a struct: see [`Declaration::members`]).
    pub fn docs(&self) -> &str {
        self.docs
            .split(format::MEMBER_SEPARATOR)
            .next()
            .unwrap_or_default()
    }

    /// The record a library holds for this declaration, byte for byte as
    /// `#[c_callback]` writes it (see [`format`](mod@crate::format)):
    /// [`extract`](crate::extract) of these bytes gives this declaration
    /// back.
    pub fn to_record(&self) -> Vec<u8> {
        let types: Vec<String> = self
            .types
            .iter()
            .map(|RustType { name, by_value }| {
                if *by_value {
                    name.clone()
                } else {
                    format!("{}{name}", format::BEHIND_POINTER)
                }
            })
            .collect();
        let types = types.join(&format::TYPE_SEPARATOR.to_string());
        let version = format::VERSION.to_string();
        let mut record = format::START.to_vec();
        for field in [
            version.as_str(),
            self.kind.field(),
            &self.name,
            &self.signature,
            &types,
            &self.docs,
            &self.free,
        ] {
            record.extend_from_slice(field.as_bytes());
            record.push(format::FIELD_END);
        }
        record.extend_from_slice(format::END);
        record
    }

    /// How a conflict names it: the prototype, or the typedef of a `local`
    /// callback.
    pub(crate) fn describe(&self) -> String {
        self.prototype().unwrap_or_else(|| self.pointer_typedef())
    }
}

/// Sorted by name (then by content, for determinism), identical ones once.
pub(crate) fn sorted(mut declarations: Vec<Declaration>) -> Vec<Declaration> {
    declarations.sort_by(|a, b| {
        (&a.name, a.kind, &a.signature, &a.types, &a.docs, &a.free).cmp(&(
            &b.name,
            b.kind,
            &b.signature,
            &b.types,
            &b.docs,
            &b.free,
        ))
    });
    declarations.dedup();
    declarations
}
