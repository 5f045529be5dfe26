//! The sealed-sandbox scan: module syntax (`import`/`export` declarations,
//! `import()`, `import.meta`, `require()`) is refused before evaluation.

use oxc_allocator::Allocator;
use oxc_ast::ast::{
    CallExpression, ExportAllDeclaration, ExportDefaultDeclaration, ExportNamedDeclaration, Expression,
    ImportDeclaration, ImportExpression, ImportMeta, Statement,
};
use oxc_ast_visit::{walk, Visit};
use oxc_parser::{ParseOptions, Parser};
use oxc_span::{GetSpan, SourceType};

use super::{line_col, ScriptRejected};

struct SealedScan<'s> {
    code: &'s str,
    /// Where `code` starts in the text that was parsed.
    shift: u32,
    found: Option<ScriptRejected>,
}

impl SealedScan<'_> {
    fn report(&mut self, what: &'static str, offset: u32) {
        if self.found.is_none() {
            let (line, column) = line_col(self.code, offset.saturating_sub(self.shift));
            self.found = Some(ScriptRejected::Sealed { what, line, column });
        }
    }
}

impl<'a> Visit<'a> for SealedScan<'_> {
    fn visit_import_expression(&mut self, it: &ImportExpression<'a>) {
        self.report("import()", it.span.start);
        walk::walk_import_expression(self, it);
    }
    // The parser leaves a declaration in the wrong place (`import` in a
    // function body) to a later pass: every one of them is refused here.
    fn visit_import_declaration(&mut self, it: &ImportDeclaration<'a>) {
        self.report("an import declaration", it.span.start);
    }
    fn visit_export_named_declaration(&mut self, it: &ExportNamedDeclaration<'a>) {
        self.report("an export declaration", it.span.start);
    }
    fn visit_export_default_declaration(&mut self, it: &ExportDefaultDeclaration<'a>) {
        self.report("an export declaration", it.span.start);
    }
    fn visit_export_all_declaration(&mut self, it: &ExportAllDeclaration<'a>) {
        self.report("an export declaration", it.span.start);
    }
    fn visit_import_meta(&mut self, it: &ImportMeta) {
        self.report("import.meta", it.span.start);
    }
    fn visit_call_expression(&mut self, it: &CallExpression<'a>) {
        if let Expression::Identifier(id) = &it.callee {
            if id.name == "require" {
                self.report("require()", it.span.start);
            }
        }
        walk::walk_call_expression(self, it);
    }
}

/// Module syntax in `code` (an `import`/`export` declaration, `import()`,
/// `import.meta`, `require()`), found by parsing it as a script or a module,
/// whichever it is: code the guest's goal refused gets the sealed message
/// when it is module code.
pub(super) fn module_syntax(code: &str) -> Option<ScriptRejected> {
    let allocator = Allocator::default();
    let options = ParseOptions { allow_return_outside_function: false, ..ParseOptions::default() };
    let parsed = Parser::new(&allocator, code, SourceType::unambiguous()).with_options(options).parse();
    if !parsed.diagnostics.is_empty() || parsed.panicked {
        return None;
    }
    sealed_scan(code, &parsed.program, 0).err()
}

/// The sealed scan of a parsed program (`shift`: where `code` starts in the
/// text that was parsed).
pub(super) fn sealed_scan(code: &str, program: &oxc_ast::ast::Program<'_>, shift: u32) -> Result<(), ScriptRejected> {
    let mut scan = SealedScan { code, shift, found: None };
    for stmt in &program.body {
        if stmt.is_module_declaration() {
            let what = match stmt {
                Statement::ImportDeclaration(_) => "an import declaration",
                _ => "an export declaration",
            };
            scan.report(what, stmt.span().start);
        }
    }
    scan.visit_program(program);
    scan.found.map_or(Ok(()), Err)
}
