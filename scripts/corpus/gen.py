#!/usr/bin/env python3
"""Deterministic generator for the TRUST labelled reasoning-trace corpus.

Writes examples/corpus/quality.jsonl from problems produced by the
reasoning-gym package (see README.md next to this file).  Every run with the
same package versions gives byte-identical output: all randomness comes from
random.Random instances seeded from SEED.  The six reasoning families
(wrong_entity ... different_question) are appended after the original ones.
examples/corpus/written.jsonl is written by hand: this script only checks it.

    python scripts/corpus/gen.py            # (re)generate the corpus, check both files
    python scripts/corpus/gen.py --check    # validate quality.jsonl and written.jsonl

Design in one paragraph: each problem becomes a list of *lines*; a line is a
list of tokens (text, number, operator) plus the equations found or built in
it.  Corruptions are made on tokens (so the value written and the value used
downstream are known exactly) and labels are computed, not guessed.  Lines are
rendered to text only at the end, with a per-trace style (multiplication sign,
thousands separators, bullets, LaTeX, GSM8K <<a*b=c>> annotations, bold ...).
"""
from __future__ import annotations

import argparse
import collections
import copy
import json
import os
import random
import re
import sys
from fractions import Fraction

SEED = 20240611
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, "..", "..", "examples", "corpus", "quality.jsonl"))
# hand-written solutions (README.md); validated by --check, never written by this script
WRITTEN = os.path.normpath(os.path.join(HERE, "..", "..", "examples", "corpus", "written.jsonl"))
PROBLEMS_PER_FAMILY = {
    "gsm": 60, "arithmetic": 55, "fractions": 55, "algebra": 55,
    "propositional": 55, "rule_chain": 55,
}
VARIANTS = ["correct", "changed_result", "wrong_operator", "dropped_term",
            "ungrounded_number", "invalid_rule"]
STEP_LABELS = ["correct", "invalid", "ungrounded", "propagated", "reasoning"]
WRITTEN_VARIANTS = ["correct", "wrong_entity", "wrong_operation", "invented_number", "percent_misapplied",
                    "unit_mixup", "different_question", "arithmetic_slip"]
KEYS = ["id", "family", "variant", "source", "trace", "steps", "output_label", "trace_label"]


class Skip(Exception):
    """Raised when a problem or variant cannot be labelled with confidence."""


# --------------------------------------------------------------------------
# tokens, equations, lines
# --------------------------------------------------------------------------
class T:
    """One token: kind 'txt' (s), 'num' (v, dec) or 'op' (s in + - * /)."""
    __slots__ = ("kind", "s", "v", "dec")

    def __init__(self, kind, s=None, v=None, dec=0):
        self.kind, self.s, self.v, self.dec = kind, s, v, dec


class Eq:
    """terms[0] ops[0] terms[1] ... = res ; tokens are shared with the line."""

    def __init__(self, terms, ops, res):
        self.terms, self.ops, self.res = terms, ops, res


class Line:
    def __init__(self, toks=None, eqs=None, corruptible=True, latex=False):
        self.toks = toks or []
        self.eqs = eqs or []
        self.corruptible = corruptible
        self.latex = latex  # equations of this line are wrapped in $...$ by styles


def dec_of(s):
    return len(s.split(".")[1]) if "." in s else 0


def evaluate(vals, ops):
    """Evaluate with * and / binding tighter than + and -."""
    vals = list(vals)
    ops = list(ops)
    i = 0
    while i < len(ops):
        if ops[i] in "*/":
            a, b = vals[i], vals[i + 1]
            if ops[i] == "/":
                if b == 0:
                    raise Skip("division by zero")
                r = a / b
            else:
                r = a * b
            vals[i:i + 2] = [r]
            del ops[i]
        else:
            i += 1
    r = vals[0]
    for op, b in zip(ops, vals[1:]):
        r = r + b if op == "+" else r - b
    return r


def eq_value(eq):
    return evaluate([t.v for t in eq.terms], [o.s for o in eq.ops])


def close(a, b):
    return abs(a - b) <= Fraction(1, 10 ** 9) * max(1, abs(b))


class B:
    """Builder for lines written by this generator."""

    def __init__(self, corruptible=True, latex=False):
        self.line = Line(corruptible=corruptible, latex=latex)

    def t(self, s):
        self.line.toks.append(T("txt", s=s))
        return self

    def n(self, v, dec=0):
        tok = T("num", v=Fraction(v), dec=dec)
        self.line.toks.append(tok)
        return self

    def eq(self, *items, units=None, res_unit="", pre="", post=""):
        """items: v, op, v, op, v ...  (ops are '+', '-', '*', '/')."""
        terms, ops = [], []
        units = units or {}
        if pre:
            self.t(pre)
        for k, it in enumerate(items):
            if isinstance(it, str):
                self.t(" ")
                o = T("op", s=it)
                ops.append(o)
                self.line.toks.append(o)
                self.t(" ")
            else:
                tok = T("num", v=Fraction(it))
                terms.append(tok)
                self.line.toks.append(tok)
                if units.get(len(terms) - 1):
                    self.t(" " + units[len(terms) - 1])
        e = Eq(terms, ops, None)
        val = eq_value(e)
        self.t(" = ")
        e.res = T("num", v=val)
        self.line.toks.append(e.res)
        if res_unit:
            self.t(" " + res_unit)
        if post:
            self.t(post)
        self.line.eqs.append(e)
        return self

    def done(self):
        return self.line


# --------------------------------------------------------------------------
# parsing reference solutions (gsm_symbolic answer_cot) into tokens
# --------------------------------------------------------------------------
TOKEN_RE = re.compile(
    r"(?P<num>(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.])\d+(?:\.\d+)?(?![\w]))"
    r"|(?P<op>[+*×÷·]|(?<=[\s\d])[-/x](?=\s*[$€£]?\d))"
)
OPMAP = {"+": "+", "-": "-", "*": "*", "×": "*", "x": "*", "·": "*", "/": "/", "÷": "/"}
UNIT_RE = re.compile(r"^\s*(?:[A-Za-z][A-Za-z/'-]*\s*){0,3}[$€£]?\s*$")
GAP_RE = re.compile(r"^\s*[$€£]?\s*$")


def parse_line(text):
    toks = []
    pos = 0
    for m in TOKEN_RE.finditer(text):
        if m.start() > pos:
            toks.append(T("txt", s=text[pos:m.start()]))
        if m.group("num"):
            raw = m.group("num").replace(",", "")
            toks.append(T("num", v=Fraction(raw), dec=dec_of(raw)))
        else:
            toks.append(T("op", s=OPMAP[m.group("op")]))
        pos = m.end()
    if pos < len(text):
        toks.append(T("txt", s=text[pos:]))
    # split text tokens around '=' so that equations can be found
    out = []
    for t in toks:
        if t.kind == "txt" and "=" in t.s:
            parts = t.s.split("=")
            for k, p in enumerate(parts):
                if p:
                    out.append(T("txt", s=p))
                if k < len(parts) - 1:
                    out.append(T("txt", s="="))
        else:
            out.append(t)
    line = Line(out)
    bad = False
    for i, t in enumerate(out):
        if not (t.kind == "txt" and t.s == "="):
            continue
        # right-hand side: optional currency/space then a number
        j = i + 1
        if j < len(out) and out[j].kind == "txt" and GAP_RE.match(out[j].s):
            j += 1
        if j >= len(out) or out[j].kind != "num":
            continue
        res = out[j]
        # left-hand side, walking backwards
        k = i - 1
        if k >= 0 and out[k].kind == "txt" and UNIT_RE.match(out[k].s):
            k -= 1
        if k < 0 or out[k].kind != "num":
            continue
        terms, ops = [out[k]], []
        k -= 1
        while k >= 1:
            kk = k
            if out[kk].kind == "txt" and GAP_RE.match(out[kk].s):
                kk -= 1
            if kk < 1 or out[kk].kind != "op":
                break
            op = out[kk]
            kk -= 1
            if out[kk].kind == "txt" and UNIT_RE.match(out[kk].s):
                kk -= 1
            if kk < 0 or out[kk].kind != "num":
                break
            terms.insert(0, out[kk])
            ops.insert(0, op)
            k = kk - 1
        if not ops:
            continue
        e = Eq(terms, ops, res)
        if not close(eq_value(e), res.v):
            bad = True
        line.eqs.append(e)
    return line, bad


def nums_in(text):
    return {Fraction(m.group("num").replace(",", "")) for m in TOKEN_RE.finditer(text) if m.group("num")}


# --------------------------------------------------------------------------
# rendering
# --------------------------------------------------------------------------
def fmt_num(v, dec, sep):
    neg = v < 0
    v = abs(v)
    if v.denominator == 1 and dec == 0:
        s = str(v.numerator)
    else:
        d = max(dec, 0)
        while d < 6 and (v * 10 ** d).denominator != 1:
            d += 1
        if (v * 10 ** d).denominator != 1:
            raise Skip("non-terminating decimal")
        s = f"{float(v):.{d}f}" if d else str(int(v))
        # exact rendering without float error
        whole = v.numerator // v.denominator
        frac = v - whole
        s = str(whole) + ("." + str(int(frac * 10 ** d)).rjust(d, "0") if d else "")
    if sep:
        head, _, tail = s.partition(".")
        if len(head) > 4:
            head = f"{int(head):,}"
        s = head + ("." + tail if tail else "")
    return ("-" if neg else "") + s


def new_style(rng, family):
    st = {
        "mul": rng.choice(["*", "*", "×", "x", "·"]),
        "div": rng.choice(["/", "/", "÷"]),
        "minus": rng.choice(["-", "-", "-", "−"]),
        "sep": rng.random() < 0.35,
        "bold": rng.random() < 0.2,
        "annot": family == "gsm" and rng.random() < 0.3,
        "annot_strip_visible": False,
        "prefix": rng.choice(["", "", "", "- ", "* ", "num", "step"]),
        "latex": family in ("algebra", "fractions") and rng.random() < 0.5,
        "intro": rng.random() < 0.35,
        "final": rng.randrange(5),
    }
    if st["latex"]:
        st["mul"] = rng.choice(["\\cdot", "\\times"])
        st["div"] = "/"
        st["sep"] = False
    return st


def render_line(line, st, idx):
    sym = {"+": "+", "-": st["minus"], "*": st["mul"], "/": st["div"]}
    res_of = {id(e.res): e for e in line.eqs}
    parts = []
    for t in line.toks:
        if t.kind == "txt":
            parts.append(t.s)
        elif t.kind == "op":
            parts.append(sym[t.s])
        else:
            s = fmt_num(t.v, t.dec, st["sep"])
            if t.v < 0 and parts and parts[-1].endswith(" ") and len(parts) >= 2 and parts[-2] in sym.values():
                s = "(" + s + ")"
            e = res_of.get(id(t))
            if e is not None and st["annot"] and not line.latex:
                comp = "".join(
                    fmt_num(x.v, x.dec, False) + ({"+": "+", "-": "-", "*": "*", "/": "/"}[o.s] if o else "")
                    for x, o in zip(e.terms, e.ops + [None]))
                s = f"<<{comp}={fmt_num(t.v, t.dec, False)}>>" + s
            elif e is not None and st["bold"] and not line.latex:
                s = "**" + s + "**"
            parts.append(s)
    text = "".join(parts).strip()
    pre = st["prefix"]
    if pre == "num":
        text = f"{idx}. " + text
    elif pre == "step":
        text = f"Step {idx}: " + text
    else:
        text = pre + text
    return text


INTROS = [
    "Let me work through this step by step.",
    "I'll break the problem into smaller parts.",
    "First, let me figure out what is being asked.",
    "Let's solve this carefully.",
    "Okay, let me think about the quantities involved.",
]
FINALS = [
    "The answer is {a}.",
    "**Answer: {a}**",
    "#### {a}",
    "Final answer: {a}",
    "$\\boxed{{{a}}}$",
]


def assemble(problem, lines, labels, final_text, st, rng_intro):
    """Render a trace; lines[i] is a Line or a plain string (prose step)."""
    body, steps = [], []
    if st["intro"]:
        intro = rng_intro.choice(INTROS)
        body.append(intro)
        steps.append({"text": intro, "label": "correct"})
    k = 0
    for ln, lab in zip(lines, labels):
        k += 1
        if isinstance(ln, str):
            text = ln
            pre = st["prefix"]
            if pre == "num":
                text = f"{k}. " + text
            elif pre == "step":
                text = f"Step {k}: " + text
            else:
                text = pre + text
        else:
            text = render_line(ln, st, k)
        body.append(text)
        steps.append({"text": text, "label": lab})
    trace = ("## Problem Statement\n" + problem.strip() + "\n\n## Thinking Process\n"
             + "\n".join(body) + "\n\n## Final Output\n" + final_text)
    return trace, steps


