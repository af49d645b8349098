package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/gitdir"
	"github.com/bl-backlog/bl/ledger"
)

// diffRepo50k is a git repository whose backlog holds about 50,000
// events of history compacted into an archive segment and a snapshot
// (5,000 cards), committed, then one more card committed: the two sides
// of bl diff HEAD~1 HEAD, as the paired bench builds them.
func diffRepo50k(tb testing.TB) (repo, dir string) { return diffRepo(tb, 5_000, 50_000) }

// diffRepo is diffRepo50k with cards cards and events events of history.
func diffRepo(tb testing.TB, cards, events int) (repo, dir string) {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		tb.Skip("git not found")
	}
	repo = tb.TempDir()
	dir = filepath.Join(repo, ".backlog")
	git := func(args ...string) {
		tb.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.com",
			"GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	if _, err := ledger.Init(dir); err != nil {
		tb.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, ledger.LedgerFile))
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriter(f)
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	n := 0
	emit := func(e *ledger.Event) {
		at = at.Add(time.Microsecond)
		n++
		e.V, e.At, e.ID, e.Actor = 1, at, fmt.Sprintf("%016x", n), "bench"
		line, err := ledger.EncodeLine(e)
		if err != nil {
			tb.Fatal(err)
		}
		w.Write(line)
	}
	for i := range cards {
		t, p := "card number "+strconv.Itoa(i), i%10
		emit(&ledger.Event{Op: ledger.OpCreate, Card: fmt.Sprintf("P%06d", i), Fields: &ledger.Fields{Title: &t, Priority: &p}})
	}
	ver := make([]int64, cards)
	for i := 0; n < events; i++ {
		c, id := i%cards, fmt.Sprintf("P%06d", i%cards)
		ep := int64(i/cards + 1)
		emit(&ledger.Event{Op: ledger.OpClaim, Card: id, Owner: "w", TTLSeconds: 60, ExpectVersion: ver[c] + 1, Epoch: ep})
		emit(&ledger.Event{Op: ledger.OpHeartbeat, Card: id, Owner: "w", Epoch: ep})
		emit(&ledger.Event{Op: ledger.OpRelease, Card: id, Owner: "w", Epoch: ep})
		ver[c] += 3
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	f.Close()
	b, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	if _, err := b.Compact(ctx); err != nil {
		tb.Fatal(err)
	}
	m := ledger.Mutation{Actor: "bench"}
	for i := range min(200, cards) { // a ledger of recent events on top of the snapshot
		id := fmt.Sprintf("P%06d", i)
		c, err := b.Claim(ctx, ledger.ClaimRequest{Mutation: m, ID: id, Owner: "settle", TTL: time.Hour})
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := b.Release(ctx, ledger.LeaseRequest{Mutation: m, ID: id, Owner: "settle", Epoch: c.ClaimEpoch}); err != nil {
			tb.Fatal(err)
		}
	}
	git("add", "-A")
	git("commit", "-q", "-m", "history")
	if _, _, err := b.Create(ctx, ledger.CreateRequest{Mutation: m, Title: "one more card"}); err != nil {
		tb.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "one more card")
	return repo, dir
}

