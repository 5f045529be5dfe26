//! TypeScript input: code that is not JavaScript but parses as TypeScript
//! has its type syntax replaced by spaces, so what remains is JavaScript
//! with every line and column where it was (errors and stacks point at the
//! model's own source). Types are not checked (`wrepl types` and `tsc` are
//! for that).
//!
//! Only syntax that means nothing at run time is removed: annotations,
//! type parameters and arguments, `as`/`satisfies`/`!`/`<T>x`, interfaces,
//! type aliases, `declare`d and overload-only declarations, `implements`,
//! and the class-member modifiers `public`/`private`/`protected`/
//! `readonly`/`override`/`abstract`. Constructs that would need code
//! generated (enums, namespaces, parameter properties, `this` parameters,
//! `import x = require()`) are refused with a message saying what to write
//! instead: nothing is guessed.

use oxc_allocator::Allocator;
use oxc_ast::ast::{
    AccessorProperty, Class, FormalParameter, Function, FunctionType, MethodDefinition, PropertyDefinition,
    PropertyKey, Statement, TSAsExpression, TSEnumDeclaration, TSExportAssignment, TSExternalModuleDeclaration,
    TSGlobalDeclaration, TSImportEqualsDeclaration, TSIndexSignature, TSInterfaceDeclaration, TSNamespaceDeclaration,
    TSNonNullExpression, TSSatisfiesExpression, TSThisParameter, TSTypeAliasDeclaration, TSTypeAnnotation,
    TSTypeAssertion, TSTypeParameterDeclaration, TSTypeParameterInstantiation, VariableDeclaration, VariableDeclarator,
};
use oxc_ast_visit::{walk, Visit};
use oxc_parser::{ParseOptions, Parser};
use oxc_span::{GetSpan, SourceType, Span};

/// `code` as JavaScript, when it parses as TypeScript: `Ok(None)` when it
/// does not (the JavaScript error stands), `Err((message, offset))` for a
/// TypeScript construct that has no type-only meaning.
pub(super) fn strip(code: &str) -> Result<Option<String>, (String, u32)> {
    let allocator = Allocator::default();
    let options = ParseOptions { allow_return_outside_function: false, ..ParseOptions::default() };
    let parsed = Parser::new(&allocator, code, SourceType::ts()).with_options(options).parse();
    if !parsed.diagnostics.is_empty() || parsed.panicked {
        return Ok(None);
    }
    let mut blanker = Blanker { code, cuts: Vec::new(), semicolons: Vec::new(), refused: None };
    blanker.visit_program(&parsed.program);
    if let Some(r) = blanker.refused {
        return Err(r);
    }
    let mut out = code.as_bytes().to_vec();
    for (start, end) in blanker.cuts {
        for b in &mut out[start as usize..(end as usize).min(code.len())] {
            // Line breaks stay, so lines keep their numbers; everything
            // else (UTF-8 continuation bytes included) becomes a space.
            if *b != b'\n' && *b != b'\r' {
                *b = b' ';
            }
        }
    }
    // A removed statement or class member still ends what came before it
    // (`const a = f` / `type T = …` / `(g)()` must not become a call).
    for at in blanker.semicolons {
        if let Some(b) = out.get_mut(at as usize) {
            *b = b';';
        }
    }
    // Only whole characters were replaced (cuts are at token boundaries),
    // so this is UTF-8; a failure would be a bug here: refuse, never panic.
    String::from_utf8(out).map(Some).map_err(|_| ("the TypeScript could not be stripped".to_string(), 0))
}

struct Blanker<'s> {
    code: &'s str,
    cuts: Vec<(u32, u32)>,
    /// Where a removed statement began: a `;` goes there.
    semicolons: Vec<u32>,
    refused: Option<(String, u32)>,
}

const MODIFIERS: &[&str] = &["public", "private", "protected", "readonly", "override", "declare", "abstract"];

