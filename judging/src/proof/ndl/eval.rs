//! The whole-proof NDL / NDL_f checker: evaluates a proof tree over assumption bases, as the
//! NDL semantics define it, and stops at the first error.
//!
//! A block's steps see the premises, the active hypotheses and the results of earlier
//! elements of the same and enclosing blocks; a block's conclusion is its last element's,
//! and becomes available to the enclosing block; `assume p { D }` discharges `p` and
//! concludes `(p ==> q)`; names are visible only inside the block that binds them. A
//! deduction given as a rule's argument is evaluated in the rule's scope before the rule,
//! and only its conclusion reaches the rule.

use std::{collections::HashMap, ops::Range};

use super::{
    super::{formula::Formula, limits::MAX_STEPS, problem::Problem, report::Stop},
    check::{
        Dialect, SUPPOSE_ABSURD_IN_NDL_F, Scope, atom_like, check_define, check_hypothesis,
        check_primitive, close, subproofs,
    },
    syntax::{BlockNode, Element},
};

/// How an evaluation ended.
#[derive(Debug, Clone)]
pub(crate) enum End {
    /// The proof concluded this formula.
    Done(Formula),
    /// Step `step` (plan numbering) failed or hit a limit.
    Stopped {
        stop: Stop,
        step: usize,
        span: Range<usize>,
    },
    /// The reader stopped at a syntax error before the proof ended.
    Incomplete,
}

enum Value {
    Concluded(Formula),
    Defined(Formula),
}

struct Env {
    dialect: Dialect,
    atoms: std::collections::HashSet<String>,
    names: Vec<(String, Formula)>,
    base: Vec<Formula>,
    count: HashMap<Formula, usize>,
    next: usize,
}

impl Scope for Env {
    fn lookup(&self, name: &str) -> Option<&Formula> {
        self.names
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, f)| f)
    }

    fn holds(&self, f: &Formula) -> bool {
        self.count.get(f).is_some_and(|&c| c > 0)
    }

    fn declared_atom(&self, word: &str) -> bool {
        atom_like(word) || self.atoms.contains(word)
    }
}

impl Env {
    fn assert(&mut self, f: Formula) {
        let c = self.count.entry(f.clone()).or_insert(0);
        *c = c.saturating_add(1);
        self.base.push(f);
    }

    fn bind(&mut self, name: &str, f: Formula) {
        if name != "_" {
            self.names.push((name.to_string(), f));
        }
    }

    fn mark(&self) -> (usize, usize) {
        (self.names.len(), self.base.len())
    }

    fn restore(&mut self, (names, base): (usize, usize)) {
        self.names.truncate(names);
        while self.base.len() > base {
            if let Some(f) = self.base.pop()
                && let Some(c) = self.count.get_mut(&f)
            {
                *c = c.saturating_sub(1);
            }
        }
    }

    fn take_index(&mut self, span: &Range<usize>) -> Result<usize, End> {
        let i = self.next;
        if i >= MAX_STEPS {
            return Err(End::Stopped {
                stop: Stop::Undecided("the proof has more steps than the checker reads".into()),
                step: i,
                span: span.clone(),
            });
        }
        self.next = i.saturating_add(1);
        Ok(i)
    }

    fn element(&mut self, e: &Element) -> Result<Value, End> {
        match e {
            Element::Step(s) => {
                // deductions given as arguments run first, each in the step's scope, and
                // leave nothing behind but the conclusion passed to the step
                let mut subs = Vec::new();
                for e in subproofs(s) {
                    let mark = self.mark();
                    let out = self.element(e);
                    self.restore(mark);
                    match out? {
                        Value::Concluded(c) => subs.push(c),
                        Value::Defined(_) => return Err(End::Incomplete),
                    }
                }
                let i = self.take_index(&s.span)?;
                check_primitive(s, self.dialect, self, &subs)
                    .map(Value::Concluded)
                    .map_err(|stop| End::Stopped {
                        stop,
                        step: i,
                        span: s.span.clone(),
                    })
            }
            Element::Define(d) => {
                let i = self.take_index(&d.span)?;
                check_define(&d.formula, self)
                    .map(Value::Defined)
                    .map_err(|stop| End::Stopped {
                        stop,
                        step: i,
                        span: d.span.clone(),
                    })
            }
            Element::Block(b) => {
                let mark = self.mark();
                let out = self.block_items(b);
                self.restore(mark);
                out.map(Value::Concluded)
            }
            Element::Assume(a) => {
                if a.kind == super::syntax::HypKind::SupposeAbsurd && self.dialect == Dialect::NdlF
                {
                    let i = self.take_index(&a.header)?;
                    return Err(End::Stopped {
                        stop: Stop::Undecided(SUPPOSE_ABSURD_IN_NDL_F.into()),
                        step: i,
                        span: a.header.clone(),
                    });
                }
                let open = self.take_index(&a.header)?;
                let hyp = check_hypothesis(&a.hyp, self).map_err(|stop| End::Stopped {
                    stop,
                    step: open,
                    span: a.header.clone(),
                })?;
                let mark = self.mark();
                self.assert(hyp.clone());
                if let Some(n) = &a.hyp_name {
                    self.bind(&n.text, hyp.clone());
                }
                let body = self.block_items(&a.body);
                self.restore(mark);
                let body = body?;
                let i = self.take_index(&a.header)?;
                close(a.kind, &hyp, &body)
                    .map(Value::Concluded)
                    .map_err(|stop| End::Stopped {
                        stop,
                        step: i,
                        span: a.header.clone(),
                    })
            }
        }
    }

    /// Evaluates the elements of a block in the current scope; the caller restores it.
    fn block_items(&mut self, b: &BlockNode) -> Result<Formula, End> {
        let mut last = None;
        for e in &b.elements {
            match self.element(e)? {
                Value::Concluded(c) => {
                    if let Some(n) = e.name() {
                        let text = n.text.clone();
                        self.bind(&text, c.clone());
                    }
                    self.assert(c.clone());
                    last = Some(c);
                }
                Value::Defined(f) => {
                    if let Some(n) = e.name() {
                        let text = n.text.clone();
                        self.bind(&text, f);
                    }
                    last = None;
                }
            }
        }
        if !b.complete {
            return Err(End::Incomplete);
        }
        last.ok_or(End::Incomplete)
    }
}

/// Evaluates a proof tree. Returns how it ended and how many steps it took.
pub(crate) fn evaluate(
    root: Option<&Element>,
    problem: &Problem,
    dialect: Dialect,
) -> (End, usize) {
    let mut env = Env {
        dialect,
        atoms: problem.declared_atoms(),
        names: Vec::new(),
        base: Vec::new(),
        count: HashMap::new(),
        next: 0,
    };
    for p in &problem.premises {
        env.bind(&p.name, p.formula.clone());
        env.assert(p.formula.clone());
    }
    let Some(root) = root else {
        return (End::Incomplete, 0);
    };
    let end = match env.element(root) {
        Ok(Value::Concluded(c)) => End::Done(c),
        Ok(Value::Defined(_)) => End::Incomplete,
        Err(end) => end,
    };
    (end, env.next)
}