# --------------------------------------------------------------------------
# corruption engine on tokenised lines
# --------------------------------------------------------------------------
def known_before(problem_nums, lines, upto):
    """Values written in the problem or in lines[:upto]."""
    s = set(problem_nums)
    for ln in lines[:upto]:
        if isinstance(ln, Line):
            s |= {t.v for t in ln.toks if t.kind == "num"}
    return s


def propagate(lines, start_line, start_tok_after, mapping, problem_nums, forbid):
    """Carry changed values into later tokens, recomputing equation results.

    In the error line itself, other tokens restating the changed value are
    updated too (operands of that line's equations are left alone).  Returns
    the set of line indices that changed.  Raises Skip when a value to be
    changed is ambiguous (also written in the problem or earlier, or produced
    independently).
    """
    changed = set()
    for li in range(start_line, len(lines)):
        ln = lines[li]
        if isinstance(ln, str):
            continue
        eq_toks = set()
        start_eq = None
        for ei, e in enumerate(ln.eqs):
            eq_toks |= {id(t) for t in e.terms} | {id(e.res)}
            if e.res is start_tok_after:
                start_eq = ei
        for ei, e in enumerate(ln.eqs):
            if li == start_line and (start_eq is None or ei <= start_eq):
                continue
            for t in e.terms:
                if t.v in mapping:
                    t.v = mapping[t.v]
                    changed.add(li)
            old = e.res.v
            newv = eq_value(e)
            if newv != old:
                if old in forbid or old in problem_nums:
                    raise Skip("ambiguous propagated value")
                if old in mapping and mapping[old] != newv:
                    raise Skip("inconsistent propagation")
                fmt_num(newv, e.res.dec, False)
                mapping[old] = newv
                e.res.v = newv
                changed.add(li)
            elif old in mapping:
                raise Skip("result collides with changed value")
        for t in ln.toks:
            if t.kind == "num" and id(t) not in eq_toks and t.v in mapping:
                t.v = mapping[t.v]
                changed.add(li)
    return changed


def implicit_after(lines, i, problem_nums):
    """True if some number after line i is neither an equation result, an
    operand-copy of a known value, nor in the problem: such a number may be
    derived from line i implicitly and we could not propagate into it."""
    known = set(problem_nums)
    for ln in lines[:i + 1]:
        if isinstance(ln, Line):
            known |= {t.v for t in ln.toks if t.kind == "num"}
    for ln in lines[i + 1:]:
        if isinstance(ln, str):
            continue
        res = {id(e.res) for e in ln.eqs}
        for t in ln.toks:
            if t.kind != "num":
                continue
            if id(t) in res:
                known.add(t.v)
            elif t.v not in known and t.v not in SMALL_CONSTS:
                return True
    return False


SMALL_CONSTS = {Fraction(x) for x in (1, 2, 3, 4, 5, 6, 7, 10, 12, 24, 30, 52, 60, 100, 365, 1000)}


def eq_sites(lines, need_ops=1, need_terms=2, visible_ops=False):
    out = []
    for li, ln in enumerate(lines):
        if isinstance(ln, str) or not ln.corruptible:
            continue
        ids = {id(t) for t in ln.toks}
        for ei, e in enumerate(ln.eqs):
            if visible_ops and not all(id(o) in ids for o in e.ops):
                continue
            if len(e.ops) >= need_ops and len(e.terms) >= need_terms:
                out.append((li, ei))
    return out


def final_after(final_val, mapping):
    return mapping.get(final_val, final_val)


def labels_for(n, bad_line, bad_label, prop_lines):
    labs = []
    for i in range(n):
        if i == bad_line:
            labs.append(bad_label)
        elif i in prop_lines:
            labs.append("propagated")
        else:
            labs.append("correct")
    return labs


def candidates_changed(v, rng):
    if v.denominator == 1:
        deltas = [d for d in range(-9, 10) if d != 0]
        rng.shuffle(deltas)
        base = [v + d for d in deltas]
        if abs(v) >= 100:
            base = [v + d * 10 for d in deltas[:4]] + base
    else:
        base = [v + Fraction(d, 2) for d in (1, -1, 3, -3)] + [v + d for d in (1, -1, 2)]
    return base


def make_changed_result(lines, problem_nums, final_val, rng, final_must_change=True,
                        value_picker=None):
    sites = eq_sites(lines)
    rng.shuffle(sites)
    for li, ei in sites:
        if implicit_after(lines, li, problem_nums):
            continue
        e0 = lines[li].eqs[ei]
        old = e0.res.v
        if old in known_before(problem_nums, lines, li):
            continue
        # the value must not be written elsewhere in its own line before the result
        cands = value_picker(e0, rng) if value_picker else candidates_changed(old, rng)
        for newv in cands:
            ls = copy.deepcopy(lines)
            e = ls[li].eqs[ei]
            allvals = known_before(problem_nums, ls, len(ls))
            if newv in allvals or newv == old or (old >= 0) != (newv >= 0):
                continue
            e.res.v = newv
            mapping = {old: newv}
            try:
                fmt_num(newv, e.res.dec, False)
                changed = propagate(ls, li, e.res, mapping, problem_nums,
                                    known_before(problem_nums, lines, li))
            except Skip:
                continue
            fin = final_after(final_val, mapping)
            if final_must_change and fin == final_val:
                continue
            try:
                fmt_num(fin, 0, False)
            except Skip:
                continue
            changed.discard(li)
            return ls, labels_for(len(ls), li, "invalid", changed), fin
    raise Skip("no site for changed_result")


SWAP = {"+": ["-", "*"], "-": ["+"], "*": ["+", "/"], "/": ["*", "-"]}


def make_wrong_operator(lines, problem_nums, final_val, rng):
    """Operator swapped, written result kept: the step's own arithmetic is
    false (invalid); later steps use the (right) value and stay correct."""
    sites = eq_sites(lines, visible_ops=True)
    rng.shuffle(sites)
    for li, ei in sites:
        ls = copy.deepcopy(lines)
        e = ls[li].eqs[ei]
        oi = rng.randrange(len(e.ops))
        for new in SWAP[e.ops[oi].s]:
            e.ops[oi].s = new
            try:
                val = eq_value(e)
            except Skip:
                continue
            if not close(val, e.res.v) and abs(val - e.res.v) >= Fraction(1, 100):
                return ls, labels_for(len(ls), li, "invalid", set()), final_val
    raise Skip("no site for wrong_operator")


def make_dropped_term(lines, problem_nums, final_val, rng):
    sites = eq_sites(lines, need_ops=2, need_terms=3, visible_ops=True)
    rng.shuffle(sites)
    for li, ei in sites:
        ls = copy.deepcopy(lines)
        ln = ls[li]
        e = ln.eqs[ei]
        k = rng.randrange(1, len(e.terms))
        op, term = e.ops[k - 1], e.terms[k]
        ia, ib = ln.toks.index(op), ln.toks.index(term)
        # only drop when the gaps around the operator hold no unit words
        gap = ln.toks[ia - 1:ia] + ln.toks[ia + 1:ib]
        if any(t.kind != "txt" or not GAP_RE.match(t.s) for t in gap):
            continue
        lo = ia - 1 if ia > 0 and ln.toks[ia - 1].kind == "txt" and ln.toks[ia - 1].s.strip() == "" else ia
        del ln.toks[lo:ib + 1]
        del e.ops[k - 1]
        del e.terms[k]
        if close(eq_value(e), e.res.v):
            continue
        return ls, labels_for(len(ls), li, "invalid", set()), final_val
    raise Skip("no site for dropped_term")


def make_ungrounded(lines, problem_nums, final_val, rng, operand_picker=None):
    """Replace an operand by a number written nowhere before, and recompute the
    result: arithmetic holds but the number has no source (ungrounded)."""
    sites = eq_sites(lines)
    rng.shuffle(sites)
    for li, ei in sites:
        if implicit_after(lines, li, problem_nums):
            continue
        e0 = lines[li].eqs[ei]
        known = known_before(problem_nums, lines, li)
        old_res = e0.res.v
        if old_res in known:
            continue
        for ti in rng.sample(range(len(e0.terms)), len(e0.terms)):
            old = e0.terms[ti].v
            if old not in known:
                continue
            # the replaced operand must be written only once in this line
            if sum(1 for t in lines[li].toks if t.kind == "num" and t.v == old) != 1:
                continue
            cands = operand_picker(e0, ti, rng) if operand_picker else candidates_changed(old, rng)
            everything = known_before(problem_nums, lines, len(lines))
            for newv in cands:
                if newv in everything or newv in SMALL_CONSTS or newv <= 0 and old > 0:
                    continue
                ls = copy.deepcopy(lines)
                e = ls[li].eqs[ei]
                e.terms[ti].v = newv
                try:
                    r = eq_value(e)
                    if r == old_res or r in everything:
                        continue
                    fmt_num(r, e.res.dec, False)
                    fmt_num(newv, e.terms[ti].dec, False)
                    e.res.v = r
                    mapping = {old_res: r}
                    changed = propagate(ls, li, e.res, mapping, problem_nums, known)
                    fin = final_after(final_val, mapping)
                    fmt_num(fin, 0, False)
                except Skip:
                    continue
                if fin == final_val:
                    continue
                changed.discard(li)
                return ls, labels_for(len(ls), li, "ungrounded", changed), fin
    raise Skip("no site for ungrounded_number")


# --------------------------------------------------------------------------
# record assembly
# --------------------------------------------------------------------------
def record(family, idx, variant, source, trace, steps, output_ok):
    labs = [s["label"] for s in steps]
    return {
        "id": f"{family}-{idx:04d}-{variant}",
        "family": family,
        "variant": variant,
        "source": source,
        "trace": trace,
        "steps": steps,
        "output_label": "correct" if output_ok else "wrong",
        "trace_label": "correct" if output_ok and all(l == "correct" for l in labs) else "incorrect",
    }


def numeric_family(family, idx, source, problem, lines, final_val, fin_fmt, rng, kinds,
                   value_picker=None, operand_picker=None, final_dec=0):
    """Produce the correct trace and the corrupted variants listed in kinds."""
    st = new_style(rng, family)
    intro_seed = rng.randrange(1 << 30)
    problem_nums = nums_in(problem)
    out = []

    def emit(variant, ls, labs, fin):
        trace, steps = assemble(problem, ls, labs, fin_fmt(fin, st), st, random.Random(intro_seed))
        out.append(record(family, idx, variant, source, trace, steps, fin == final_val))

    emit("correct", lines, ["correct"] * len(lines), final_val)
    for kind in kinds:
        r = random.Random(rng.randrange(1 << 30))
        try:
            if kind == "changed_result":
                ls, labs, fin = make_changed_result(lines, problem_nums, final_val, r,
                                                    value_picker=value_picker)
            elif kind == "wrong_operator":
                ls, labs, fin = make_wrong_operator(lines, problem_nums, final_val, r)
            elif kind == "dropped_term":
                ls, labs, fin = make_dropped_term(lines, problem_nums, final_val, r)
            elif kind == "ungrounded_number":
                ls, labs, fin = make_ungrounded(lines, problem_nums, final_val, r,
                                                operand_picker=operand_picker)
            else:
                continue
        except Skip:
            continue
        emit(kind, ls, labs, fin)
    return out


def default_final(fin, st, dec=0):
    a = fmt_num(fin, dec, st["sep"])
    return FINALS[st["final"]].format(a=a)


# --------------------------------------------------------------------------
# family: gsm (reasoning-gym gsm_symbolic, reference chains written by people
# for GSM8K and turned into templates)
# --------------------------------------------------------------------------
def gsm_reference(e):
    """(problem, lines, final) of a gsm_symbolic item, or None when its
    reference chain cannot be trusted: an equation that does not hold, no
    equation at all, or a final answer that is no equation's result."""
    cot = e["metadata"]["answer_cot"]
    problem = e["question"].replace(" Give the result as your final answer. Do not include units.", "")
    raw = [l.strip() for l in cot.split("\n")]
    body = [l for l in raw if l and not l.startswith("####")]
    final = Fraction(str(e["metadata"]["answer_value"]))
    if Fraction(e["answer"]) != final:
        return None
    lines, bad = [], False
    for l in body:
        ln, b = parse_line(l)
        bad |= b
        lines.append(ln)
    if bad or not any(ln.eqs for ln in lines):
        return None  # a reference equation that does not hold: skip problem
    # the final answer must be written as some equation's result
    if not any(close(e2.res.v, final) for ln in lines for e2 in ln.eqs):
        return None
    final = next(e2.res.v for ln in lines for e2 in ln.eqs if close(e2.res.v, final))
    return problem, lines, final