impl Blanker<'_> {
    fn cut(&mut self, start: u32, end: u32) {
        if start < end {
            self.cuts.push((start, end));
        }
    }

    fn cut_span(&mut self, span: Span) {
        self.cut(span.start, span.end);
    }

    /// Remove a whole statement or class member, leaving a `;`.
    fn cut_statement(&mut self, span: Span) {
        if span.start < span.end {
            self.cut(span.start, span.end);
            self.semicolons.push(span.start);
        }
    }

    /// Remove type syntax after an expression (`as T`, `satisfies T`, `!`),
    /// refusing where JavaScript would read the next line as going on
    /// (TypeScript ended the statement there, by the rule of automatic
    /// semicolons, which the removal would undo).
    fn cut_after_expression(&mut self, start: u32, end: u32) {
        self.cut(start, end);
        let rest = self.code.get(end as usize..).unwrap_or("");
        let trimmed = rest.trim_start_matches([' ', '\t']);
        if trimmed.starts_with(['\n', '\r']) {
            let next = trimmed.trim_start();
            if next.starts_with(['(', '[', '`', '+', '-', '/']) {
                self.refuse(
                    end,
                    "this line relies on an automatic semicolon after a TypeScript type, which would not hold once \
                     the type is removed: end the line with `;`",
                );
            }
        }
    }

    fn refuse(&mut self, at: u32, message: &str) {
        if self.refused.is_none() {
            self.refused = Some((message.to_string(), at));
        }
    }

    /// Cut the TypeScript-only words (`private readonly`, ...) in
    /// `[from, to)`: a class member's prefix before its name.
    fn cut_modifiers(&mut self, from: u32, to: u32) {
        let Some(text) = self.code.get(from as usize..to as usize) else { return };
        for word in text.split_whitespace() {
            if MODIFIERS.contains(&word) {
                // The word's exact byte offset in `text` (separators may be
                // any Unicode whitespace, of any length).
                let at = word.as_ptr() as usize - text.as_ptr() as usize;
                self.cut(from + at as u32, from + (at + word.len()) as u32);
            }
        }
    }

    /// Cut a `?` or `!` right after `after` (an optional or definite name).
    fn cut_mark(&mut self, after: u32, mark: u8) {
        let bytes = self.code.as_bytes();
        let mut i = after as usize;
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if bytes.get(i) == Some(&mark) {
            self.cut(i as u32, i as u32 + 1);
        }
    }

    fn key_start(key: &PropertyKey<'_>, member_start: u32, computed: bool) -> u32 {
        let start = key.span().start;
        // A computed key's `[` comes before its expression.
        if computed {
            start.saturating_sub(1).max(member_start)
        } else {
            start
        }
    }
}

