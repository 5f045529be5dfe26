//! Imports of the vetted modules (the settings' `modules`): static `import`
//! declarations and `import()` become calls of the guest's
//! `__wrepl_import(specifier, digest)`, which loads the module through the
//! `ImportModule` tool (so the load is a recorded inner call) and then
//! imports it from the guest's module registry.
//!
//! - `import a, {b as c} from "m"` → `var {default: a, b: c} = await __wrepl_import("m", "<sha256>");`
//! - `import * as ns from "m"` → `var ns = await __wrepl_import("m", "<sha256>");`
//! - `import "m"` → `await __wrepl_import("m", "<sha256>");`
//! - `import(expr)` → `__wrepl_import(expr)` (with the digest when `expr` is a string literal)
//!
//! The digest is the module's as it is on disk when the code is prepared:
//! it is part of the call's input, so a resumed session whose module
//! changed sees the call differ from its recording (drift), instead of
//! silently running old code against a new module. Declarations keep
//! their line count (a multi-line import becomes one line and the same
//! number of line breaks), so errors keep their lines.

use oxc_allocator::Allocator;
use oxc_ast::ast::{Expression, ImportDeclarationSpecifier, ImportExpression, ModuleExportName, Statement};
use oxc_ast_visit::{walk, Visit};
use oxc_parser::{ParseOptions, Parser};
use oxc_span::{GetSpan, SourceType};

use super::{line_col, ScriptRejected};

/// The name of the guest function imports become.
pub(crate) const IMPORT_FUNCTION: &str = "__wrepl_import";

/// Where the digests of the configured modules come from.
pub trait ModuleDigests: Send + Sync {
    /// The SHA-256 (hex) of module `name` as it is now; `None` when no
    /// module of that name is configured (the import then fails when it
    /// runs, saying which setting to add) or it cannot be read.
    fn digest(&self, name: &str) -> Option<String>;
}

struct Edit {
    at: usize,
    remove: usize,
    insert: String,
}

struct Finder<'d> {
    digests: &'d dyn ModuleDigests,
    edits: Vec<Edit>,
    refused: Option<(String, u32)>,
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

impl Finder<'_> {
    fn call(&self, specifier: &str) -> String {
        match self.digests.digest(specifier) {
            Some(d) => format!("{IMPORT_FUNCTION}({}, {})", quoted(specifier), quoted(&d)),
            None => format!("{IMPORT_FUNCTION}({})", quoted(specifier)),
        }
    }
}

impl<'a> Visit<'a> for Finder<'_> {
    fn visit_import_expression(&mut self, it: &ImportExpression<'a>) {
        if it.phase.is_some() {
            self.refused.get_or_insert(("a source or defer phase import".into(), it.span.start));
        }
        // `import` becomes the function's name; a literal specifier gets
        // its digest as the second argument (options are not supported).
        self.edits.push(Edit { at: it.span.start as usize, remove: "import".len(), insert: IMPORT_FUNCTION.into() });
        if let (Expression::StringLiteral(s), None) = (&it.source, &it.options) {
            if let Some(d) = self.digests.digest(&s.value) {
                self.edits.push(Edit { at: s.span.end as usize, remove: 0, insert: format!(", {}", quoted(&d)) });
            }
        } else if it.options.is_some() {
            self.refused.get_or_insert(("import() with options".into(), it.span.start));
        }
        walk::walk_import_expression(self, it);
    }
}

