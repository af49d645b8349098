// Package gitsync commits a bl backlog to git and exchanges it with a git
// remote, which acts as the arbiter between machines: the remote's atomic
// ref update is the compare-and-swap. It is the only part of bl that uses
// go-git; package ledger knows nothing of git.
//
// bl reaches git through four packages, each for one thing: gitdir finds
// a repository's directories from the files git leaves on disk and is the
// one door to the system git (Run); internal/gitwork runs that git for a
// card's work (worktrees, branch heads, staged files); ledger/gitsync is
// the backlog's own traffic with git through go-git (commit, fetch,
// rebase, push, lease refs, the merge driver); internal/cli/gitcli is
// bl-git's commands on top of gitsync.
//
// # Commits
//
// A commit is built from the bytes of the backlog's tracked files as read
// under the backlog lock (ledger.Backlog.TreeUnread), never from the
// working tree, so a half-written line is never committed. The files
// become blobs, the blobs a tree at the backlog's path inside the branch's
// tree, and the commit's parent is the branch's commit. Archive segments
// are never changed once written, and the snapshot only when a compaction
// replaces it, so each is read and hashed once: its blob hash is
// remembered in cache/blobs.json by name, size and modification time (as
// git's index remembers stat data), and a file whose size or time
// changed, or whose blob the repository lacks, is read and hashed again.
// A commit thus costs what changed, not all history. Files outside the backlog are
// taken from the branch's commit, so nothing the user staged or changed is
// swept in. The branch ref moves with git's own lock-file protocol
// (ref.lock, compare with the old value, rename), and the index entries of
// the backlog files are updated the same way so git status shows them
// unchanged. A tree equal to the branch's is no commit at all.
//
// The message names the cards of the events new since the parent, by
// kind, "bl: created A5 A6; A1 claimed by w1; A2 done", after the caller's
// subject if any (see Summarize).
//
// # Exchange
//
// A push runs rounds until the remote takes it:
//
//  1. fetch the remote branch (no lock held). Objects are stored loose, each
//     with an atomic rename, commits last, so other bl processes of the same
//     clone never see a half-fetched commit.
//  2. read the fetched commit's backlog files and rebase the local backlog
//     onto them (ledger.Backlog.ApplyUpstreamUnread, under the backlog
//     lock): the remote's history stays as it is and the events only the
//     local side has go after it, re-stamped where needed. A claim that
//     raced one the remote already holds folds as a recorded conflict.
//     config.json and .gitignore edited locally since the branch's commit
//     keep the local version. An archive segment the remote and the clone
//     hold under one name with one blob hash is shared: it is not read
//     from git or from disk, nor decoded; the same goes for the snapshot
//     while both sides' are the same. When the clone had compacted
//     since it last took the remote's files, or the rebased ledger is past
//     the compaction threshold, the result is compacted (a new snapshot
//     and a new segment), so compaction reaches the remote and its ledger
//     stays short.
//  3. commit the backlog with the fetched commit as a parent: the only one
//     when the branch has nothing the remote lacks (a fast-forward), else
//     the second parent of a merge.
//  4. push, stating the fetched commit as the old value of the branch: the
//     remote applies the update only if the branch did not move. Never
//     forced.
//  5. rejected because the branch moved: wait a jittered, growing pause
//     and go back to 1, up to Options.Tries rounds.
//
// No git network call and no git subprocess runs while the backlog lock is
// held; steps 2 and the reads of the backlog take and release it
// themselves.
//
// Outside the backlog bl merges nothing. If the remote branch changed files
// outside the backlog that the local branch lacks, the commit would need a
// real merge: the round fails with ErrDiverged (the backlog has taken the
// remote's events, the branch is unchanged) and git pull, with bl's merge
// driver for the ledger, does the rest. A branch used only for the backlog
// (Options.Branch other than the checked-out one) never has this problem
// and never touches the worktree or the index.
//
// # Remote claims
//
// Syncer.Claim and Syncer.Lease write lease events through lease refs,
// one per card (LeaseRefPrefix): each round fetches the branch and the
// lease refs and folds both, builds and checks the event under the backlog
// lock without appending it (ledger.Backlog.Stage), pushes it to its
// card's lease ref with the fetched tip as the expected old value with the
// lock released, and appends it locally once that push landed
// (ledger.Backlog.AppendStaged; a backlog that moved meanwhile gets it by a
// pull instead). No network call happens under the lock. Git's
// compare-and-swap is per ref, so writes on different cards never
// contend, and a push that lost writes nothing anywhere: the next round
// fetches again, and a claim picks again (at random among the best
// claimSpread cards, so racing clones rarely collide). Once the write
// landed, carry commits and pushes the branch so it holds what only lease
// refs held. A retry of a write this clone recorded answers as the first
// did and pushes it if the remote lacks it. A write that ends a lease on
// a card whose lease ref this clone wrote last goes out first without a
// fetch, the lease ref and the branch in one atomic push (leasefast.go).
//
// What a lease ref holds is vetted before it is folded (leasevet.go): only
// the lease events of its own card, in a commit of bounded size; the rest
// is set aside with a warning. Lines of the fetched branch that do not
// read are quarantined (ledger.QuarantineLines) rather than refused. The
// lease refs of one backlog share one namespace, named by its identity
// (leaseNamespace), whatever the branch; those of done cards are retired
// (retire.go).
//
// # Failures
//
// An unreachable remote, a refused fetch or push, or a push still rejected
// after the last round is a *RemoteError (ErrRemote); the local backlog
// keeps every event it had, and a remote lease write that did not land
// wrote nothing. A push the remote refuses for good (a hook, a protected
// ref, no permission) fails on its first round with the remote's words. A crash at
// any point leaves the backlog as the ledger package guarantees; git's
// objects and refs are history (go-git does not fsync them), and the next
// sync commits whatever the backlog holds.
package gitsync