impl<'a> Visit<'a> for Blanker<'_> {
    fn visit_ts_type_annotation(&mut self, it: &TSTypeAnnotation<'a>) {
        self.cut_span(it.span);
    }

    fn visit_ts_type_parameter_declaration(&mut self, it: &TSTypeParameterDeclaration<'a>) {
        self.cut_span(it.span);
    }

    fn visit_ts_type_parameter_instantiation(&mut self, it: &TSTypeParameterInstantiation<'a>) {
        self.cut_span(it.span);
    }

    fn visit_ts_as_expression(&mut self, it: &TSAsExpression<'a>) {
        self.visit_expression(&it.expression);
        self.cut_after_expression(it.expression.span().end, it.span.end);
    }

    fn visit_ts_satisfies_expression(&mut self, it: &TSSatisfiesExpression<'a>) {
        self.visit_expression(&it.expression);
        self.cut_after_expression(it.expression.span().end, it.span.end);
    }

    fn visit_ts_non_null_expression(&mut self, it: &TSNonNullExpression<'a>) {
        self.visit_expression(&it.expression);
        self.cut_after_expression(it.expression.span().end, it.span.end);
    }

    fn visit_ts_type_assertion(&mut self, it: &TSTypeAssertion<'a>) {
        // `return <T>⏎x` would return nothing once `<T>` is gone.
        let cut = self.code.get(it.span.start as usize..it.expression.span().start as usize).unwrap_or("");
        if cut.contains(['\n', '\r']) {
            self.refuse(it.span.start, "a line break after `<Type>` would end the statement once the type is removed");
        }
        self.cut(it.span.start, it.expression.span().start);
        self.visit_expression(&it.expression);
    }

    fn visit_ts_interface_declaration(&mut self, it: &TSInterfaceDeclaration<'a>) {
        self.cut_statement(it.span);
    }

    fn visit_ts_type_alias_declaration(&mut self, it: &TSTypeAliasDeclaration<'a>) {
        self.cut_statement(it.span);
    }

    fn visit_ts_enum_declaration(&mut self, it: &TSEnumDeclaration<'a>) {
        self.refuse(it.span.start, "a TypeScript enum has run-time meaning and is not supported: use an object (`const Color = {Red: 0, Green: 1}`)");
    }

    fn visit_ts_namespace_declaration(&mut self, it: &TSNamespaceDeclaration<'a>) {
        if it.declare {
            self.cut_statement(it.span);
        } else {
            self.refuse(it.span.start, "a TypeScript namespace is not supported: use an object or plain declarations");
        }
    }

    fn visit_ts_global_declaration(&mut self, it: &TSGlobalDeclaration<'a>) {
        self.cut_statement(it.span);
    }

    fn visit_ts_external_module_declaration(&mut self, it: &TSExternalModuleDeclaration<'a>) {
        self.cut_statement(it.span);
    }

    fn visit_ts_import_equals_declaration(&mut self, it: &TSImportEqualsDeclaration<'a>) {
        self.refuse(it.span.start, "`import x = ...` is not supported: this is a sealed sandbox with no module loader");
    }

    fn visit_ts_export_assignment(&mut self, it: &TSExportAssignment<'a>) {
        self.refuse(it.span.start, "`export =` is not supported: this is a sealed sandbox with no module loader");
    }

    fn visit_ts_this_parameter(&mut self, it: &TSThisParameter<'a>) {
        self.refuse(it.span.start, "a `this` parameter is not supported: remove it (types are not checked)");
    }

    fn visit_ts_index_signature(&mut self, it: &TSIndexSignature<'a>) {
        self.cut_statement(it.span);
    }

    fn visit_statement(&mut self, it: &Statement<'a>) {
        // `declare ...` statements describe what exists elsewhere: nothing runs.
        let declared = match it {
            Statement::VariableDeclaration(v) => v.declare,
            Statement::FunctionDeclaration(f) => f.declare,
            Statement::ClassDeclaration(c) => c.declare,
            _ => false,
        };
        if declared {
            self.cut_statement(it.span());
        } else {
            walk::walk_statement(self, it);
        }
    }

    fn visit_variable_declaration(&mut self, it: &VariableDeclaration<'a>) {
        walk::walk_variable_declaration(self, it);
    }

    fn visit_variable_declarator(&mut self, it: &VariableDeclarator<'a>) {
        if it.definite {
            self.cut_mark(it.id.span().end, b'!');
        }
        walk::walk_variable_declarator(self, it);
    }

    fn visit_function(&mut self, it: &Function<'a>, flags: oxc_syntax::scope::ScopeFlags) {
        // An overload signature (no body) is type information only.
        if matches!(it.r#type, FunctionType::TSDeclareFunction | FunctionType::TSEmptyBodyFunctionExpression)
            || it.body.is_none()
        {
            self.cut_statement(it.span);
            return;
        }
        walk::walk_function(self, it, flags);
    }

    fn visit_formal_parameter(&mut self, it: &FormalParameter<'a>) {
        if it.accessibility.is_some() || it.readonly || it.r#override {
            self.refuse(
                it.span.start,
                "a TypeScript parameter property (`constructor(private x)`) is not supported: declare the field and \
                 assign it in the constructor",
            );
            return;
        }
        if it.optional {
            self.cut_mark(it.pattern.span().end, b'?');
        }
        walk::walk_formal_parameter(self, it);
    }

    fn visit_class(&mut self, it: &Class<'a>) {
        if it.r#abstract {
            // `abstract class`: the word before `class`.
            // Only before the `class` keyword (the body may say `abstract` too).
            let head =
                self.code.get(it.span.start as usize..it.span.end as usize).and_then(|t| t.split("class").next());
            if let Some(i) = head.and_then(|h| h.find("abstract")) {
                self.cut(it.span.start + i as u32, it.span.start + i as u32 + 8);
            }
        }
        if let (Some(first), Some(last)) = (it.implements.first(), it.implements.last()) {
            let before = self.code.get(..first.span.start as usize).unwrap_or("");
            if let Some(k) = before.rfind("implements") {
                self.cut(k as u32, last.span.end);
            }
        }
        walk::walk_class(self, it);
    }

    fn visit_property_definition(&mut self, it: &PropertyDefinition<'a>) {
        if it.declare || it.r#type == oxc_ast::ast::PropertyDefinitionType::TSAbstractPropertyDefinition {
            self.cut_statement(it.span);
            return;
        }
        self.cut_modifiers(it.span.start, Self::key_start(&it.key, it.span.start, it.computed));
        if it.optional {
            self.cut_mark(it.key.span().end + u32::from(it.computed), b'?');
        }
        if it.definite {
            self.cut_mark(it.key.span().end + u32::from(it.computed), b'!');
        }
        walk::walk_property_definition(self, it);
    }

    fn visit_accessor_property(&mut self, it: &AccessorProperty<'a>) {
        self.cut_modifiers(it.span.start, Self::key_start(&it.key, it.span.start, it.computed));
        walk::walk_accessor_property(self, it);
    }

    fn visit_method_definition(&mut self, it: &MethodDefinition<'a>) {
        // An abstract method or an overload signature has no body.
        if it.value.body.is_none() {
            self.cut_statement(it.span);
            return;
        }
        self.cut_modifiers(it.span.start, Self::key_start(&it.key, it.span.start, it.computed));
        if it.optional {
            self.cut_mark(it.key.span().end + u32::from(it.computed), b'?');
        }
        walk::walk_method_definition(self, it);
    }
}

