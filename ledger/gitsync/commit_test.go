package gitsync

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/bl-backlog/bl/ledger"
)

// When another bl process commits a newer backlog between this commit's
// read of the backlog and its update of the branch ref, commit reads the
// backlog again instead of committing the older one on top, which would
// leave the branch's tip without events the previous commit had (until
// the next sync). The interleaving is reproduced by calling commit with
// the tree read before the other process's commit.
func TestCommitRereadsTheBacklogWhenTheBranchMoved(t *testing.T) {
	w := newWorld(t)
	da := w.clone("a")
	a := open(t, da)
	create(t, a, "seed", "C1")
	s1 := syncer(t, a, Options{})
	if _, err := s1.Commit(bg); err != nil {
		t.Fatal(err)
	}
	// Process 1 reads the backlog for its commit; while it does, process
	// 2 appends and commits first. Process 1 must notice the branch moved
	// and read again rather than commit the older backlog on top.
	create(t, a, "seed", "C0") // something for process 1 to commit
	reads := 0
	read := func() (backlogFiles, error) {
		reads++
		stale, err := s1.readFiles(bg, nil)
		if reads == 1 {
			create(t, a, "seed", "C2")
			s2 := syncer(t, a, Options{})
			if res, err := s2.Commit(bg); err != nil || !res.Committed {
				t.Fatal(res, err)
			}
		}
		return stale, err
	}
	if _, _, _, err := s1.commit(read, plumbing.ZeroHash); err != nil {
		t.Fatal(err)
	}
	if reads < 2 {
		t.Fatalf("the backlog was read %d time(s); a moved branch must make commit read it again", reads)
	}
	head, err := s1.g.refHash(s1.branch)
	if err != nil {
		t.Fatal(err)
	}
	tip, err := s1.g.readBacklog(head)
	if err != nil {
		t.Fatal(err)
	}
	ids := treeIDs(t, tip)
	if len(ids) != 3 {
		t.Fatalf("the branch tip holds %d events; the commit before it held 3 (C1, C0, C2 created)", len(ids))
	}
}

// A config edit that was committed (bl sync) but not pushed yet survives
// the next push, although it equals the branch's commit: keeping local
// settings only when they differ from that commit would replace it with
// the remote's older config, on disk and in the pushed merge.
func TestPushKeepsACommittedConfigEdit(t *testing.T) {
	w := newWorld(t)
	da, db := w.clone("a"), w.clone("b")
	a, b := open(t, da), open(t, db)
	create(t, a, "seed", "C1")
	sa := syncer(t, a, Options{Remote: "origin", Actor: "alice"})
	sb := syncer(t, b, Options{Remote: "origin", Actor: "bob"})
	if _, err := sa.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Pull(bg); err != nil {
		t.Fatal(err)
	}
	// Bob edits the config and commits it (bl sync), not pushed yet.
	cfgPath := filepath.Join(db, ".backlog", ledger.ConfigFile)
	old, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(old, []byte(`"version"`), []byte(`"compact_bytes": 12345, "version"`), 1)
	if bytes.Equal(edited, old) {
		t.Fatalf("config has no version key:\n%s", old)
	}
	if err := os.WriteFile(cfgPath, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err := sb.Commit(bg); err != nil || !res.Committed {
		t.Fatal(res, err)
	}
	// Alice pushes an unrelated event; the remote's config is unchanged.
	create(t, a, "alice", "C2")
	if _, err := sa.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	// Bob pushes.
	if _, err := sb.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	now, _ := os.ReadFile(cfgPath)
	if !bytes.Contains(now, []byte("12345")) {
		t.Fatalf("bob's committed config edit was reverted by his push; config.json is now:\n%s", now)
	}
}