def family_gsm(n, rng):
    import reasoning_gym as rg
    ds = rg.create_dataset("gsm_symbolic", seed=SEED % 10000, size=n * 4)
    out, idx, seen = [], 0, collections.Counter()
    for i in range(len(ds)):
        if idx >= n:
            break
        tid = ds.task_indices[i]
        if seen[tid] >= 1:  # one problem per template for diversity
            continue
        ref = gsm_reference(ds[i])
        if ref is None:
            continue
        problem, lines, final = ref
        seen[tid] += 1
        src = "reasoning-gym:gsm_symbolic"
        recs = numeric_family("gsm", idx, src, problem, lines, final,
                              lambda f, st: default_final(f, st), rng,
                              ["changed_result", "wrong_operator", "dropped_term", "ungrounded_number"])
        out += recs
        idx += 1
    return out


# --------------------------------------------------------------------------
# family: arithmetic (chain_sum, basic_arithmetic)
# --------------------------------------------------------------------------
import ast as _ast

PY_OPS = {_ast.Add: "+", _ast.Sub: "-", _ast.Mult: "*", _ast.Div: "/"}
ADD_WORDS = ["Add {b}", "Adding {b}", "Now add {b}", "Plus {b}"]
SUB_WORDS = ["Subtract {b}", "Take away {b}", "Now subtract {b}", "Minus {b}"]
MUL_WORDS = ["Multiply by {b}", "Multiplying by {b}", "Times {b}"]
DIV_WORDS = ["Divide by {b}", "Dividing by {b}"]


def arith_steps(node, rng, lines, wording):
    if isinstance(node, _ast.Constant):
        return Fraction(node.value)
    if isinstance(node, _ast.UnaryOp) and isinstance(node.op, _ast.USub) and isinstance(node.operand, _ast.Constant):
        return -Fraction(node.operand.value)
    if not isinstance(node, _ast.BinOp) or type(node.op) not in PY_OPS:
        raise Skip("unsupported expression")
    a = arith_steps(node.left, rng, lines, wording)
    b = arith_steps(node.right, rng, lines, wording)
    op = PY_OPS[type(node.op)]
    bl = B()
    if wording:
        words = {"+": ADD_WORDS, "-": SUB_WORDS, "*": MUL_WORDS, "/": DIV_WORDS}[op]
        w = rng.choice(words)
        head, _, tail = w.partition("{b}")
        bl.t(head).n(b).t(tail + ": ")
    bl.eq(a, op, b)
    ln = bl.done()
    r = ln.eqs[0].res.v
    if r.denominator != 1 or abs(r) > 10 ** 12:
        raise Skip("non-integer intermediate")
    lines.append(ln)
    return r


def family_arithmetic(n, rng):
    import reasoning_gym as rg
    out, idx = [], 0
    dsa = rg.create_dataset("chain_sum", seed=SEED % 10000 + 1, size=n * 3, min_terms=3, max_terms=6,
                            min_digits=1, max_digits=4)
    dsb = rg.create_dataset("basic_arithmetic", seed=SEED % 10000 + 2, size=n * 3, min_terms=3, max_terms=5,
                            min_digits=1, max_digits=3)
    pool = []
    for i in range(len(dsa)):
        pool.append(("chain_sum", dsa[i]))
        pool.append(("basic_arithmetic", dsb[i]))
    for name, e in pool:
        if idx >= n:
            break
        expr = e["metadata"]["expression"]
        if "-(" in expr.replace(" ", ""):
            continue
        try:
            tree = _ast.parse(expr, mode="eval").body
            lines = []
            style = rng.random()
            if name == "chain_sum" and style < 0.5:
                # group: add all positive terms, then subtract the others
                toks = expr.split()
                vals = [Fraction(toks[0])] + [Fraction(toks[k + 1]) * (1 if toks[k] == "+" else -1)
                                              for k in range(1, len(toks), 2)]
                pos = [v for v in vals if v >= 0]
                neg = [-v for v in vals if v < 0]
                if len(pos) < 2 or not neg:
                    raise Skip("no grouping")
                items = []
                for v in pos:
                    items += [v, "+"]
                ln = B().eq(*items[:-1], pre=rng.choice(["Add the positive terms: ", "Sum of the terms being added: ", "First the additions: "])).done()
                lines.append(ln)
                total = ln.eqs[0].res.v
                items = [total]
                for v in neg:
                    items += ["-", v]
                ln2 = B().eq(*items, pre=rng.choice(["Then subtract the rest: ", "Now take away the subtracted terms: ", "Subtracting: "])).done()
                lines.append(ln2)
                final = ln2.eqs[0].res.v
            else:
                final = arith_steps(tree, rng, lines, wording=style < 0.75)
            if final != Fraction(e["answer"]):
                raise Skip("mismatch")
        except Skip:
            continue
        if not lines:
            continue
        recs = numeric_family("arithmetic", idx, "reasoning-gym:" + name, e["question"], lines, final,
                              lambda f, st: default_final(f, st), rng,
                              ["changed_result", "wrong_operator", "dropped_term", "ungrounded_number"])
        out += recs
        idx += 1
    return out


# --------------------------------------------------------------------------
# family: fractions (fraction_simplification)
# --------------------------------------------------------------------------
def family_fractions(n, rng):
    import math
    import reasoning_gym as rg
    ds = rg.create_dataset("fraction_simplification", seed=SEED % 10000 + 3, size=n * 2)
    out, idx = [], 0
    for i in range(len(ds)):
        if idx >= n:
            break
        e = ds[i]
        m = e["metadata"]
        a, b = m["numerator"], m["denominator"]
        g = math.gcd(a, b)
        sa, sb = a // g, b // g
        if g == 1 or (sa, sb) != (m["simplified_numerator"], m["simplified_denominator"]):
            continue
        latex = rng.random() < 0.5
        lines = []
        # Euclid's algorithm for the gcd (not used as corruption sites)
        x, y = max(a, b), min(a, b)
        lines.append(B(corruptible=False).t(rng.choice([
            "To simplify, I need the greatest common divisor of ", "Find the GCD of ",
            "First compute gcd("])).n(a).t(" and " if rng.random() < 0.5 else ", ").n(b).t(
            rng.choice([".", " using Euclid's algorithm.", ")."])).done())
        steps_needed, xx, yy = 0, x, y
        while yy:
            xx, yy = yy, xx % yy
            steps_needed += 1
        if steps_needed > 5:
            lines[-1] = B(corruptible=False).t(rng.choice([
                "By Euclid's algorithm, gcd(", "Working through Euclid's algorithm, gcd("])).n(a).t(", ").n(b).t(") = ").n(g).t(".").done()
            y = 0
        while y:
            q, r = divmod(x, y)
            lines.append(B(corruptible=False, latex=latex).eq(x, "-", q, "*", y,
                         pre=rng.choice(["", "Remainder: ", "$" if latex else ""]) if not latex else "$",
                         post="$" if latex else "").done())
            x, y = y, r
        if steps_needed <= 5:
            lines.append(B(corruptible=False).t(rng.choice(["So the GCD is ", "The last non-zero remainder is ",
                                                            "gcd = "])).n(x).t(".").done())
        if latex:
            la = B(latex=True).t("$\\frac{").n(a).t("}{").n(g).t("} = ").n(sa).t("$")
            la.line.eqs.append(Eq([la.line.toks[1], la.line.toks[3]], [T("op", s="/")], la.line.toks[5]))
            lb = B(latex=True).t("$\\frac{").n(b).t("}{").n(g).t("} = ").n(sb).t("$")
            lb.line.eqs.append(Eq([lb.line.toks[1], lb.line.toks[3]], [T("op", s="/")], lb.line.toks[5]))
            lines += [la.done(), lb.done()]
            lines.append(B().t("Therefore $\\frac{").n(a).t("}{").n(b).t("} = \\frac{").n(sa).t("}{").n(sb).t("}$.").done())
        else:
            lines.append(B().eq(a, "/", g, pre=rng.choice(["Numerator: ", "Divide the numerator: ", ""])).done())
            lines.append(B().eq(b, "/", g, pre=rng.choice(["Denominator: ", "Divide the denominator: ", ""])).done())
            lines.append(B().t("So the fraction becomes ").n(sa).t("/").n(sb).t(".").done())
        final = Fraction(sa * 10 ** 7 + sb)  # encodes the pair; compared exactly

        def picker(eq, r):
            # a wrong quotient: off by one or two
            v = eq.res.v
            c = [v + d for d in (1, -1, 2, -2, 3)]
            r.shuffle(c)
            return c

        def opicker(eq, ti, r):
            # a divisor that divides the numerator exactly but is written nowhere
            num = eq.terms[0].v
            if ti != 1:
                return []
            ds_ = [d for d in range(2, 200) if num % d == 0 and d != eq.terms[1].v]
            r.shuffle(ds_)
            return [Fraction(d) for d in ds_]

        def fin_fmt(f, st):
            p, q = divmod(int(f), 10 ** 7)
            s = f"\\frac{{{p}}}{{{q}}}" if st["latex"] else f"{p}/{q}"
            return FINALS[st["final"]].format(a=s).replace("$$", "$")

        # the final line must follow the divided values: tie its tokens to them
        recs = numeric_family_fraction(idx, e, lines, final, fin_fmt, rng, picker, opicker, latex)
        out += recs
        idx += 1
    return out


def numeric_family_fraction(idx, e, lines, final, fin_fmt, rng, picker, opicker, latex):
    """Like numeric_family, but the final answer is the pair in the last line."""
    st = new_style(rng, "fractions")
    st["latex"] = latex
    if latex:
        st["mul"], st["div"], st["sep"] = rng.choice(["\\cdot", "\\times"]), "/", False
    intro_seed = rng.randrange(1 << 30)
    problem = e["question"]
    problem_nums = nums_in(problem)
    out = []

    def final_of(ls):
        nums = [t.v for t in ls[-1].toks if t.kind == "num"]
        return nums[-2] * 10 ** 7 + nums[-1]

    def emit(variant, ls, labs):
        fin = final_of(ls)
        trace, steps = assemble(problem, ls, labs, fin_fmt(fin, st), st, random.Random(intro_seed))
        out.append(record("fractions", idx, variant, "reasoning-gym:fraction_simplification",
                          trace, steps, fin == final))

    emit("correct", lines, ["correct"] * len(lines))
    for kind in ["changed_result", "wrong_operator", "ungrounded_number"]:
        r = random.Random(rng.randrange(1 << 30))
        try:
            if kind == "changed_result":
                ls, labs, _ = make_changed_result(lines, problem_nums, Fraction(-1), r,
                                                  final_must_change=False, value_picker=picker)
            elif kind == "wrong_operator":
                ls, labs, _ = make_wrong_operator(lines, problem_nums, Fraction(-1), r)
            else:
                ls, labs, _ = make_ungrounded_any(lines, problem_nums, r, opicker)
        except Skip:
            continue
        if kind != "wrong_operator" and final_of(ls) == final:
            continue
        emit(kind, ls, labs)
    return out


def make_ungrounded_any(lines, problem_nums, rng, opicker):
    """make_ungrounded without a final-value requirement (the caller checks
    that the final pair changed)."""
    sentinel = Fraction(-123456789)
    sites = eq_sites(lines)
    rng.shuffle(sites)
    for li, ei in sites:
        e0 = lines[li].eqs[ei]
        known = known_before(problem_nums, lines, li)
        for ti in range(len(e0.terms)):
            for newv in opicker(e0, ti, rng):
                everything = known_before(problem_nums, lines, len(lines))
                if newv in everything:
                    continue
                ls = copy.deepcopy(lines)
                e = ls[li].eqs[ei]
                old_res = e.res.v
                e.terms[ti].v = newv
                r = eq_value(e)
                if r in everything or r.denominator != 1:
                    continue
                e.res.v = r
                try:
                    changed = propagate(ls, li, e.res, {old_res: r}, problem_nums, known)
                except Skip:
                    continue
                changed.discard(li)
                return ls, labels_for(len(ls), li, "ungrounded", changed), sentinel
    raise Skip("no ungrounded site")


