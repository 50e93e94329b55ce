//! Bad input: deep nesting, huge formulas, too many justifiers, oversized texts and
//! random bytes give a clean refusal or error, never a panic, a stack overflow or a hang.

use trust_judging::proof::{
    ErrorKind, Verdict, check_plan, check_proof, generate::Rng, recognize, steps,
};

const NDL: &str = "assert premise-1 := A\nDerive: A\n";

fn undecided_or_syntax(v: &Verdict) -> bool {
    matches!(v, Verdict::Undecided { .. })
        || matches!(v, Verdict::Fail(f) if f.kind == ErrorKind::Syntax)
}

#[test]
fn nesting_ten_thousand_deep_is_refused() {
    let formula = format!("{}A{}", "(~ ".repeat(10_000), ")".repeat(10_000));
    let proof = format!("{{\n  {formula} BY claim on premise-1\n}}");
    let r = check_proof(NDL, &proof).unwrap();
    assert!(
        matches!(r.verdict, Verdict::Undecided { .. }),
        "{:?}",
        r.verdict
    );
    assert!(steps(NDL, &proof).unwrap().is_err());

    let blocks = format!(
        "{}A BY claim on premise-1{}",
        "{ ".repeat(10_000),
        " }".repeat(10_000)
    );
    let r = check_proof(NDL, &blocks).unwrap();
    assert!(
        matches!(r.verdict, Verdict::Undecided { .. }),
        "{:?}",
        r.verdict
    );

    let assumes = format!(
        "{}A BY claim on premise-1{}",
        "assume A { ".repeat(10_000),
        " }".repeat(10_000)
    );
    let r = check_proof(NDL, &assumes).unwrap();
    assert!(
        matches!(r.verdict, Verdict::Undecided { .. }),
        "{:?}",
        r.verdict
    );

    let eq = "E1: f(X) = X\nGoal: a = a\n".to_string();
    let term = format!("{}a{}", "f(".repeat(10_000), ")".repeat(10_000));
    let r = check_proof(&eq, &format!("s = {term}\n  = a by E1")).unwrap();
    assert!(
        matches!(r.verdict, Verdict::Undecided { .. }),
        "{:?}",
        r.verdict
    );

    let hilbert = "Premises:\nGoal: (A ==> A)\n";
    let f = format!("{}A{}", "(~ ".repeat(10_000), ")".repeat(10_000));
    let r = check_proof(hilbert, &format!("0. {f}, Axiom1, p := A, q := A;"))
        .unwrap_or_else(|| panic!("not recognised"));
    assert!(undecided_or_syntax(&r.verdict), "{:?}", r.verdict);
}

#[test]
fn a_one_mebibyte_formula_is_refused() {
    let big = format!("(A{})", " & A".repeat(262_144));
    assert!(big.len() >= 1 << 20);
    let proof = format!("{big} BY claim on premise-1");
    let r = check_proof(NDL, &proof).unwrap();
    assert!(
        matches!(r.verdict, Verdict::Undecided { .. }),
        "{:?}",
        r.verdict
    );
    // as a premise of the problem too
    let problem = format!("assert premise-1 := {big}\nDerive: A\n");
    let r = check_proof(&problem, "A BY claim on A");
    assert!(r.is_none_or(|r| !r.passed()));
}

#[test]
fn oversized_texts_are_not_read() {
    let proof = format!(
        "{{\n{}  A BY claim on premise-1\n}}",
        "  A BY claim on premise-1;\n".repeat(200_000)
    );
    assert!(proof.len() > trust_judging::proof::limits::MAX_PROOF_BYTES);
    assert!(recognize(NDL, &proof).is_none());
    assert!(check_proof(NDL, &proof).is_none());
}

#[test]
fn more_than_five_justifiers_is_a_type_error_however_many() {
    let many = vec!["premise-1"; 5_000].join(", ");
    let r = check_proof(NDL, &format!("A from {many}")).unwrap();
    let Verdict::Fail(f) = r.verdict else {
        panic!("{:?}", r.verdict)
    };
    assert_eq!(f.kind, ErrorKind::Type);
}

