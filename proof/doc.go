// Package proof checks bl's promises against real bl processes.
//
// The tests in this package run the bl binary the way a fleet of agents does,
// many short-lived processes at once, and inject the faults agents suffer:
// processes stopped with SIGSTOP while they may hold the backlog lock,
// processes killed with SIGKILL mid-flight or at a chosen stage of the append
// path, agents that pause past their lease and come back with a stale epoch,
// and ledgers whose tail or middle has been damaged.
//
// Every invocation is recorded as a Call (arguments, start and end times,
// exit code, output). Check is a pure function over those calls and the final
// ledger.jsonl bytes that reports every broken promise as a Violation:
// double claims, overlapping leases, lost acknowledged events, stale owners
// that were not fenced, cards not completed exactly once, and more. A binary
// built with -tags bl_brokenlock, whose lock does nothing, must make Check
// report a double claim; that shows the checker is able to see one. The
// negative control leaves nothing to luck: two claimers of one card park
// themselves at the before-write failpoint (BL_FAILPOINT_ACTION=stop in a
// -tags bl_failpoints build), so both have decided on the same state before
// either writes, and are let go together. Against the real lock the second
// cannot get there while the first is parked, and Check finds nothing.
// The lock file deleted or replaced under a parked holder gets the same
// treatment (lockmoved_test.go): against a -tags bl_stalelock build, whose
// lock is only the file as opened, a second claimer locks the new file and
// Check must report the double claim; against the real lock it waits.
//
// The git-native suite (gitworld_test.go, gitnative_test.go,
// gitrace_test.go) runs bl and bl-git next to the system git binary: one
// bare remote, clones that never run bl init (only the clone that creates
// the backlog does), and the ways teams meet — git pull with merge and
// rebase, cherry-pick, both sides compacted, CRLF checkouts, a clone that
// syncs 300 events late, and 3 clones × 4 processes racing claim --remote
// and complete --remote while a plain-git user pushes. Every scenario ends
// with every clone converged and judged alike: no conflict markers, bl
// doctor clean, every acknowledged request in the log exactly once, every
// event id on one line only, and the same bl export --format json bytes,
// also after each clone merged every other clone's branch in its own order.
//
// The arbiter suite (arbiter_test.go) runs clones × processes claiming,
// heartbeating and completing through a NATS JetStream claim arbiter
// started in the test process on 127.0.0.1 (file storage in a temporary
// directory): clients stopped past their TTL and killed, the server
// killed and restarted, and under BL_STRESS a 3-node cluster (R3) losing a
// node. The clones are judged by Check over the union of their ledgers
// (git's union merge), and in TestArbiterSyncRace after converging through
// bl sync. TestArbiterVersusGit (BL_ARBITER_BENCH=1) measures the same
// workload through the git remote and the arbiter side by side.
//
// Sizes: plain `go test ./proof/` runs the CI size, a few minutes on two
// cores (125 crash kills, 40 compaction kills, 8 sessions through 12 s of
// lock churn). BL_STRESS=1 runs the full size: 64 agents on 400 cards, 64
// agents racing for each of 200 cards, 1500 crash kills, 400 compaction
// kills, 64 sessions through lock churn.
package proof