# --------------------------------------------------------------------------
# family: algebra (simple_equations), plain and LaTeX
# --------------------------------------------------------------------------
def family_algebra(n, rng):
    import reasoning_gym as rg
    import sympy
    ds = rg.create_dataset("simple_equations", seed=SEED % 10000 + 4, size=n * 2)
    out, idx = [], 0
    for i in range(len(ds)):
        if idx >= n:
            break
        e = ds[i]
        m = e["metadata"]
        var = m["variable"]
        lhs_s, rhs_s = m["equation"].split("=")
        x = sympy.Symbol(var)
        lhs = sympy.expand(sympy.sympify(lhs_s) - sympy.sympify(rhs_s))
        a = lhs.coeff(x, 1)
        const = lhs.subs(x, 0)
        rhs = sympy.sympify(rhs_s)
        if lhs.free_symbols - {x} or sympy.Poly(lhs, x).degree() != 1:
            continue
        # form: a*x + b = c  with c = rhs as written, b = lhs constant (as written)
        lhs_w = sympy.expand(sympy.sympify(lhs_s))
        a = int(lhs_w.coeff(x, 1))
        b = int(lhs_w.subs(x, 0))
        c = int(rhs)
        if sympy.sympify(rhs_s).free_symbols:
            continue
        sol = Fraction(c - b, a)
        if sol != Fraction(e["answer"]) or a in (0, 1):
            continue
        latex = rng.random() < 0.5
        L = (lambda s: "$" + s + "$") if latex else (lambda s: s)
        mul = rng.choice(["", "*"]) if not latex else ""
        lines = []
        if rng.random() < 0.5:
            lines.append(rng.choice([
                f"The goal is to isolate {var}.", f"I want {var} alone on one side.",
                f"Move the constant term to the right, then divide by the coefficient of {var}."]))
        d = c - b
        if b != 0:
            bl = B(latex=latex)
            if b > 0:
                bl.t(rng.choice(["Subtract ", "Subtracting ", "Take "])).n(b).t(" from both sides: ")
                bl.t("$" if latex else "").n(a).t(f"{mul}{var} = ").eq(c, "-", b).t("$" if latex else "")
            else:
                bl.t(rng.choice(["Add ", "Adding ", "Add "])).n(-b).t(" to both sides: ")
                bl.t("$" if latex else "").n(a).t(f"{mul}{var} = ").eq(c, "+", -b).t("$" if latex else "")
            # the builder put a " = " result; keep it
            lines.append(bl.done())
        if latex and rng.random() < 0.5:
            bl = B(latex=True).t("Dividing both sides by ").n(a).t(" gives $" + var + " = \\frac{").n(d).t("}{").n(a).t("} = ").n(sol).t("$.")
            tk = [t for t in bl.line.toks if t.kind == "num"]
            bl.line.eqs.append(Eq([tk[1], tk[2]], [T("op", s="/")], tk[3]))
            lines.append(bl.done())
        else:
            bl = B(latex=latex).t(rng.choice(["Divide both sides by ", "Dividing by ", "Now divide by "])).n(a).t(": ")
            bl.t(("$" if latex else "") + f"{var} = ").eq(d, "/", a).t("$" if latex else "")
            lines.append(bl.done())
        if sol.denominator != 1:
            continue
        problem = e["question"]

        def picker(eq, r):
            # keep the division exact so later steps stay integral
            v = eq.res.v
            cs = [v + k * a for k in (1, -1, 2, -2)] if len(eq.ops) == 1 and eq.ops[0].s in "+-" else \
                [v + k for k in (1, -1, 2, -2, 3)]
            r.shuffle(cs)
            return cs

        def opicker(eq, ti, r):
            v = eq.terms[ti].v
            if eq.ops[0].s == "/":
                return []  # a new divisor rarely divides exactly
            cs = [v + k * a for k in (1, -1, 2, -2)] + [v + k * a * 10 for k in (1, -1)]
            r.shuffle(cs)
            return cs

        recs = numeric_family("algebra", idx, "reasoning-gym:simple_equations", problem, lines, sol,
                              lambda f, st: FINALS[st["final"]].format(a=f"{var} = {fmt_num(f, 0, False)}")
                              .replace("$\\boxed{" + var, "$\\boxed{" + var),
                              rng, ["changed_result", "wrong_operator", "ungrounded_number"],
                              value_picker=picker, operand_picker=opicker)
        out += recs
        idx += 1
    return out


# --------------------------------------------------------------------------
# family: propositional (premises from propositional_logic, evaluated under
# a truth assignment)
# --------------------------------------------------------------------------
BIN = {"∧": "AND", "∨": "OR", "→": "IMPLIES", "↔": "IFF"}


def parse_formula(s):
    s = s.replace(" ", "")
    pos = 0

    def atom():
        nonlocal pos
        c = s[pos]
        if c == "¬":
            pos += 1
            return ("¬", atom())
        if c == "(":
            pos += 1
            left = atom()
            op = s[pos]
            pos += 1
            right = atom()
            assert s[pos] == ")"
            pos += 1
            return (op, left, right)
        pos += 1
        return c

    f = atom()
    if pos != len(s):
        raise Skip("parse")
    return f


def fstr(f, arrow="→"):
    if isinstance(f, str):
        return f
    if f[0] == "¬":
        return "¬" + fstr(f[1], arrow)
    op = arrow if f[0] == "→" else f[0]
    return f"({fstr(f[1], arrow)} {op} {fstr(f[2], arrow)})"


def feval(f, val):
    if isinstance(f, str):
        return val[f]
    if f[0] == "¬":
        return not feval(f[1], val)
    a, b = feval(f[1], val), feval(f[2], val)
    return {"∧": a and b, "∨": a or b, "→": (not a) or b, "↔": a == b}[f[0]]


def apply_op(op, xs):
    if op == "¬":
        return not xs[0]
    a, b = xs
    return {"∧": a and b, "∨": a or b, "→": (not a) or b, "↔": a == b}[op]


def tv(b, style):
    return {0: ("true", "false"), 1: ("T", "F"), 2: ("True", "False")}[style][0 if b else 1]


def family_propositional(n, rng):
    import reasoning_gym as rg
    ds = rg.create_dataset("propositional_logic", seed=SEED % 10000 + 5, size=n * 3)
    out, idx = [], 0
    for i in range(len(ds)):
        if idx >= n:
            break
        e = ds[i]
        prem = []
        for p in dict.fromkeys(e["metadata"]["premises"]):
            try:
                prem.append(parse_formula(p))
            except Exception:
                prem = []
                break
        if not prem or all(isinstance(p, str) for p in prem):
            continue
        atoms = sorted({c for p in e["metadata"]["premises"] for c in p if c.isalpha()})
        val = {a: rng.random() < 0.5 for a in atoms}
        arrow = rng.choice(["→", "→", "->"])
        tstyle = rng.randrange(3)
        # steps: evaluate every compound subformula bottom-up (each once)
        order = []

        def walk(f):
            if isinstance(f, str):
                return
            for g in f[1:]:
                walk(g)
            if f not in order:
                order.append(f)

        for p in prem:
            walk(p)
        if len(order) < 2:
            continue
        problem = ("Premises:\n" + "\n".join(f"{k + 1}. {fstr(p, arrow)}" for k, p in enumerate(prem))
                   + "\nAssignment: " + ", ".join(f"{a} = {tv(val[a], tstyle)}" for a in atoms)
                   + "\nUnder this assignment, which premises are true?")
        sty = rng.randrange(3)
        prefix = rng.choice(["", "- ", "* ", "num"])

        def render(f, claimed, kids):
            name = fstr(f, arrow)
            if sty == 0:
                parts = ", ".join(f"{fstr(g, arrow)} is {tv(k, tstyle)}" for g, k in zip(f[1:], kids))
                return f"Since {parts}, {name} is {tv(claimed, tstyle)}."
            if sty == 1:
                ks = " and ".join(tv(k, tstyle) for k in kids)
                opname = {"¬": "negation", "∧": "conjunction", "∨": "disjunction", "→": "implication",
                          "↔": "biconditional"}[f[0]]
                return f"{name}: the {opname} of {ks} gives {tv(claimed, tstyle)}."
            return f"**{name}** = {tv(claimed, tstyle)}"

        def build(flip_at=None):
            claimed = {a: val[a] for a in atoms}
            labs, texts = [], []
            truth = {}
            for k, f in enumerate(order):
                kids = [claimed[g] if not isinstance(g, str) else val[g] for g in f[1:]]
                right = apply_op(f[0], kids)
                c = (not right) if k == flip_at else right
                claimed[f] = c
                truth[f] = feval(f, val)
                if c != right:
                    labs.append("invalid")
                elif c != truth[f]:
                    labs.append("propagated")
                elif any(not isinstance(g, str) and claimed[g] != truth[g] for g in f[1:]):
                    # right value reached from a wrong input: still rests on a wrong claim
                    labs.append("propagated")
                else:
                    labs.append("correct")
                texts.append(render(f, c, kids))
            verdict = [claimed[p] if not isinstance(p, str) else val[p] for p in prem]
            return texts, labs, verdict

        texts, labs, verdict = build()
        true_verdict = [feval(p, val) for p in prem]
        assert verdict == true_verdict and all(l == "correct" for l in labs)

        def final_text(v):
            t = [str(k + 1) for k, b in enumerate(v) if b]
            if not t:
                return "None of the premises is true."
            if len(t) == len(v):
                return "All premises are true."
            return ("Premise " if len(t) == 1 else "Premises ") + ", ".join(t) + (" is true." if len(t) == 1 else " are true.")

        def emit(variant, texts, labs, verdict, suffix=""):
            body, steps = [], []
            for k, (tx, lb) in enumerate(zip(texts, labs)):
                line = (f"{k + 1}. " if prefix == "num" else prefix) + tx
                body.append(line)
                steps.append({"text": line, "label": lb})
            trace = ("## Problem Statement\n" + problem + "\n\n## Thinking Process\n" + "\n".join(body)
                     + "\n\n## Final Output\n" + final_text(verdict))
            rec = record("propositional", idx, variant, "reasoning-gym:propositional_logic", trace, steps,
                         verdict == true_verdict)
            rec["id"] += suffix
            out.append(rec)

        emit("correct", texts, labs, verdict)
        # invalid_rule: one evaluation applies the connective's truth table wrongly
        k = rng.randrange(len(order))
        t2, l2, v2 = build(flip_at=k)
        emit("invalid_rule", t2, l2, v2)
        if len(order) >= 3:
            k2 = rng.choice([j for j in range(len(order)) if j != k])
            t3, l3, v3 = build(flip_at=k2)
            if t3 != t2:
                emit("invalid_rule", t3, l3, v3, suffix="-2")
        idx += 1
    return out


# --------------------------------------------------------------------------
# family: rule_chain (ClaimTrees-style chains written by this generator;
# atoms are the category nouns of reasoning-gym's syllogism dataset)
# --------------------------------------------------------------------------
def family_rule_chain(n, rng):
    import reasoning_gym as rg
    ds = rg.create_dataset("syllogism", seed=SEED % 10000 + 6, size=400)
    nouns = []
    for i in range(len(ds)):
        for key in ("premise1", "premise2"):
            w = ds[i]["metadata"][key].split()
            for tok in (w[1], w[-1]):
                if tok not in nouns and tok.isalpha():
                    nouns.append(tok)
    out = []
    for idx in range(n):
        use_letters = rng.random() < 0.4
        k = rng.randint(6, 9)
        atoms = [chr(ord("A") + j) for j in range(k)] if use_letters else rng.sample(nouns, k)
        arrow = rng.choice(["→", "→", "->"])
        chain_len = rng.randint(3, min(5, k - 2))
        chain = atoms[:chain_len + 1]
        others = atoms[chain_len + 1:]
        rules = [(chain[j], chain[j + 1]) for j in range(chain_len)]
        # distractors: rules whose premise is never derived
        for j in range(len(others) - 1):
            rules.append((others[j], others[j + 1]))
        reachable = rng.random() < 0.6
        target = chain[-1] if reachable else others[-1]
        order = list(range(len(rules)))
        rng.shuffle(order)
        rules_shown = [rules[j] for j in order]
        fact = chain[0]
        if use_letters:
            prob = ("Rules: " + "; ".join(f"{p} {arrow} {q}" for p, q in rules_shown) + ".\n"
                    + f"Fact: I have {fact}.\nQuestion: can I derive {target}?")
        else:
            prob = ("Rules:\n" + "\n".join(f"- if something is a {p}, it is a {q} ({p} {arrow} {q})"
                                             for p, q in rules_shown)
                    + f"\nFact: Rex is a {fact}.\nQuestion: is Rex a {target}?")
        sty = rng.randrange(3)

        def step_text(p, q):
            if sty == 0:
                return f"I use rule ({p} {arrow} {q}) to derive {q}."
            if sty == 1:
                return f"From {p} and {p} {arrow} {q}, we get {q}."
            return f"Since {p} holds, rule {p} {arrow} {q} gives {q}."

        def final(yes):
            if use_letters:
                return f"Yes, {target} can be derived." if yes else f"No, {target} cannot be derived."
            return f"Yes, Rex is a {target}." if yes else f"No, Rex is not shown to be a {target}."

        def emit(variant, applied, conclusion_yes):
            # applied: list of (premise, rule_p, rule_q, derived)
            have = {fact}
            truly = {fact}
            texts, labs = [], []
            for (rp, rq, derived) in applied:
                tx = step_text(rp, rq) if derived == rq else (
                    f"I use rule ({rp} {arrow} {rq}) to derive {derived}." if sty == 0 else
                    f"From {rp} and {rp} {arrow} {rq}, we get {derived}." if sty == 1 else
                    f"Since {rp} holds, rule {rp} {arrow} {rq} gives {derived}.")
                if derived != rq or rp not in have:
                    lab = "invalid"
                elif rp in truly:
                    lab = "correct"
                    truly.add(derived)
                else:
                    lab = "propagated"
                have.add(derived)
                texts.append(tx)
                labs.append(lab)
            closing = (f"{target} is now derived." if conclusion_yes else
                       f"No rule applies to what I have, and {target} is not among the derived facts.")
            # closing step: correct iff it states the true status of derivation from true facts
            texts.append(closing)
            labs.append("correct" if conclusion_yes == (target in truly) else
                        ("propagated" if conclusion_yes == (target in have) else "invalid"))
            prefix = ["", "- ", "num"][idx % 3]
            body, steps = [], []
            for j, (tx, lb) in enumerate(zip(texts, labs)):
                line = (f"{j + 1}. " if prefix == "num" else prefix) + tx
                body.append(line)
                steps.append({"text": line, "label": lb})
            trace = ("## Problem Statement\n" + prob + "\n\n## Thinking Process\n" + "\n".join(body)
                     + "\n\n## Final Output\n" + final(conclusion_yes))
            out.append(record("rule_chain", idx, variant, "gen.py:rule_chain",
                              trace, steps, conclusion_yes == reachable))

        good = [(p, q, q) for p, q in rules[:chain_len]]
        emit("correct", good, reachable)
        if reachable:
            # derive a conclusion the rule does not give, then chain on from it
            j = rng.randrange(0, chain_len - 1)
            p, q = rules[j]
            skip_to = chain[j + 2]
            bad = good[:j] + [(p, q, skip_to)] + good[j + 2:]
            emit("invalid_rule", bad, True)
        else:
            # apply a distractor rule whose premise was never derived
            bad = good + [(p, q, q) for p, q in rules[chain_len:]]
            emit("invalid_rule", bad, True)
    return out


