//! `CType`, a C type, and how C writes it: the inside-out declarator
//! syntax, where `const` goes, and parameter names C and C++ accept.

use crate::format;

/// A C type, enough to write declarators: `const char *`, `int32_t (*)[4]`,
/// `void (*)(int32_t)`. Parameter names are the Rust ones; [`CType::declare`]
/// writes them as C accepts them (see [`parameter_names`]).
pub(crate) enum CType {
    Named {
        name: String,
        constant: bool,
    },
    Pointer {
        to: Box<CType>,
        /// The pointer itself is `const` (`*const *mut T` → `T *const *`).
        constant: bool,
    },
    Array {
        of: Box<CType>,
        len: String,
    },
    Function {
        ret: Box<CType>,
        params: Vec<(Option<String>, CType)>,
        variadic: bool,
    },
}

impl CType {
    pub(super) fn named(name: &str) -> CType {
        CType::Named {
            name: name.to_owned(),
            constant: false,
        }
    }

    pub(super) fn pointer(to: CType) -> CType {
        CType::Pointer {
            to: Box::new(to),
            constant: false,
        }
    }

    /// `const`-qualified when `yes`. A `const` array is an array of `const`
    /// elements in C; a function cannot be qualified.
    pub(super) fn qualified(self, yes: bool) -> CType {
        if !yes {
            return self;
        }
        match self {
            CType::Named { name, .. } => CType::Named {
                name,
                constant: true,
            },
            CType::Pointer { to, .. } => CType::Pointer { to, constant: true },
            CType::Array { of, len } => CType::Array {
                of: Box::new(of.qualified(true)),
                len,
            },
            function @ CType::Function { .. } => function,
        }
    }

    /// The C declaration of `declarator` (a name, or empty for a type name)
    /// with this type: C's inside-out declarator syntax.
    pub fn declare(&self, declarator: &str) -> String {
        match self {
            CType::Named { name, constant } => {
                let constant = if *constant { "const " } else { "" };
                if declarator.is_empty() {
                    format!("{constant}{name}")
                } else {
                    format!("{constant}{name} {declarator}")
                }
            }
            CType::Pointer { to, constant } => {
                let mut inner = String::from("*");
                if *constant {
                    inner.push_str("const");
                    if !declarator.is_empty() {
                        inner.push(' ');
                    }
                }
                inner.push_str(declarator);
                if matches!(**to, CType::Array { .. } | CType::Function { .. }) {
                    inner = format!("({inner})");
                }
                to.declare(&inner)
            }
            CType::Array { of, len } => of.declare(&format!("{declarator}[{len}]")),
            CType::Function {
                ret,
                params,
                variadic,
            } => {
                let names = parameter_names(params);
                let mut list: Vec<String> = params
                    .iter()
                    .zip(&names)
                    .map(|((_, ty), name)| ty.declare(name.as_deref().unwrap_or("")))
                    .collect();
                if *variadic {
                    list.push("...".to_owned());
                }
                let list = if list.is_empty() {
                    "void".to_owned()
                } else {
                    list.join(", ")
                };
                ret.declare(&format!("{declarator}({list})"))
            }
        }
    }

    /// The words of the type names it is written with (`size_t`,
    /// `Session`, `unsigned`), in function pointers' parameters too.
    fn type_names<'a>(&'a self, names: &mut Vec<&'a str>) {
        match self {
            CType::Named { name, .. } => names.extend(name.split_whitespace()),
            CType::Pointer { to, .. } => to.type_names(names),
            CType::Array { of, .. } => of.type_names(names),
            CType::Function { ret, params, .. } => {
                ret.type_names(names);
                for (_, ty) in params {
                    ty.type_names(names);
                }
            }
        }
    }
}

/// The C names of a parameter list's Rust names: each [`c_identifier`],
/// then given more `_` while it is a type the list names (a parameter
/// `size_t` hides the type from the parameters after it) or the name of
/// an earlier parameter (`class_` after `class`).
pub(crate) fn parameter_names(params: &[(Option<String>, CType)]) -> Vec<Option<String>> {
    let mut types = Vec::new();
    for (_, ty) in params {
        ty.type_names(&mut types);
    }
    let mut given: Vec<String> = Vec::new();
    params
        .iter()
        .map(|(name, _)| {
            let mut name = c_identifier(name.as_deref()?);
            while types.contains(&name.as_str()) || given.contains(&name) {
                name.push('_');
            }
            given.push(name.clone());
            Some(name)
        })
        .collect()
}

pub(super) fn const_char_pointer() -> CType {
    CType::pointer(CType::named("char").qualified(true))
}

/// `name` as a C parameter name: with a trailing `_` if C or C++ code
/// cannot use it ([`format::is_reserved`]: `class`, `_Bool`, `NULL`).
fn c_identifier(name: &str) -> String {
    if format::is_reserved(name) {
        format!("{name}_")
    } else {
        name.to_owned()
    }
}
