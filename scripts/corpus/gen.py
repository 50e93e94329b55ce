#!/usr/bin/env python3
"""Deterministic generator for the TRUST labelled reasoning-trace corpus.

Writes examples/corpus/quality.jsonl from problems produced by the
reasoning-gym package (see README.md next to this file).  Every run with the
same package versions gives byte-identical output: all randomness comes from
random.Random instances seeded from SEED.

    python scripts/corpus/gen.py            # (re)generate the corpus
    python scripts/corpus/gen.py --check    # validate the committed file

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
PROBLEMS_PER_FAMILY = {
    "gsm": 60, "arithmetic": 55, "fractions": 55, "algebra": 55,
    "propositional": 55, "rule_chain": 55,
}
VARIANTS = ["correct", "changed_result", "wrong_operator", "dropped_term",
            "ungrounded_number", "invalid_rule"]
STEP_LABELS = ["correct", "invalid", "ungrounded", "propagated"]
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
        e = ds[i]
        cot = e["metadata"]["answer_cot"]
        problem = e["question"].replace(" Give the result as your final answer. Do not include units.", "")
        raw = [l.strip() for l in cot.split("\n")]
        body = [l for l in raw if l and not l.startswith("####")]
        final = Fraction(str(e["metadata"]["answer_value"]))
        if Fraction(e["answer"]) != final:
            continue
        lines, bad = [], False
        for l in body:
            ln, b = parse_line(l)
            bad |= b
            lines.append(ln)
        if bad or not any(ln.eqs for ln in lines):
            continue  # a reference equation that does not hold: skip problem
        # the final answer must be written as some equation's result
        if not any(close(e2.res.v, final) for ln in lines for e2 in ln.eqs):
            continue
        final = next(e2.res.v for ln in lines for e2 in ln.eqs if close(e2.res.v, final))
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
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        for r in recs:
            f.write(json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n")
    return check(OUT)


def check(path):
    errors = []
    per = collections.defaultdict(collections.Counter)
    ids = set()
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(l) for l in f if l.strip()]
    for r in rows:
        rid = r.get("id")
        if list(r.keys()) != KEYS:
            errors.append(f"{rid}: keys {list(r.keys())}")
            continue
        if rid in ids:
            errors.append(f"{rid}: duplicate id")
        ids.add(rid)
        if r["variant"] not in VARIANTS:
            errors.append(f"{rid}: variant")
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
        labs = [s["label"] for s in r["steps"]]
        if r["output_label"] not in ("correct", "wrong"):
            errors.append(f"{rid}: output_label")
        want = "correct" if r["output_label"] == "correct" and all(l == "correct" for l in labs) else "incorrect"
        if r["trace_label"] != want:
            errors.append(f"{rid}: trace_label")
        if r["variant"] == "correct" and want != "correct":
            errors.append(f"{rid}: correct variant with wrong labels")
        if r["variant"] != "correct" and all(l == "correct" for l in labs):
            errors.append(f"{rid}: corrupted variant without a bad step")
        if "propagated" in labs and not any(l in ("invalid", "ungrounded") for l in labs[:labs.index("propagated")]):
            errors.append(f"{rid}: propagated before any error")
        fam = r["family"]
        per[fam]["traces"] += 1
        per[fam]["variant:" + r["variant"]] += 1
        for l in labs:
            per[fam]["step:" + l] += 1
        per[fam]["output:" + r["output_label"]] += 1
    tot = collections.Counter()
    for fam in sorted(per):
        tot.update(per[fam])
        print(fam, dict(sorted(per[fam].items())))
    print("TOTAL", dict(sorted(tot.items())))
    corrupted = sum(v for k, v in tot.items() if k.startswith("step:") and k != "step:correct")
    print(f"families={len(per)} traces={len(rows)} correct_steps={tot['step:correct']} "
          f"non_correct_steps={corrupted} bytes={os.path.getsize(path)}")
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
    ap.add_argument("--check", action="store_true", help="validate the committed corpus")
    ap.add_argument("--path", default=OUT)
    args = ap.parse_args()
    if args.check:
        sys.exit(check(args.path))
    sys.exit(generate())


if __name__ == "__main__":
    main()