# --------------------------------------------------------------------------
# reasoning families: every calculation written holds, the reasoning does not.
# Made from gsm_symbolic reference chains (a fresh draw, not the `gsm` one);
# each family carries its own `correct` trace of every problem it perturbs.
# --------------------------------------------------------------------------
REASONING_FAMILIES = ["wrong_entity", "wrong_operation", "invented_number",
                      "percent_misapplied", "unit_mixup", "different_question"]
REASONING_VARIANTS = {
    "wrong_entity": ["swapped_quantity"],
    "wrong_operation": ["inverse_operation"],
    "invented_number": ["invented_factor", "invented_operand"],
    "percent_misapplied": ["complement", "sign_flip", "wrong_base", "rate_inverted"],
    "unit_mixup": ["wrong_factor", "inverted_conversion", "spurious_conversion"],
    "different_question": ["stopped_early", "extra_step"],
}
REASONING_TARGET = 45       # perturbed traces per family (at most)
REASONING_PER_TEMPLATE = {"percent_misapplied": 3, "unit_mixup": 6}  # problems of one template; default 2
REASONING_POOL = 3000       # gsm_symbolic items drawn (seed SEED % 10000 + 7)
REASONING_VARIANT_CAP = {"stopped_early": 27, "spurious_conversion": 18}  # keep the forms mixed

# Words that let a reader supply a constant the problem does not write in
# digits.  An invented number must not be one of these (matched loosely, so
# more constants are excluded than strictly needed).
IMPLIED_WORDS = {
    2: r"\b(two|twice|double|doubl\w*|pairs?|couples?|half|halves|both|twins?|second|round|bi\w*)\b",
    3: r"\b(three|triple|thrice|third|triplets?|tri\w*)\b",
    4: r"\b(four|quarters?|fourth|quadruple|quad\w*)\b",
    7: r"\b(seven|weeks?|weekly|week's)\b",
    10: r"\b(ten|tenth|decades?|dimes?)\b",
    12: r"\b(twelve|dozens?|months?|monthly|year\w*|feet|foot|inch\w*)\b",
    24: r"\b(day|days|daily|hours?|hourly)\b",
    30: r"\b(thirty|months?|monthly)\b",
    52: r"\b(weeks?|weekly|year\w*)\b",
    60: r"\b(sixty|minutes?|hours?|hourly|seconds?)\b",
    100: r"(\b(hundred|percent|cents?|century|centimeters?|meters?|metres?)\b|%)",
}
INVENT_FACTORS = [2, 2, 2, 3, 3, 4, 4, 10, 12]
INVENT_OPERANDS = [2, 2, 3, 3, 4, 4, 7, 10, 12, 24, 30, 60, 100]

# Unit conversions a reader supplies.  Each context: the constant, patterns
# that must all occur (problem or line) for the constant to read as that
# conversion, the constants a hurried reader puts in its place, and the words
# of its small and big unit.
UNIT_CONTEXTS = [
    (7, (r"\bweek",), [30], r"days?", r"weeks?"),
    (30, (r"\bmonths?\b|\bmonthly\b",), [7, 4], r"days?", r"months?"),
    (4, (r"\bmonths?\b", r"\bweeks?\b"), [30], r"weeks?", r"months?"),
    (12, (r"\bdozens?\b",), [], None, r"dozens?"),
    (12, (r"\byears?\b|\bannual", r"\bmonths?\b"), [52], r"months?", r"years?"),
    (52, (r"\byears?\b|\bannual", r"\bweek"), [12], r"weeks?", r"years?"),
    (365, (r"\byears?\b|\bannual", r"\bdays?\b"), [52], r"days?", r"years?"),
    (24, (r"\bdays?\b|\bdaily\b", r"\bhours?\b"), [60], r"hours?", r"days?"),
    (60, (r"\bhours?\b|\bhourly\b", r"\bminutes?\b"), [100], r"minutes?", r"hours?"),
    (60, (r"\bminutes?\b", r"\bseconds?\b"), [100], r"seconds?", r"minutes?"),
    (100, (r"\bcents?\b",), [], r"cents?", r"dollars?"),
    (100, (r"\bmeters?\b", r"\bcentimeters?\b"), [], r"centimeters?", r"meters?"),
    (1000, (r"\bkilo\w*", r"\bgrams?\b"), [100], r"grams?", r"kilograms?"),
]
UNIT_CONSTS = sorted({c for c, *_ in UNIT_CONTEXTS})
NUMBER_WORD_RE = {4: r"\bfour\b", 7: r"\bseven\b", 12: r"\btwelve\b", 24: r"\btwenty-four\b",
                  30: r"\bthirty\b", 52: r"\bfifty-two\b", 60: r"\bsixty\b", 100: r"\bhundred\b",
                  365: r"\bthree hundred", 1000: r"\bthousand\b"}
RATE_UNIT_RE = re.compile(r"^\s*[A-Za-z]*\s*/\s*[A-Za-z]+|^\s*[A-Za-z]+ per [A-Za-z]+|^\s*per [A-Za-z]+")
NOUN_STOP = {"times", "more", "fewer", "less", "percent", "cents", "dollars", "euros", "pounds",
             "minutes", "hours", "days", "weeks", "months", "years", "seconds", "miles", "meters",
             "kilometers", "feet", "yards", "inches", "liters", "kilograms", "grams", "ounces", "ccs",
             "calories", "degrees", "as", "of", "and", "or", "to", "in", "is", "was", "each", "per",
             "others", "pieces", "items", "letters", "pages"}
INVERSE_OP = {"+": "-", "-": "+", "*": "/", "/": "*"}


def problem_quantities(problem):
    """value -> {'kinds': set, 'dec': int, 'nouns': list, 'after': list}, and
    the values in order of first appearance.  Kinds: pct (followed by %), frac
    (part of a/b), money (after a currency sign), share (below 1), count."""
    q, order = {}, []
    for m in TOKEN_RE.finditer(problem):
        if not m.group("num"):
            continue
        raw = m.group("num").replace(",", "")
        v = Fraction(raw)
        before = problem[max(0, m.start() - 1):m.start()]
        after = problem[m.end():m.end() + 40]
        if after.startswith("%") or after.lstrip().startswith("percent"):
            kind = "pct"
        elif (after.startswith("/") and after[1:2].isdigit()) or before == "/":
            kind = "frac"
        elif before and before in "$€£":
            kind = "money"
        elif v < 1:
            kind = "share"
        else:
            kind = "count"
        if v not in q:
            q[v] = {"kinds": set(), "dec": 0, "nouns": [], "after": []}
            order.append(v)
        q[v]["kinds"].add(kind)
        q[v]["dec"] = max(q[v]["dec"], dec_of(raw))
        q[v]["after"].append(after.lower())
        nm = re.match(r"\s+([a-z]+)\b", after)
        if kind == "count" and nm and nm.group(1).endswith("s") and nm.group(1) not in NOUN_STOP:
            q[v]["nouns"].append(nm.group(1))
    return q, order


def line_text(ln):
    if isinstance(ln, str):
        return ln
    return "".join(t.s if t.kind != "num" else fmt_num(t.v, t.dec, False) for t in ln.toks)


def implied_constants(text):
    low = text.lower()
    return {Fraction(c) for c, pat in IMPLIED_WORDS.items() if re.search(pat, low)}


def results_before(lines, li, ei):
    """Results of the equations before equation ei of line li."""
    out = set()
    for k, ln in enumerate(lines[:li + 1]):
        if isinstance(ln, str):
            continue
        for j, e in enumerate(ln.eqs):
            if k == li and j >= ei:
                break
            out.add(e.res.v)
    return out


def count_in_line(ln, v):
    return sum(1 for t in ln.toks if t.kind == "num" and t.v == v)


def near(a, b, ratio=10):
    a, b = abs(a), abs(b)
    return (a <= 12 and b <= 12) or (min(a, b) > 0 and max(a, b) / min(a, b) <= ratio)


def mult_neighbour(e, ti):
    """The operators next to term ti are all * or / (it scales, it is not added)."""
    ops = [e.ops[k].s for k in (ti - 1, ti) if 0 <= k < len(e.ops)]
    return bool(ops) and all(o in "*/" for o in ops)


def reasoned_change(lines, li, ei, mutate, problem, final_val):
    """Change equation ei of line li by mutate(line, eq) on a copy, recompute
    its result and carry the new value forward (as changed_result does).  The
    changed step is labelled `reasoning`, the steps that use its value
    `propagated`.  Skip when the labels would be in doubt, when the final
    answer does not change, or when a value turns implausible: zero or negative
    where it was not, fractional where it was whole, or with more than two
    decimals."""
    problem_nums = nums_in(problem)
    if implicit_after(lines, li, problem_nums):
        raise Skip("a later number may be derived implicitly")
    e0 = lines[li].eqs[ei]
    old = e0.res.v
    known = known_before(problem_nums, lines, li)
    if old in known:
        raise Skip("result written before")
    # a value that is also a unit constant (7, 12, 60...): a later use of it
    # could be the constant rather than this result
    text = problem + "\n" + "\n".join(line_text(l) for l in lines)
    if old in SMALL_CONSTS | implied_constants(text):
        later = [t for ln in lines[li + 1:] if isinstance(ln, Line) for t in ln.toks
                 if t.kind == "num" and t.v == old]
        if later:
            raise Skip("result equals a unit constant used later")
    everything = known_before(problem_nums, lines, len(lines))
    ls = copy.deepcopy(lines)
    e = ls[li].eqs[ei]
    mutate(ls[li], e)
    r = eq_value(e)
    if r == old or r in everything:
        raise Skip("new value collides")
    fmt_num(r, e.res.dec, False)
    e.res.v = r
    mapping = {old: r}
    changed = propagate(ls, li, e.res, mapping, problem_nums, known)
    fin = final_after(final_val, mapping)
    if fin == final_val:
        raise Skip("final answer unchanged")
    fmt_num(fin, 0, False)
    for a, b in zip(lines, ls):
        if isinstance(a, str):
            continue
        for ea, eb in zip(a.eqs, b.eqs):
            va, vb = ea.res.v, eb.res.v
            if va == vb:
                continue
            if (va > 0) != (vb > 0) or (va.denominator == 1 and vb.denominator != 1) \
                    or (vb * 100).denominator != 1:
                raise Skip("implausible value")
    changed.discard(li)
    return ls, labels_for(len(ls), li, "reasoning", changed), fin