#[cfg(test)]
mod tests {
    use super::strip;

    fn js(ts: &str) -> String {
        let out = strip(ts).unwrap().unwrap_or_else(|| panic!("{ts:?} is TypeScript"));
        assert_eq!(out.len(), ts.len(), "positions are kept");
        assert_eq!(out.lines().count(), ts.lines().count());
        out
    }

    #[test]
    fn type_syntax_becomes_spaces() {
        assert_eq!(
            js("const n: number = 21; n * 2").split_whitespace().collect::<Vec<_>>().join(" "),
            "const n = 21; n * 2"
        );
        let cases = [
            ("function f<T>(a: T, b?: string): T[] { return [a] }", "function f (a , b ) { return [a] }"),
            ("let x = y as unknown as number;", "let x = y ;"),
            ("let z = obj!.a!.b satisfies B;", "let z = obj .a .b ;"),
            ("interface A { a: number }\nconst q = <any>p;", "; const q = p;"),
            ("type T = {a: 1} | null; let v!: T;", "; let v ;"),
            (
                "class C<T> extends B<T> implements I, J { private readonly x: number = 1; static y?: string; constructor() { super() } public m(): void {} }",
                "class C extends B { x = 1; static y ; constructor() { super() } m() {} }",
            ),
            ("abstract class K { abstract m(): void; n() { return 1 } }", "class K { ; n() { return 1 } }"),
            ("class U { private\u{a0}readonly\u{2003}ü = 1 }", "class U { ü = 1 }"),
            ("declare const g: any;\nfunction o(a: string): void;\nfunction o(a: any) { return a }", "; ; function o(a ) { return a }"),
            ("const f = async <T,>(x: T): Promise<T> => x; f<number>(1)", "const f = async (x ) => x; f (1)"),
        ];
        // A removed statement still ends the one before it.
        assert_eq!(
            js("const a = f\ntype T = number\n(g)()").split_whitespace().collect::<Vec<_>>().join(" "),
            "const a = f ; (g)()"
        );
        for (ts, want) in cases {
            let got = js(ts).split_whitespace().collect::<Vec<_>>().join(" ");
            assert_eq!(got, want, "{ts}");
        }
    }

    #[test]
    fn javascript_and_run_time_constructs_are_left_alone_or_refused() {
        // Not TypeScript either: the JavaScript error stands.
        assert!(strip("let = ;").unwrap().is_none());
        for (ts, says) in [
            ("enum Color { Red }", "enum"),
            ("namespace N { export const a = 1 }", "namespace"),
            ("class P { constructor(private x: number) {} }", "parameter property"),
            ("function f(this: Window) {}", "`this` parameter"),
            ("let x = y as T\n(z)", "end the line with `;`"),
            ("function r() { return <T>\nx }", "line break after `<Type>`"),
        ] {
            let (message, _) = strip(ts).unwrap_err();
            assert!(message.contains(says), "{ts}: {message}");
        }
    }
}
