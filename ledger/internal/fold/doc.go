// Package fold folds decoded events into a State: the op rules (ops.go and
// one file per family of ops), the reads a rule needs first (reads.go), and
// what readers ask of a state: selection and claim order (select.go),
// standing, changes between two cards, epics, paths, cycles. It is pure: it
// imports wire and no package that reaches a file or a clock, and the store
// (package ledger) decides what to decode and hands it over through a
// CardSource. A read that fails is returned by the store before the fold
// runs (State.Resolve), never met inside it. The rules themselves are
// specified in package ledger's documentation (The fold).
package fold