def try_sites(candidates, lines, problem, final_val, avoid=()):
    """candidates: (variant, li, ei, mutate); the first that works (variants
    in avoid, which have reached their cap, are not tried)."""
    for variant, li, ei, mutate in candidates:
        if variant in avoid:
            continue
        try:
            ls, labs, fin = reasoned_change(lines, li, ei, mutate, problem, final_val)
        except Skip:
            continue
        return ls, labs, fin, variant
    raise Skip("no site")


def set_term(ti, v, dec=0):
    def mutate(ln, e):
        e.terms[ti].v = Fraction(v)
        e.terms[ti].dec = dec
    return mutate


def set_op(oi, op):
    def mutate(ln, e):
        e.ops[oi].s = op
    return mutate


def make_wrong_entity(problem, lines, final, rng, avoid=()):
    """An operand taken from the problem is replaced by another number the
    problem states for a different thing, of the same kind (a count for a
    count, a price for a price, a percentage for a percentage) and of a
    similar size."""
    pq, order = problem_quantities(problem)
    sites = eq_sites(lines)
    rng.shuffle(sites)
    cands = []
    for li, ei in sites:
        e = lines[li].eqs[ei]
        before = results_before(lines, li, ei)
        operands = {t.v for t in e.terms}
        for ti in rng.sample(range(len(e.terms)), len(e.terms)):
            v = e.terms[ti].v
            if v not in pq or v in before or v in (0, 1) or count_in_line(lines[li], v) != 1:
                continue
            kinds = pq[v]["kinds"]
            if len(kinds) != 1 or kinds == {"frac"}:
                continue
            ws = [w for w in order if w != v and w not in operands and w not in (0, 1)
                  and pq[w]["kinds"] == kinds and near(v, w)]
            rng.shuffle(ws)
            for w in ws[:4]:
                cands.append(("swapped_quantity", li, ei, set_term(ti, w, pq[w]["dec"])))
    return try_sites(cands, lines, problem, final, avoid)


def share_terms(problem, pq, ln, e):
    """Terms of e that apply a percentage or a share the problem states:
    (term index, form, p) with form 'p' (the share itself), '1-p', '1+p'
    (decimals), 'p/100' (p over a written 100) or 'a/b' (a fraction the
    problem writes)."""
    pcts = {v / 100 for v in pq if "pct" in pq[v]["kinds"]}
    shares = {v for v in pq if pq[v]["kinds"] == {"share"}}
    pos = {id(t): k for k, t in enumerate(ln.toks)}
    out = []
    for ti, t in enumerate(e.terms):
        nxt = e.terms[ti + 1] if ti + 1 < len(e.terms) else None
        op = e.ops[ti].s if ti < len(e.ops) else None
        k = pos.get(id(t))
        prev_txt = ln.toks[k - 1].s if k and ln.toks[k - 1].kind == "txt" else ""
        if op == "/" and nxt is not None and nxt.v == 100 and t.v / 100 in pcts:
            out.append((ti, "p/100", t.v / 100))
        elif op == "/" and nxt is not None and t.v < nxt.v and f"{t.v}/{nxt.v}" in problem:
            out.append((ti, "a/b", t.v / nxt.v))
        elif t.v.denominator != 1 and 0 < t.v < 2 and (ti == 0 or e.ops[ti - 1].s != "/") \
                and not prev_txt.rstrip().endswith(("$", "€", "£")) \
                and not (t.v in pq and pq[t.v]["kinds"] - {"share"}):
            if t.v < 1 and (t.v in pcts or t.v in shares):
                out.append((ti, "p", t.v))
            elif t.v < 1 and 1 - t.v in pcts:
                out.append((ti, "1-p", 1 - t.v))
            elif t.v > 1 and t.v - 1 in pcts:
                out.append((ti, "1+p", t.v - 1))
    return out


def make_percent_misapplied(problem, lines, final, rng, avoid=()):
    """A percentage, share or rate applied wrongly: p for 1 - p (complement),
    an increase taken as a decrease or the reverse (sign_flip), the share of
    another quantity written before (wrong_base), or a rate multiplied where
    it divides or the reverse (rate_inverted)."""
    pq, order = problem_quantities(problem)
    pn = nums_in(problem)
    pcts = {v for v in pq if "pct" in pq[v]["kinds"]}
    # equation (line, index) -> the equation before it in the trace
    prev_eq, last = {}, None
    for li, ln in enumerate(lines):
        if isinstance(ln, Line):
            for ei, e in enumerate(ln.eqs):
                prev_eq[(li, ei)] = last
                last = e

    def share_of(e):
        """(result, base) of e when it applies a share to one base."""
        if e is None:
            return None
        for ln in lines:
            if isinstance(ln, Line) and e in ln.eqs:
                st = share_terms(problem, pq, ln, e)
                if st and all(o.s in "*/" for o in e.ops):
                    inner = {st[0][0], st[0][0] + 1} if st[0][1] in ("p/100", "a/b") else {st[0][0]}
                    base = [t.v for k, t in enumerate(e.terms) if k not in inner]
                    if len(base) == 1:
                        return e.res.v, base[0]
        return None
    sites = eq_sites(lines)
    rng.shuffle(sites)
    cands = []
    for li, ei in sites:
        ln = lines[li]
        e = ln.eqs[ei]
        ops = [o.s for o in e.ops]
        for ti, form, p in share_terms(problem, pq, ln, e):
            t = e.terms[ti]
            if count_in_line(ln, t.v) != 1:
                continue
            if form == "p" and p != Fraction(1, 2):
                cands.append(("complement", li, ei, set_term(ti, 1 - p, t.dec)))
            elif form == "1-p":
                cands.append(("complement", li, ei, set_term(ti, p, t.dec)))
                cands.append(("sign_flip", li, ei, set_term(ti, 1 + p, t.dec)))
            elif form == "1+p":
                cands.append(("sign_flip", li, ei, set_term(ti, 1 - p, t.dec)))
            elif form == "p/100" and p != Fraction(1, 2):
                cands.append(("complement", li, ei, set_term(ti, 100 - t.v)))
            elif form == "a/b" and p != Fraction(1, 2):
                cands.append(("complement", li, ei, set_term(ti, e.terms[ti + 1].v - t.v)))
            # wrong base: the share taken of another quantity written before
            inner = {ti, ti + 1} if form in ("p/100", "a/b") else {ti}
            bi = [k for k in range(len(e.terms)) if k not in inner]
            outer = [o for k, o in enumerate(ops) if not (form in ("p/100", "a/b") and k == ti)]
            if len(bi) == 1 and outer == ["*"] and count_in_line(ln, e.terms[bi[0]].v) == 1:
                b = e.terms[bi[0]].v
                bases = sorted(v for v in known_before(pn, lines, li) | results_before(lines, li, ei)
                               if v >= 5 and v != b and v not in pcts and v.denominator == 1
                               and v != 100 and v != t.v and near(v, b, 20))
                rng.shuffle(bases)
                for nb in bases[:4]:
                    cands.append(("wrong_base", li, ei, set_term(bi[0], nb)))
        # an increase by a share taken as a decrease, or the reverse:
        # `base +/- share of base` right after the share was taken, or
        # `100 - p` for a percentage p
        if len(e.terms) == 2 and ops[0] in "+-":
            x, y = e.terms[0].v, e.terms[1].v
            # (x must be unambiguous: no two earlier values equal to it)
            earlier = [e2.res.v for e2 in ([q for l2 in lines[:li] if isinstance(l2, Line) for q in l2.eqs]
                                            + ln.eqs[:ei])] + ([x] if x in pn else [])
            if (share_of(prev_eq[(li, ei)]) == (y, x) and earlier.count(x) == 1) \
                    or (ops[0] == "-" and x == 100 and y in pcts):
                cands.append(("sign_flip", li, ei, set_op(0, INVERSE_OP[ops[0]])))
        # a rate multiplied where it divides (or the reverse); the rate is a
        # number of the problem written with a per-unit (`55 yards/minute`)
        if len(e.terms) == 2 and ops[0] in "*/":
            pos = {id(t): k for k, t in enumerate(ln.toks)}
            for ti in range(2):
                t = e.terms[ti]
                k = pos.get(id(t))
                if t.v not in pn or k is None or k + 1 >= len(ln.toks):
                    continue
                if ln.toks[k + 1].kind == "txt" and RATE_UNIT_RE.match(ln.toks[k + 1].s):
                    cands.append(("rate_inverted", li, ei, set_op(0, INVERSE_OP[ops[0]])))
                    break
    rng.shuffle(cands)
    # the rarer forms first: complement and sign flips, then bases, then rates
    rank = {"complement": 0, "sign_flip": 0, "wrong_base": 1, "rate_inverted": 2}
    cands.sort(key=lambda c: rank[c[0]] + rng.random() * 1.5)
    return try_sites(cands, lines, problem, final, avoid)


def unit_contexts(c, text):
    """The UNIT_CONTEXTS in which constant c reads as a conversion in text."""
    low = text.lower()
    if c in NUMBER_WORD_RE and re.search(NUMBER_WORD_RE[c], low):
        return []
    return [ctx for ctx in UNIT_CONTEXTS if ctx[0] == c and all(re.search(p, low) for p in ctx[1])]


def make_unit_mixup(problem, lines, final, rng, avoid=()):
    """A unit or time-frame mix-up: a conversion constant the reader supplied
    replaced by the constant of a neighbouring unit (wrong_factor: 30 days for
    a week, 52 weeks for 12 months, 100 for 60 minutes), applied the wrong way
    (inverted_conversion: x 60 for / 60), or a conversion applied where none
    is due (spurious_conversion: `8 dozen x $21 per dozen x 12`)."""
    pq, order = problem_quantities(problem)
    pn = nums_in(problem)
    everything = known_before(pn, lines, len(lines))
    sites = eq_sites(lines)
    rng.shuffle(sites)
    cands = []
    for li, ei in sites:
        ln = lines[li]
        e = ln.eqs[ei]
        ops = [o.s for o in e.ops]
        before = results_before(lines, li, ei)
        if "%" in line_text(ln):
            continue
        text = problem + "\n" + line_text(ln)
        for ti, t in enumerate(e.terms):
            v = t.v
            if v in before or v in pn:
                continue
            once = count_in_line(ln, v) == 1  # a constant also written elsewhere in the line stays
            # a conversion constant the reader supplied from a unit word
            if v.denominator == 1 and int(v) in UNIT_CONSTS and mult_neighbour(e, ti):
                ctxs = unit_contexts(int(v), text)
                for ctx in ctxs:
                    for c2 in ctx[2]:
                        if Fraction(c2) not in everything and once:
                            cands.append(("wrong_factor", li, ei, set_term(ti, c2)))
                if ctxs and len(e.terms) == 2 and ti == 1:
                    cands.append(("inverted_conversion", li, ei, set_op(0, INVERSE_OP[ops[0]])))
        # a conversion where none is due: a product of a quantity the problem
        # gives in a big unit (`8 dozen`, `6 fewer hours`, `4 day`) and a rate
        # per that unit (`$21 per dozen`, `£37/hour`, `110 emails a day`) gets
        # the unit's factor as well, as if the quantity were in small units
        if ops and all(o == "*" for o in ops):
            low = problem.lower()
            for t in e.terms:
                if t.v not in pq or t.v in before or len(pq[t.v]["after"]) != 1:
                    continue
                for c, _, _, small, big in UNIT_CONTEXTS:
                    if not big or c in (100, 1000) or Fraction(c) in pn \
                            or (c in NUMBER_WORD_RE and re.search(NUMBER_WORD_RE[c], low)):
                        continue
                    if re.match(r"\s*(?:[a-z]+\s+)?" + big + r"\b", pq[t.v]["after"][0]) \
                            and re.search(r"(\bper|/|\ba|\ban|\beach|\bevery)\s*" + big + r"\b", low) \
                            and c not in {x.v for x in e.terms}:
                        cands.append(("spurious_conversion", li, ei, insert_factor(c)))
    rng.shuffle(cands)
    # the rarer forms first
    rank = {"wrong_factor": 0, "inverted_conversion": 1, "spurious_conversion": 1}
    cands.sort(key=lambda c: rank[c[0]] + rng.random() * 1.5)
    return try_sites(cands, lines, problem, final, avoid)


