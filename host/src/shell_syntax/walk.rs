//! The walk over brush's AST: lists, pipelines, compound commands, tests,
//! simple commands, assignments and redirections, collecting the commands
//! and the first constructs that matter.

use brush_parser::ast;
use brush_parser::ParserOptions;

use super::guarded;
use super::model::{Assignment, Command, Construct, Redirect, Script, Word};
use super::words::Acc;

/// Walks the AST, collecting commands and constructs.
pub(super) struct Walker {
    pub(super) opts: ParserOptions,
    pub(super) depth: usize,
    pub(super) script: Script,
    /// Spans (character indices) of here-document bodies and end tags: not
    /// words.
    pub(super) here_docs: Vec<(usize, usize)>,
}

impl Walker {
    pub(super) fn structure(&mut self, c: Construct) {
        if self.script.structure.is_none() {
            self.script.structure = Some(c);
        }
    }

    pub(super) fn opaque(&mut self, c: Construct) {
        if self.script.opaque.is_none() {
            self.script.opaque = Some(c.clone());
        }
        self.structure(c);
    }

    pub(super) fn list(&mut self, list: &ast::CompoundList, top: bool) {
        for ast::CompoundListItem(and_or, sep) in &list.0 {
            if top && matches!(sep, ast::SeparatorOperator::Async) {
                self.structure(Construct::Background);
            }
            self.pipeline(&and_or.first, top);
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p, top),
                }
            }
        }
    }

    fn pipeline(&mut self, p: &ast::Pipeline, top: bool) {
        if top && p.timed.is_some() {
            self.structure(Construct::Time);
        }
        for c in &p.seq {
            self.command(c, top);
        }
    }

    fn redirect_list(&mut self, list: &Option<ast::RedirectList>) {
        for r in list.iter().flat_map(|l| l.0.iter()) {
            self.redirect(r);
        }
    }

    fn command(&mut self, c: &ast::Command, top: bool) {
        match c {
            ast::Command::Simple(s) => self.simple(s, top),
            ast::Command::Compound(cc, redirects) => {
                if top {
                    let what = compound_name(cc);
                    self.structure(Construct::Compound(what));
                }
                self.compound(cc);
                self.redirect_list(redirects);
            }
            ast::Command::Function(f) => {
                if top {
                    self.structure(Construct::Function);
                }
                self.word(&f.fname.value);
                self.compound(&f.body.0);
                self.redirect_list(&f.body.1);
            }
            ast::Command::ExtendedTest(t, redirects) => {
                if top {
                    self.structure(Construct::Compound("a `[[ … ]]` test"));
                }
                self.test(&t.expr);
                self.redirect_list(redirects);
            }
        }
    }

    fn compound(&mut self, cc: &ast::CompoundCommand) {
        use ast::CompoundCommand as C;
        match cc {
            C::Arithmetic(a) => self.arith(&a.expr.value),
            C::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater].into_iter().flatten() {
                    self.arith(&e.value);
                }
                self.list(&f.body.list, false);
            }
            C::BraceGroup(b) => self.list(&b.list, false),
            C::Subshell(s) => self.list(&s.list, false),
            C::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(&w.value);
                }
                self.list(&f.body.list, false);
            }
            C::CaseClause(c) => {
                self.word(&c.value.value);
                for item in &c.cases {
                    for p in &item.patterns {
                        self.word(&p.value);
                    }
                    if let Some(l) = &item.cmd {
                        self.list(l, false);
                    }
                }
            }
            C::IfClause(i) => {
                self.list(&i.condition, false);
                self.list(&i.then, false);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.list(c, false);
                    }
                    self.list(&e.body, false);
                }
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                self.list(&w.0, false);
                self.list(&w.1.list, false);
            }
            C::Coprocess(c) => self.command(&c.body, false),
        }
    }

    fn test(&mut self, e: &ast::ExtendedTestExpr) {
        use ast::BinaryPredicate as B;
        use ast::ExtendedTestExpr as E;
        match e {
            E::And(a, b) | E::Or(a, b) => {
                self.test(a);
                self.test(b);
            }
            E::Not(a) | E::Parenthesized(a) => self.test(a),
            E::UnaryTest(pred, w) => {
                let w = self.word(&w.value);
                let names_variable = matches!(
                    pred,
                    ast::UnaryPredicate::ShellVariableIsSetAndAssigned
                        | ast::UnaryPredicate::ShellVariableIsSetAndNameRef
                );
                if names_variable && w.lit.as_deref().is_none_or(|v| v.contains('[')) {
                    self.opaque(Construct::ArithmeticOver(format!("-v {}", w.raw)));
                }
            }
            E::BinaryTest(pred, l, r) => {
                let l = self.word(&l.value);
                let r = self.word(&r.value);
                let arithmetic = matches!(
                    pred,
                    B::ArithmeticEqualTo
                        | B::ArithmeticNotEqualTo
                        | B::ArithmeticLessThan
                        | B::ArithmeticLessThanOrEqualTo
                        | B::ArithmeticGreaterThan
                        | B::ArithmeticGreaterThanOrEqualTo
                );
                if arithmetic {
                    for w in [&l, &r] {
                        match &w.lit {
                            Some(v) => self.arith(v),
                            None => self.opaque(Construct::ArithmeticOver(w.raw.clone())),
                        }
                    }
                }
            }
        }
    }

    fn simple(&mut self, s: &ast::SimpleCommand, top: bool) {
        use ast::CommandPrefixOrSuffixItem as I;
        let mut cmd = Command { assignments: Vec::new(), words: Vec::new(), redirects: Vec::new(), top };
        for item in s.prefix.iter().flat_map(|p| p.0.iter()) {
            match item {
                I::IoRedirect(r) => {
                    let r = self.redirect(r);
                    cmd.redirects.push(r);
                }
                I::AssignmentWord(a, _) => {
                    let a = self.assignment(a);
                    cmd.assignments.push(a);
                }
                I::Word(w) => {
                    let w = self.word(&w.value);
                    cmd.words.push(w);
                }
                I::ProcessSubstitution(_, sub) => {
                    self.list(&sub.list, false);
                    cmd.words.push(Word::unknown("<(…)", Construct::ProcessSubstitution));
                }
            }
        }
        if let Some(w) = &s.word_or_name {
            let w = self.word(&w.value);
            cmd.words.push(w);
        }
        for item in s.suffix.iter().flat_map(|p| p.0.iter()) {
            match item {
                I::IoRedirect(r) => {
                    let r = self.redirect(r);
                    cmd.redirects.push(r);
                }
                // After the command word an assignment is an ordinary word.
                I::AssignmentWord(_, w) | I::Word(w) => {
                    let w = self.word(&w.value);
                    cmd.words.push(w);
                }
                I::ProcessSubstitution(_, sub) => {
                    self.list(&sub.list, false);
                    cmd.words.push(Word::unknown("<(…)", Construct::ProcessSubstitution));
                }
            }
        }
        self.script.commands.push(cmd);
    }

    fn assignment(&mut self, a: &ast::Assignment) -> Assignment {
        let name = match &a.name {
            ast::AssignmentName::VariableName(n) => n.clone(),
            ast::AssignmentName::ArrayElementName(n, index) => {
                self.arith(index);
                format!("{n}[{index}]")
            }
        };
        let value = match &a.value {
            ast::AssignmentValue::Scalar(w) => Some(self.word(&w.value)),
            ast::AssignmentValue::Array(elements) => {
                for (key, value) in elements {
                    if let Some(k) = key {
                        self.arith(&k.value);
                    }
                    self.word(&value.value);
                }
                None
            }
        };
        Assignment { name, value }
    }

    fn redirect(&mut self, r: &ast::IoRedirect) -> Redirect {
        use ast::IoFileRedirectKind as K;
        use ast::IoFileRedirectTarget as T;
        match r {
            ast::IoRedirect::File(_, kind, target) => {
                let target = match target {
                    T::Filename(w) | T::Duplicate(w) => self.word(&w.value),
                    T::Fd(n) => self.word(&n.to_string()),
                    T::ProcessSubstitution(_, sub) => {
                        self.list(&sub.list, false);
                        return Redirect::Process;
                    }
                };
                match kind {
                    K::Read => Redirect::Input(target),
                    K::Write => Redirect::Output(">", target),
                    K::Append => Redirect::Output(">>", target),
                    K::Clobber => Redirect::Output(">|", target),
                    K::ReadAndWrite => Redirect::ReadWrite(target),
                    K::DuplicateInput => Redirect::Duplicate { output: false, target },
                    K::DuplicateOutput => Redirect::Duplicate { output: true, target },
                }
            }
            ast::IoRedirect::HereDocument(_, h) => {
                for w in [&h.doc, &h.here_end] {
                    if let Some(loc) = &w.loc {
                        self.here_docs.push((loc.start.index, loc.end.index));
                    }
                }
                if h.requires_expansion {
                    match guarded(|| brush_parser::word::parse_heredoc(&h.doc.value, &self.opts)) {
                        Ok(pieces) => {
                            let mut acc = Acc::default();
                            self.pieces(&pieces, &h.doc.value, true, &mut acc);
                        }
                        Err(e) => self.opaque(Construct::Unverified(format!("a here-document body: {e}"))),
                    }
                }
                Redirect::HereDocument
            }
            ast::IoRedirect::HereString(_, w) => Redirect::HereString(self.word(&w.value)),
            ast::IoRedirect::OutputAndError(w, append) => {
                let w = self.word(&w.value);
                Redirect::Output(if *append { "&>>" } else { "&>" }, w)
            }
        }
    }
}

fn compound_name(cc: &ast::CompoundCommand) -> &'static str {
    use ast::CompoundCommand as C;
    match cc {
        C::Arithmetic(_) => "an arithmetic command `((…))`",
        C::ArithmeticForClause(_) => "an arithmetic `for ((…))` loop",
        C::BraceGroup(_) => "a group `{ …; }`",
        C::Subshell(_) => "a subshell `( … )`",
        C::ForClause(_) => "a `for` loop",
        C::CaseClause(_) => "a `case` statement",
        C::IfClause(_) => "an `if` statement",
        C::WhileClause(_) => "a `while` loop",
        C::UntilClause(_) => "an `until` loop",
        C::Coprocess(_) => "a coprocess `coproc`",
    }
}
