//! The compile errors users see: misuse of the macros, and handlers the traits reject,
//! each with the message the diagnostics give. `TRYBUILD=overwrite` regenerates the
//! `.stderr` files after a deliberate change to a message.

#[test]
fn compile_errors_say_what_is_wrong() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