/// `code` with its imports rewritten (see the module docs), or `None` when
/// it has none or does not parse as a module (then the ordinary transform
/// judges it). An import this cannot express is refused.
pub(super) fn rewrite_imports(code: &str, digests: &dyn ModuleDigests) -> Result<Option<String>, ScriptRejected> {
    let allocator = Allocator::default();
    let options = ParseOptions { allow_return_outside_function: false, ..ParseOptions::default() };
    let parsed = Parser::new(&allocator, code, SourceType::mjs()).with_options(options).parse();
    if !parsed.diagnostics.is_empty() || parsed.panicked {
        return Ok(None);
    }
    let mut finder = Finder { digests, edits: Vec::new(), refused: None };
    for stmt in &parsed.program.body {
        let Statement::ImportDeclaration(decl) = stmt else {
            finder.visit_statement(stmt);
            continue;
        };
        if decl.phase.is_some() || decl.with_clause.is_some() {
            finder.refused.get_or_insert(("an import with a phase or attributes".into(), decl.span.start));
            continue;
        }
        let call = finder.call(&decl.source.value);
        let mut pattern: Vec<String> = Vec::new();
        let mut namespace: Option<String> = None;
        let mut default: Option<String> = None;
        for s in decl.specifiers.iter().flatten() {
            match s {
                ImportDeclarationSpecifier::ImportDefaultSpecifier(d) => default = Some(d.local.name.to_string()),
                ImportDeclarationSpecifier::ImportNamespaceSpecifier(n) => namespace = Some(n.local.name.to_string()),
                ImportDeclarationSpecifier::ImportSpecifier(i) => {
                    let imported = match &i.imported {
                        ModuleExportName::StringLiteral(s) => quoted(&s.value),
                        other => other.name().to_string(),
                    };
                    pattern.push(format!("{imported}: {}", i.local.name));
                }
            }
        }
        let text = match (namespace, default) {
            (Some(ns), default) => {
                let mut t = format!("var {ns} = await {call}");
                if let Some(d) = default {
                    t.push_str(&format!(", {d} = {ns}.default"));
                }
                t + ";"
            }
            (None, Some(d)) => {
                pattern.insert(0, format!("default: {d}"));
                format!("var {{{}}} = await {call};", pattern.join(", "))
            }
            (None, None) if decl.specifiers.is_none() => format!("await {call};"),
            (None, None) => format!("var {{{}}} = await {call};", pattern.join(", ")),
        };
        let span = decl.span();
        let original = &code[span.start as usize..span.end as usize];
        let breaks = original.matches('\n').count();
        finder.edits.push(Edit {
            at: span.start as usize,
            remove: (span.end - span.start) as usize,
            insert: text + &"\n".repeat(breaks),
        });
    }
    if let Some((what, at)) = finder.refused {
        let (line, column) = line_col(code, at);
        return Err(ScriptRejected::Syntax {
            message: format!("{what} is not supported: import a module by its name from the settings' \"modules\""),
            line,
            column,
        });
    }
    if finder.edits.is_empty() {
        return Ok(None);
    }
    finder.edits.sort_by_key(|e| e.at);
    let mut out = String::with_capacity(code.len() + finder.edits.len() * 80);
    let mut pos = 0;
    for e in &finder.edits {
        if e.at < pos {
            continue;
        }
        out.push_str(&code[pos..e.at]);
        out.push_str(&e.insert);
        pos = e.at + e.remove;
    }
    out.push_str(&code[pos..]);
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Known;
    impl ModuleDigests for Known {
        fn digest(&self, name: &str) -> Option<String> {
            (name == "marked" || name == "lodash-es").then(|| format!("d-{name}"))
        }
    }

    fn rw(code: &str) -> String {
        rewrite_imports(code, &Known).unwrap().unwrap_or_else(|| code.to_string())
    }

    #[test]
    fn imports_become_calls() {
        assert_eq!(
            rw(r#"import { marked } from "marked"; marked("x")"#),
            r#"var {marked: marked} = await __wrepl_import("marked", "d-marked"); marked("x")"#
        );
        assert_eq!(
            rw("import _, { map as m,\n  filter } from 'lodash-es'\nm"),
            "var {default: _, map: m, filter: filter} = await __wrepl_import(\"lodash-es\", \"d-lodash-es\");\n\nm"
        );
        assert_eq!(
            rw("import * as L from 'lodash-es'"),
            r#"var L = await __wrepl_import("lodash-es", "d-lodash-es");"#
        );
        assert_eq!(rw("import d, * as L from 'x'"), r#"var L = await __wrepl_import("x"), d = L.default;"#);
        assert_eq!(rw("import 'marked'"), r#"await __wrepl_import("marked", "d-marked");"#);
        assert_eq!(rw("const m = await import('marked')"), r#"const m = await __wrepl_import('marked', "d-marked")"#);
        assert_eq!(rw("f(() => import(name))"), "f(() => __wrepl_import(name))");
        assert_eq!(rw("1 + 1"), "1 + 1");
        assert!(rewrite_imports("import('x', { with: { type: 'json' } })", &Known).is_err());
        assert!(rewrite_imports("import j from './a.json' with { type: 'json' }", &Known).is_err());
        // Not a module (sloppy-only syntax): left to the ordinary transform.
        assert_eq!(rewrite_imports("with (o) { x }", &Known).unwrap(), None);
    }
}