#[test]
fn growing_formulas_through_names_hit_the_limit_not_the_memory() {
    // each step doubles the formula: 40 steps would be 2^40 nodes
    let mut proof = String::from("{\n  x0 := (A & A);\n");
    for i in 1..40 {
        proof.push_str(&format!("  x{i} := (x{} & x{});\n", i - 1, i - 1));
    }
    proof.push_str("  A BY claim on premise-1\n}");
    let r = check_proof(NDL, &proof).unwrap();
    assert!(
        matches!(r.verdict, Verdict::Undecided { .. }),
        "{:?}",
        r.verdict
    );
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng::new(99);
    let alphabet: Vec<char> = "(){};,:=.~&|<>#ABCabc012 \n\"\\fromBYonassumesuppose-absurd"
        .chars()
        .collect();
    let problems = [
        NDL.to_string(),
        "Premises:\nPremise1 := A\nGoal: A\n".to_string(),
        "E1: f(X) = X\nGoal: f(a) = a\n".to_string(),
    ];
    for i in 0..3_000 {
        let len = rng.below(200);
        let text: String = (0..len).map(|_| *rng.pick(&alphabet).unwrap()).collect();
        let problem = &problems[i % problems.len()];
        let _ = check_proof(problem, &text);
        if let Some(Ok(plan)) = steps(problem, &text) {
            let _ = check_plan(&plan);
            let _ = trust_judging::proof::check_structure(&plan);
        }
    }
}

/// A pyramid-pebbling problem (ProofGrid PL2, B.2.1) of height `h`: 2 atoms per node.
fn pyramid(h: usize, drop_one: bool) -> (String, String) {
    let atom = |r: usize, c: usize, k: usize| format!("P{r}_{c}_{k}");
    let mut clauses = Vec::new();
    for c in 0..=h {
        clauses.push(format!("({} | {})", atom(h, c, 1), atom(h, c, 2)));
    }
    for r in 0..h {
        for c in 0..=r {
            for i in 1..=2 {
                for j in 1..=2 {
                    clauses.push(format!(
                        "({} & {} ==> {} | {})",
                        atom(r + 1, c, i),
                        atom(r + 1, c + 1, j),
                        atom(r, c, 1),
                        atom(r, c, 2)
                    ));
                }
            }
        }
    }
    if drop_one {
        clauses.pop();
    }
    let chunk = clauses.len().div_ceil(5);
    let mut problem = String::new();
    for (i, c) in clauses.chunks(chunk).enumerate() {
        problem.push_str(&format!(
            "assert premise-{} := ({})\n",
            i + 1,
            c.join(" & ")
        ));
    }
    let goal = format!("({} | {})", atom(0, 0, 1), atom(0, 0, 2));
    problem.push_str(&format!("Derive: {goal}\n"));
    let justs: Vec<String> = (1..=clauses.chunks(chunk).count())
        .map(|i| format!("premise-{i}"))
        .collect();
    (problem, format!("{goal} from {}", justs.join(", ")))
}

#[test]
fn pl2_sized_from_steps_are_decided_by_sat() {
    // height 13: 105 nodes, 210 atoms, 378 clauses in five justifiers
    let (problem, proof) = pyramid(13, false);
    let r = check_proof(&problem, &proof).unwrap();
    assert!(r.passed(), "{:?}", r.verdict);
    // without the last precedence clause the apex no longer follows: a logic error whose
    // detailed reason carries a counterexample
    let (problem, proof) = pyramid(13, true);
    let r = check_proof(&problem, &proof).unwrap();
    let Verdict::Fail(f) = r.verdict else {
        panic!("{:?}", r.verdict)
    };
    assert_eq!(f.kind, ErrorKind::Logic);
    assert!(f.detailed_reason.contains("Counterexample"));
    assert!(
        !f.public_reason.contains("P0_0"),
        "public reasons quote no formula"
    );
}