def make_wrong_operation(problem, lines, final, rng, avoid=()):
    """The inverse operation (+ for -, * for /, and back), computed correctly.
    Equations that apply a share, a rate or a unit constant are left to the
    percent and unit families."""
    pq, _ = problem_quantities(problem)
    pn = nums_in(problem)
    # values that a share produced (`312 x 3/4 = 234`): flipping `312 - 234` is
    # a percentage misapplied, left to percent_misapplied
    share_made = {e.res.v for ln in lines if isinstance(ln, Line) for e in ln.eqs
                  if share_terms(problem, pq, ln, e)}
    sites = eq_sites(lines, visible_ops=True)
    rng.shuffle(sites)
    cands = []
    for li, ei in sites:
        ln = lines[li]
        e = ln.eqs[ei]
        if share_terms(problem, pq, ln, e) or "%" in line_text(ln) or "/" in line_text(ln).replace(" / ", ""):
            continue
        if any(t.v in share_made and t.v not in pn for t in e.terms):
            continue
        if any(t.v.denominator == 1 and int(t.v) in UNIT_CONSTS and t.v not in pn for t in e.terms):
            continue
        for oi in rng.sample(range(len(e.ops)), len(e.ops)):
            cands.append(("inverse_operation", li, ei, set_op(oi, INVERSE_OP[e.ops[oi].s])))
    return try_sites(cands, lines, problem, final, avoid)


def insert_factor(c):
    """Append `* c` to a product, just before its `=`, spaced like the
    product's own operators."""
    def mutate(ln, e):
        pos = {id(t): k for k, t in enumerate(ln.toks)}
        k0 = pos[id(e.ops[0])]
        spaced = ln.toks[k0 + 1].kind == "txt" and ln.toks[k0 + 1].s.startswith(" ")
        k = pos[id(e.res)]
        while not (ln.toks[k].kind == "txt" and ln.toks[k].s == "="):
            k -= 1
        prev = ln.toks[k - 1]
        op, num = T("op", s="*"), T("num", v=Fraction(c))
        sp = [T("txt", s=" ")] if spaced else []
        if prev.kind == "txt" and prev.s.strip() == "":
            # a bare gap before `=`: the factor goes right after the last term
            ln.toks[k - 1:k - 1] = sp + [op] + sp + [num]
        elif prev.kind == "txt":
            # a unit after the last term (`$3/ball `): the factor follows it
            ln.toks[k:k] = [op, T("txt", s=" "), num, T("txt", s=" ")] if prev.s.endswith(" ") else \
                [T("txt", s=" "), op, T("txt", s=" "), num]
        else:
            ln.toks[k:k] = sp + [op] + sp + [num]
        e.terms.append(num)
        e.ops.append(op)
    return mutate


def make_invented_number(problem, lines, final, rng, avoid=()):
    """A number the problem never gives, used as if it did: a small factor
    appended to a product (invented_factor, `320 guests x 2 = 640 seats`), or a
    unit-constant looking number in place of a given operand of similar size
    (invented_operand).  It is written nowhere in the problem or the trace,
    and no word of the problem or the trace implies it (twice, dozen, week,
    hour, percent...)."""
    pq, _ = problem_quantities(problem)
    pn = nums_in(problem)
    everything = known_before(pn, lines, len(lines))
    text = problem + "\n" + "\n".join(line_text(l) for l in lines)
    implied = implied_constants(text)

    def usable(values):
        vals = list(dict.fromkeys(values))
        pool = [(v, values.count(v)) for v in vals
                if Fraction(v) not in everything and Fraction(v) not in implied]
        out = []
        while pool:
            c = rng.choices([p[0] for p in pool], [p[1] for p in pool])[0]
            pool = [p for p in pool if p[0] != c]
            out.append(c)
        return out

    factors, operands = usable(INVENT_FACTORS), usable(INVENT_OPERANDS)
    sites = eq_sites(lines, visible_ops=True)
    rng.shuffle(sites)
    cands = []
    for li, ei in sites:
        e = lines[li].eqs[ei]
        before = results_before(lines, li, ei)
        if factors and all(o.s == "*" for o in e.ops):
            cands.append(("invented_factor", li, ei, insert_factor(factors[rng.randrange(min(2, len(factors)))])))
        for ti, t in enumerate(e.terms):
            if t.v in pq and t.v not in before and t.v not in (0, 1) and count_in_line(lines[li], t.v) == 1 \
                    and pq[t.v]["kinds"] & {"count", "money"}:
                cs = [c for c in operands if c != t.v and near(c, t.v, 5)]
                if cs:
                    cands.append(("invented_operand", li, ei, set_term(ti, cs[0])))
    rng.shuffle(cands)
    first = "invented_factor" if rng.random() < 0.6 else "invented_operand"
    cands.sort(key=lambda cd: cd[0] != first)
    return try_sites(cands, lines, problem, final, avoid)


# one step past the answer: the answer converted to another unit, the answer
# added to another group of the same things, or the answer split per head
EXTRA_CONVERT = [
    (r"how many hours\b", "*", 60, "minutes"), (r"how many days\b", "*", 24, "hours"),
    (r"how many weeks\b", "*", 7, "days"), (r"how many years\b", "*", 12, "months"),
    (r"how many dozens?\b", "*", 12, None), (r"how many minutes\b", "*", 60, "seconds"),
]
EXTRA_CONVERT_TEXT = ["That is {eq} {unit}.", "In {unit}, that is {eq}.", "Converting to {unit}: {eq}."]
EXTRA_ADD_TEXT = ["Adding the {n} {noun}, that makes {eq} {noun} in all.",
                  "Together with the {n} {noun}, the total is {eq} {noun}.",
                  "Including the {n} {noun} as well: {eq} {noun}."]
EXTRA_SPLIT_TEXT = ["That is {eq} for each of the {n} {noun}.",
                    "Shared among the {n} {noun}, that is {eq} each."]


def build_text(tmpl, fields, eq_items):
    """A Line from a template: {n} becomes a number token, {eq} the equation."""
    b = B()
    for piece in re.split(r"(\{n\}|\{eq\})", tmpl):
        if piece == "{n}":
            b.n(fields["n"])
        elif piece == "{eq}":
            b.eq(*eq_items)
        elif piece:
            b.t(piece.format(**{k: v for k, v in fields.items() if k != "n"}))
    return b.done()


def make_different_question(problem, lines, final, rng, avoid=()):
    """Answering another question: stopping a step early (the final output is
    an intermediate result; no thinking step is wrong, the output is), or
    going one step too far (an extra, correct calculation after the answer;
    that step is `reasoning`)."""
    pq, order = problem_quantities(problem)
    eq_lines = [i for i, ln in enumerate(lines) if isinstance(ln, Line) and ln.eqs]
    kinds = [k for k in ["extra_step", "stopped_early"] if k not in avoid]  # the rarer first
    last = eq_lines[-1]
    question = re.split(r"(?<=[.!?])\s+", problem.strip())[-1].lower()
    for kind in kinds:
        if kind == "stopped_early":
            if len(eq_lines) < 2 or len(lines[last].eqs) != 1 or lines[last].eqs[0].res.v != final:
                continue
            keep = eq_lines[-2] + 1
            r = lines[keep - 1].eqs[-1].res.v
            if r == final or r <= 0:
                continue
            ls = lines[:keep]
            return ls, ["correct"] * len(ls), r, kind
        if final <= 0 or final.denominator != 1:
            continue
        plans = []
        for pat, op, c, unit in EXTRA_CONVERT:
            if re.search(pat, question):
                if unit is None:
                    m = re.search(r"dozens? of (\w+)", question)
                    unit = m.group(1) if m else None
                if unit:
                    plans.append((EXTRA_CONVERT_TEXT, {"unit": unit, "n": c}, op, c))
        m = re.match(r"how many (\w+)", question)
        if m and not plans:
            noun = m.group(1)
            # another, smaller group of the same things (not a rate: `6 pizzas per day`)
            same = [u for u in order if noun in pq[u]["nouns"] and u < final and u.denominator == 1
                    and not any(re.match(r"\s*\w+\s+(per|a|an|each|every)\b", a) for a in pq[u]["after"])]
            rng.shuffle(same)
            if not re.search(r"\b(total|altogether|in all|combined|together)\b", question):
                plans += [(EXTRA_ADD_TEXT, {"n": u, "noun": noun}, "+", u) for u in same]
            if re.search(r"\b(total|altogether|in all|combined|together)\b", question):
                heads = [u for u in order if pq[u]["nouns"] and pq[u]["nouns"][0] != noun
                         and u.denominator == 1 and u >= 2 and final % u == 0]
                plans += [(EXTRA_SPLIT_TEXT, {"n": u, "noun": pq[u]["nouns"][0]}, "/", u) for u in heads]
        for texts, fields, op, u in plans:
            s = evaluate([final, u], [op])
            if s == final or s.denominator != 1 or s <= 0:
                continue
            ln = build_text(rng.choice(texts), fields, (final, op, u))
            return lines + [ln], ["correct"] * len(lines) + ["reasoning"], s, kind
    raise Skip("no different question")


REASONING_MAKERS = {
    "wrong_entity": make_wrong_entity, "wrong_operation": make_wrong_operation,
    "invented_number": make_invented_number, "percent_misapplied": make_percent_misapplied,
    "unit_mixup": make_unit_mixup, "different_question": make_different_question,
}


def reasoning_families(rng):
    """Assign problems of a fresh gsm_symbolic draw to the six families (each
    problem to at most one, the family with the fewest traces first), and
    emit for each its correct trace and its perturbed one, in one style."""
    import reasoning_gym as rg
    ds = rg.create_dataset("gsm_symbolic", seed=SEED % 10000 + 7, size=REASONING_POOL)
    made = {f: [] for f in REASONING_FAMILIES}
    per_tpl = collections.Counter()
    per_variant = collections.Counter()
    for i in range(len(ds)):
        if all(len(made[f]) >= REASONING_TARGET for f in REASONING_FAMILIES):
            break
        ref = gsm_reference(ds[i])
        if ref is None:
            continue
        tid = ds.task_indices[i]
        problem, lines, final = ref
        prng = random.Random(rng.randrange(1 << 30))
        order = sorted(REASONING_FAMILIES, key=lambda f: (len(made[f]), REASONING_FAMILIES.index(f)))
        for fam in order:
            if len(made[fam]) >= REASONING_TARGET or \
                    per_tpl[(fam, tid)] >= REASONING_PER_TEMPLATE.get(fam, 2):
                continue
            avoid = {v for v, cap in REASONING_VARIANT_CAP.items() if per_variant[v] >= cap}
            try:
                ls, labs, fin, variant = REASONING_MAKERS[fam](problem, lines, final,
                                                               random.Random(prng.randrange(1 << 30)), avoid)
            except Skip:
                continue
            per_tpl[(fam, tid)] += 1
            per_variant[variant] += 1
            made[fam].append((problem, lines, final, ls, labs, fin, variant, prng.randrange(1 << 30)))
            break
    out = []
    for fam in REASONING_FAMILIES:
        for idx, (problem, lines, final, ls, labs, fin, variant, sseed) in enumerate(made[fam]):
            srng = random.Random(sseed)
            st = new_style(srng, "gsm")
            intro_seed = srng.randrange(1 << 30)
            src = "reasoning-gym:gsm_symbolic"
            for var, l2, lb2, f2 in (("correct", lines, ["correct"] * len(lines), final),
                                     (variant, ls, labs, fin)):
                trace, steps = assemble(problem, l2, lb2, default_final(f2, st), st, random.Random(intro_seed))
                out.append(record(fam, idx, var, src, trace, steps, f2 == final))
    return out


# --------------------------------------------------------------------------
# main / check
# --------------------------------------------------------------------------
FAMILIES = [
    ("gsm", family_gsm), ("arithmetic", family_arithmetic), ("fractions", family_fractions),
    ("algebra", family_algebra), ("propositional", family_propositional), ("rule_chain", family_rule_chain),
]