// TestDiffPairReadsWhatDiffers: for adjacent commits the lean bl's read
// asks git for the commits, the trees and the two ledgers, never for the
// archive segment both hold nor for the snapshot the backlog directory
// holds too, and the comparison needs nothing more from git.
func TestDiffPairReadsWhatDiffers(t *testing.T) {
	repo, dir := diffRepo(t, 50, 600)
	objs, err := gitdir.OpenObjects(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	defer objs.Close()
	var names []string
	objs.Read = func(name string) { names = append(names, name) }
	p, err := readBacklogPair(objs, dir, "HEAD~1", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	segs := 0
	for name, data := range p.trees[0] {
		if isSegmentName(name) {
			segs++
			if data != nil || p.trees[1][name] != nil {
				t.Errorf("%s was read, though both commits hold it", name)
			}
		}
	}
	if segs == 0 {
		t.Fatal("the history was not compacted into a segment")
	}
	// The snapshot both commits hold is the backlog directory's: left
	// to the fold to read lazily from the file.
	if p.onSnapshot == nil || p.trees[0][ledger.SnapshotFile] != nil || p.trees[1][ledger.SnapshotFile] != nil {
		t.Error("the snapshot was read from git, though the backlog directory holds the same file")
	}
	// Besides the 2 commits: 2 root trees, 2 backlog trees, 1 archive
	// tree, 2 ledgers, the 3 small files (the same blobs: read once).
	blobs := 0
	for _, n := range names {
		if !strings.Contains(n, "^{commit}") {
			blobs++
		}
	}
	if blobs > 2+2+1+2+3 {
		t.Errorf("read %d objects: %q", blobs, names)
	}
	loads := [2]ledger.Loader{}
	for i := range loads {
		loads[i] = func(name string) ([]byte, error) {
			t.Errorf("the comparison read %s", name)
			return p.loads[i](name)
		}
	}
	d, err := ledger.DiffOnSnapshot(p.trees[0], p.trees[1], loads[0], loads[1], dir)
	if err != nil || d.EventsAdded != 1 || len(d.Cards) != 1 || d.Cards[0].Change != "created" {
		t.Fatalf("diff = %+v, %v", d, err)
	}
}

// BenchmarkDiffAdjacent50k is the lean bl's bl diff HEAD~1 HEAD at 50,000
// events of history, in process (read is the commits through git
// cat-file, diff the comparison too), next to the whole git diff HEAD~1
// HEAD process it is held against (≤ 2×, see docs/PERFORMANCE.md).
func BenchmarkDiffAdjacent50k(b *testing.B) {
	repo, dir := diffRepo50k(b)
	ctx := context.Background()
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			objs, err := gitdir.OpenObjects(ctx, repo)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := readBacklogPair(objs, dir, "HEAD~1", "HEAD"); err != nil {
				b.Fatal(err)
			}
			objs.Close()
		}
	})
	b.Run("diff", func(b *testing.B) {
		for b.Loop() {
			d, _, _, err := diffPairFast(ctx, dir, "HEAD~1", "HEAD")
			if err != nil || d.EventsAdded != 1 {
				b.Fatalf("diff: %+v, %v", d, err)
			}
		}
	})
	b.Run("git-diff", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("git", "diff", "HEAD~1", "HEAD")
			cmd.Dir = repo
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDiffPairSnapshotFromIndex: when git's index holds the snapshot file
// with the stat it has now (not racily), its blob id is the index's: the
// file is not hashed. Where attributes convert the file (eol=crlf), the
// index's id is the stored blob's, not the file's: the sizes differ, the
// file is hashed, and the snapshot is read from git.
func TestDiffPairSnapshotFromIndex(t *testing.T) {
	repo, dir := diffRepo(t, 50, 600)
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	snap := filepath.Join(dir, ledger.SnapshotFile)
	rel := ".backlog/" + ledger.SnapshotFile
	restage := func() { // the stat as it is now, an hour after the file's mtime
		t.Helper()
		past := time.Now().Add(-time.Hour)
		if err := os.Chtimes(snap, past, past); err != nil {
			t.Fatal(err)
		}
		git("rm", "-q", "--cached", rel)
		git("add", rel)
	}
	restage()
	read := func() *backlogPair {
		t.Helper()
		objs, err := gitdir.OpenObjects(context.Background(), repo)
		if err != nil {
			t.Fatal(err)
		}
		defer objs.Close()
		p, err := readBacklogPair(objs, dir, "HEAD~1", "HEAD")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	hashed := 0
	defer func(h func(string, string, string) (os.FileInfo, bool)) { hashWorking = h }(hashWorking)
	hashWorking = func(dir, name, id string) (os.FileInfo, bool) {
		hashed++
		return workingBlob(dir, name, id)
	}
	if p := read(); p.onSnapshot == nil || hashed != 0 {
		t.Fatalf("onSnapshot %v, hashed %d times: the index's stat data were not used", p.onSnapshot != nil, hashed)
	}

	if err := os.WriteFile(filepath.Join(repo, ".git", "info", "attributes"), []byte("snapshot.json text eol=crlf\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(snap); err != nil {
		t.Fatal(err)
	}
	git("checkout", "--", rel)
	restage()
	if id, _, ok := gitdir.IndexBlobID(repo, rel); !ok || id == "" {
		t.Fatal("the converted file's entry was not taken from the index")
	}
	if p := read(); p.onSnapshot != nil || hashed != 1 {
		t.Errorf("onSnapshot %v, hashed %d times: a converted file was taken for the blob", p.onSnapshot != nil, hashed)
	}
}

// TestDiffPairInProcess: the lean bl reads the pair's objects itself,
// loose or packed: with no git on PATH the diff is still answered, and
// equals the one read through git cat-file.
func TestDiffPairInProcess(t *testing.T) {
	repo, dir := diffRepo(t, 50, 600)
	want, _, _, err := diffPairFast(context.Background(), dir, "HEAD~1", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	same := func(a, b *ledger.BacklogDiff) bool {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		return string(ja) == string(jb)
	}
	objs, err := gitdir.OpenObjects(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	viaGit, _, _, err := diffPairWith(objs, dir, "HEAD~1", "HEAD")
	objs.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !same(want, viaGit) {
		t.Fatalf("in process %+v, through git %+v", want, viaGit)
	}
	path := os.Getenv("PATH")
	for _, packed := range []bool{false, true} {
		if packed {
			cmd := exec.Command("git", "gc", "-q", "--aggressive")
			cmd.Dir = repo
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git gc: %v\n%s", err, out)
			}
		}
		t.Setenv("PATH", t.TempDir())
		d, _, commits, err := diffPairFast(context.Background(), dir, "HEAD~1", "main")
		if err != nil || commits[0] == "" || !same(d, want) {
			t.Errorf("packed %v, no git: %+v, %v", packed, d, err)
		}
		t.Setenv("PATH", path)
	}
}