def generate():
    recs = []
    for k, (fam, fn) in enumerate(FAMILIES):
        rng = random.Random(SEED * 100 + k)
        recs += fn(PROBLEMS_PER_FAMILY[fam], rng)
    # appended after the original families, so their records stay as they were
    recs += reasoning_families(random.Random(SEED * 100 + 50))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        for r in recs:
            f.write(json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n")
    rc = check(OUT)
    if os.path.exists(WRITTEN):  # hand-written: validated, never written here
        rc |= check(WRITTEN, written=True)
    return rc


# --------------------------------------------------------------------------
# checking calculations in free text (written.jsonl, and the reasoning
# families): every `a op b = c` chain that can be read is evaluated exactly
# --------------------------------------------------------------------------
CALC_TOKEN_RE = re.compile(r"\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<op>[-+*/])|(?P<lp>\()|(?P<rp>\))|(?P<eq>=)"
                           r"|(?P<word>[A-Za-z][A-Za-z'\-]*)|(?P<other>\S))")


def normalise_calc(text):
    """Plain ASCII arithmetic: LaTeX, typographic signs, currency, bold,
    thousands separators and percentages (n% is n/100) rewritten."""
    t = text
    t = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"((\1)/(\2))", t)
    t = t.replace("\\times", "*").replace("\\cdot", "*").replace("\\div", "/").replace("\\$", "")
    t = re.sub(r"\\[A-Za-z]+", " ", t)
    t = t.replace("{", " ").replace("}", " ").replace("**", " ").replace("$", " ")
    t = t.replace("−", "-").replace("–", "-").replace("×", "*").replace("·", "*").replace("÷", "/")
    t = re.sub(r"[€£]", " ", t)
    t = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", t)
    t = re.sub(r"(?<![A-Za-z])x(?=\s*[\d(])", " * ", t)  # `14x5`, `questions x 50`
    t = re.sub(r"(\d+(?:\.\d+)?)\s*%", r"(\1/100)", t)
    t = re.sub(r"(?<=\d)\s*\(", " * (", t)  # 2(21) is 2 * (21)
    # a single letter (`1615h`, `h = ...`) is a variable, not a unit: it ends a chain
    t = re.sub(r"(?<![A-Za-z'])([B-Zb-z])(?![A-Za-z'])", r" @\1 ", t)
    t = re.sub(r"(?<=\d)([Aa])(?![A-Za-z'])", r" @\1 ", t)  # `2037a`
    return t


def _eval_part(toks):
    if not toks or not any(k == "num" for k, _ in toks):
        return None, False
    src = "".join(v for _, v in toks)
    try:
        node = _ast.parse(src, mode="eval").body
    except SyntaxError:
        return None, False

    def ev(n):
        if isinstance(n, _ast.Constant):
            return Fraction(str(n.value))
        if isinstance(n, _ast.UnaryOp) and isinstance(n.op, (_ast.USub, _ast.UAdd)):
            v = ev(n.operand)
            return -v if isinstance(n.op, _ast.USub) else v
        if isinstance(n, _ast.BinOp) and type(n.op) in PY_OPS:
            a, b = ev(n.left), ev(n.right)
            op = PY_OPS[type(n.op)]
            if op == "/" and b == 0:
                raise ZeroDivisionError
            return {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else None}[op]
        raise ValueError

    try:
        return ev(node), any(k == "op" for k, _ in toks)
    except (ValueError, ZeroDivisionError):
        return None, False


def calc_claims(text):
    """[(claim text, holds)] for every chain `e1 = e2 (= e3 ...)` in text in
    which at least one side computes something.  Unit words after a number
    (`27 balls * $3/ball = $81`) are skipped; any other word ends a chain."""
    claims = []
    # list markers (`- `, `* `, `1. `, `Step 2: `), possibly nested, are not arithmetic
    text = re.sub(r"^(?:\s*(?:[-*•]\s+|\d+[.)]\s+|Step \d+:\s*))+", "", text)
    for m in re.finditer(r"<<([^<>]*)>>", text):  # GSM8K annotations
        parts = m.group(1).split("=")
        claims += _chain_claims([_tokens(normalise_calc(p)) for p in parts])
    text = re.sub(r"<<[^<>]*>>", "", text)
    toks = _tokens(normalise_calc(text))
    # drop unit words after a number or `)`: up to four words or `/word`
    # units (`orders/day`, `kg/turkey`, `of a serving`), when an operator or
    # `=` follows them
    def unit_op(j):
        return j < len(toks) and (toks[j][0] == "eq" or (toks[j][0] == "op" and not (
            toks[j][1] == "/" and j + 1 < len(toks) and toks[j + 1][0] == "word")))

    keep, i = [], 0
    while i < len(toks):
        keep.append(toks[i])
        if toks[i][0] not in ("num", "rp"):
            i += 1
            continue
        j, nwords, best = i + 1, 0, None
        while j < len(toks) and nwords < 4:
            if toks[j] == ("op", "/") and j + 1 < len(toks) and toks[j + 1][0] == "word":
                j += 2
            elif toks[j][0] == "word":
                j += 1
            else:
                break
            nwords += 1
            if unit_op(j):
                best = j
        i = best if best is not None else i + 1
    # segments of arithmetic tokens
    segs, cur = [], []
    for k, v in keep:
        if k in ("num", "op", "lp", "rp", "eq"):
            cur.append((k, v))
        else:
            segs.append(cur)
            cur = []
    segs.append(cur)
    for seg in segs:
        if not any(k == "eq" for k, _ in seg):
            continue
        parts, cur = [], []
        for k, v in seg:
            if k == "eq":
                parts.append(cur)
                cur = []
            else:
                cur.append((k, v))
        parts.append(cur)
        claims += _chain_claims(parts)
    return claims


def _tokens(s):
    out = []
    for m in CALC_TOKEN_RE.finditer(s):
        k = m.lastgroup
        out.append((k, m.group(k)))
    return out


def _chain_claims(parts):
    vals = []
    for p in parts:
        # a leading fragment such as `+ 5` or `1.` (list number): trim from the left
        while p and p[0][0] in ("op", "rp") and p[0][1] not in "-(":
            p = p[1:]
        vals.append((_eval_part(p), "".join(v for _, v in p)))
    out = []
    for (a, sa), (b, sb) in zip(vals, vals[1:]):
        (va, opa), (vb, opb) = a, b
        if va is None or vb is None or not (opa or opb):
            continue
        out.append((f"{sa} = {sb}", close(va, vb)))
    return out


# families whose every calculation --check re-reads against its step label
CALC_CHECKED = {"gsm", "arithmetic", "algebra", "fractions"} | set(REASONING_FAMILIES)


def check(path, written=False):
    """Validate a corpus file and print its counts.  written=True for the
    hand-written file: its own families and variants, no size thresholds,
    and every calculation on a step checked against its label."""
    errors = []
    per = collections.defaultdict(collections.Counter)
    per_variant = collections.defaultdict(collections.Counter)
    ids = set()
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(l) for l in f if l.strip()]
    variants = WRITTEN_VARIANTS if written else VARIANTS + [v for vs in REASONING_VARIANTS.values() for v in vs]
    bad_labels = ("invalid", "ungrounded", "reasoning")
    for r in rows:
        rid = r.get("id")
        if list(r.keys()) != KEYS:
            errors.append(f"{rid}: keys {list(r.keys())}")
            continue
        if rid in ids:
            errors.append(f"{rid}: duplicate id")
        ids.add(rid)
        if r["variant"] not in variants:
            errors.append(f"{rid}: variant")
        if written and (r["family"] != "written" or not r["source"].startswith("written:")):
            errors.append(f"{rid}: family/source")
        tr = r["trace"]
        if tr.count("## Problem Statement\n") != 1 or tr.count("\n\n## Thinking Process\n") != 1 \
                or tr.count("\n\n## Final Output\n") != 1 or not tr.startswith("## Problem Statement\n"):
            errors.append(f"{rid}: headings")
            continue
        a = tr.index("\n\n## Thinking Process\n") + len("\n\n## Thinking Process\n")
        b = tr.index("\n\n## Final Output\n")
        pos = a
        covered = []
        for s in r["steps"]:
            if s["label"] not in STEP_LABELS:
                errors.append(f"{rid}: step label {s['label']}")
            j = tr.find(s["text"], pos)
            if j < 0 or j + len(s["text"]) > b or not s["text"].strip():
                errors.append(f"{rid}: step not found in order: {s['text'][:60]!r}")
                break
            covered.append((j, j + len(s["text"])))
            pos = j + len(s["text"])
        else:
            rest = list(tr[a:b])
            for x, y in covered:
                for q in range(x - a, y - a):
                    rest[q] = " "
            for ln in "".join(rest).split("\n"):
                if ln.strip():
                    errors.append(f"{rid}: uncovered text {ln.strip()[:60]!r}")
                    break
            if written:
                # each non-blank line is exactly one step
                lines_ = [l for l in tr[a:b].split("\n") if l.strip()]
                if lines_ != [s["text"] for s in r["steps"]]:
                    errors.append(f"{rid}: steps are not exactly the non-blank lines")
        labs = [s["label"] for s in r["steps"]]
        if r["output_label"] not in ("correct", "wrong"):
            errors.append(f"{rid}: output_label")
        want = "correct" if r["output_label"] == "correct" and all(l == "correct" for l in labs) else "incorrect"
        if r["trace_label"] != want:
            errors.append(f"{rid}: trace_label")
        if r["variant"] == "correct" and want != "correct":
            errors.append(f"{rid}: correct variant with wrong labels")
        if r["variant"] != "correct" and want == "correct":
            errors.append(f"{rid}: corrupted variant without a bad step or a wrong output")
        if "propagated" in labs and not any(l in bad_labels for l in labs[:labs.index("propagated")]):
            errors.append(f"{rid}: propagated before any error")
        fam = r["family"]
        # the reasoning families: one `reasoning` step (none when the trace
        # stops early, where the output is wrong), no other kind of error, and
        # every calculation written holds
        if fam in REASONING_FAMILIES and r["variant"] != "correct":
            nr = labs.count("reasoning")
            if r["variant"] not in REASONING_VARIANTS[fam]:
                errors.append(f"{rid}: variant not of its family")
            if any(l in ("invalid", "ungrounded") for l in labs):
                errors.append(f"{rid}: invalid/ungrounded step in a reasoning family")
            if r["variant"] == "stopped_early":
                if nr or r["output_label"] != "wrong":
                    errors.append(f"{rid}: stopped_early must have no wrong step and a wrong output")
            elif nr != 1:
                errors.append(f"{rid}: {nr} reasoning steps")
            if r["trace_label"] != "incorrect":
                errors.append(f"{rid}: trace_label")
        if fam in CALC_CHECKED or written:
            for s in r["steps"]:
                if fam == "fractions" and s["label"] == "propagated":
                    continue  # README, Known limits: the closing `\frac{a}{b} = \frac{c}{d}` line
                claims = calc_claims(s["text"])
                wrong = [c for c, ok in claims if not ok]
                if s["label"] == "invalid":
                    if not wrong:
                        errors.append(f"{rid}: invalid step whose calculations all hold: {s['text'][:60]!r}")
                elif wrong:
                    errors.append(f"{rid}: {s['label']} step with a false calculation {wrong[0]!r}")
                if written and not claims and re.search(r"\d\s*=|=\s*\S*\d", re.sub(r"<<[^<>]*>>", "", s["text"])):
                    errors.append(f"{rid}: a calculation the checker cannot read: {s['text'][:60]!r}")
                per[fam]["calcs_checked"] += len(claims)
        per[fam]["traces"] += 1
        per[fam]["variant:" + r["variant"]] += 1
        pv = per_variant[(fam, r["variant"])]
        pv["traces"] += 1
        pv["output_wrong"] += r["output_label"] == "wrong"
        for l in labs:
            per[fam]["step:" + l] += 1
            pv[l] += 1
        per[fam]["output:" + r["output_label"]] += 1
    tot = collections.Counter()
    print(f"== {os.path.relpath(path)}")
    for fam in sorted(per):
        tot.update(per[fam])
        print(fam, dict(sorted(per[fam].items())))
    print("TOTAL", dict(sorted(tot.items())))
    corrupted = sum(v for k, v in tot.items() if k.startswith("step:") and k != "step:correct")
    print(f"families={len(per)} traces={len(rows)} correct_steps={tot['step:correct']} "
          f"non_correct_steps={corrupted} bytes={os.path.getsize(path)}")
    print(f"{'family':<20}{'variant':<22}{'traces':>7}{'out_wrong':>10}" + "".join(f"{l:>11}" for l in STEP_LABELS))
    for (fam, var) in sorted(per_variant):
        pv = per_variant[(fam, var)]
        print(f"{fam:<20}{var:<22}{pv['traces']:>7}{pv['output_wrong']:>10}"
              + "".join(f"{pv[l]:>11}" for l in STEP_LABELS))
    if not written:
        if len(per) < 5:
            errors.append("fewer than 5 families")
        if tot["step:correct"] < 1000 or corrupted < 500:
            errors.append("too few steps")
    for e in errors[:50]:
        print("ERROR", e)
    print("OK" if not errors else f"{len(errors)} errors")
    return 0 if not errors else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="validate the committed corpus and written.jsonl")
    ap.add_argument("--path", default=OUT)
    ap.add_argument("--written", default=WRITTEN, help="the hand-written file checked with --check")
    args = ap.parse_args()
    if args.check:
        rc = check(args.path)
        if os.path.exists(args.written):
            rc |= check(args.written, written=True)
        sys.exit(rc)
    sys.exit(generate())


if __name__ == "__main__":
    main()
