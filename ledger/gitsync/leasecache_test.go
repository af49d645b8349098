package gitsync

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
	"github.com/go-git/go-git/v5/plumbing"
)

// The cache file round-trips, keeps only the tips it is given, and a file
// that is not whole (cut short, a bad hash, a wrong count) is no cache at
// all rather than a partly read one.
func TestLeaseCacheFile(t *testing.T) {
	dir := t.TempDir()
	h1 := plumbing.NewHash(strings.Repeat("1", 40))
	h2 := plumbing.NewHash(strings.Repeat("2", 40))
	h3 := plumbing.NewHash(strings.Repeat("3", 40))
	c := loadLeaseCache(dir)
	read := map[plumbing.Hash][][]byte{
		h1: {[]byte("{\"a\":1}\n"), []byte("{\"b\":2}\n")},
		h2: nil,
		h3: {[]byte("{\"c\":3}\n")},
	}
	for h := range read {
		if _, err := c.get(h, func(h plumbing.Hash) ([][]byte, error) { return read[h], nil }); err != nil {
			t.Fatal(err)
		}
	}
	c.save(map[string]plumbing.Hash{"A": h1, "B": h2}) // h3's ref is gone
	got := loadLeaseCache(dir)
	if len(got.lines) != 2 || !reflect.DeepEqual(got.lines[h1], read[h1]) || !got.has(h2) || got.has(h3) {
		t.Fatalf("read back %q", got.lines)
	}
	data, err := os.ReadFile(filepath.Join(dir, ledger.CacheDir, "leaselines"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		string(data[:len(data)-3]),
		strings.Replace(string(data), strings.Repeat("1", 40), strings.Repeat("x", 40), 1),
		strings.Replace(string(data), h1.String()+" 2", h1.String()+" 3", 1),
		strings.Replace(string(data), h1.String()+" 2 0", h1.String()+" 2 2", 1),
		strings.Replace(string(data), "bl lease lines 4", "bl lease lines 3", 1),
		strings.Replace(string(data), `{"a":1}`, `{"a":2}`, 1),
		string(data) + "\n",
	} {
		if _, _, _, ok := parseLeaseCache([]byte(bad)); ok {
			t.Errorf("parsed a damaged cache:\n%s", bad)
		}
	}
}

// A remote call reads each lease ref commit once: a later call, in a new
// process, takes the lines from the cache and neither opens nor fetches
// the commits again (here they are deleted from the clone's object store
// after the first read, and stay deleted).
func TestLeaseCacheSparesObjectReads(t *testing.T) {
	w := newWorld(t)
	da := w.clone("a")
	a := open(t, da)
	create(t, a, "seed", "C1", "C2", "C3")
	s := syncer(t, a, Options{Remote: "origin", Actor: "alice"})
	if _, err := s.Push(bg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"C1", "C2"} {
		if c, _, err := s.Claim(bg, ledger.ClaimRequest{Mutation: ledger.Mutation{Actor: "alice"}, Owner: "alice", ID: id, TTL: time.Hour}); err != nil || c == nil {
			t.Fatalf("claim %s: %v %v", id, c, err)
		}
	}
	if _, err := syncer(t, a, Options{Remote: "origin", Actor: "alice"}).Pull(bg); err != nil {
		t.Fatal(err)
	}
	cached := loadLeaseCache(a.Dir())
	if len(cached.lines) != 2 {
		t.Fatalf("the cache holds %d tips, want the 2 lease refs'", len(cached.lines))
	}
	cardOf := map[string]string{}
	for card, tip := range s.lv.tips {
		cardOf[tip.String()] = card
	}
	var objects []string
	for tip, lines := range cached.lines {
		want, err := s.leaseLines(cardOf[tip.String()], tip)
		if err != nil || !reflect.DeepEqual(lines, want) {
			t.Fatalf("cached lines of %s differ from the commit's: %q, %q (%v)", tip, lines, want, err)
		}
		h := tip.String()
		obj := filepath.Join(da, ".git", "objects", h[:2], h[2:])
		if err := os.Remove(obj); err != nil {
			t.Fatalf("the lease commit is not a loose object of the clone: %v", err)
		}
		objects = append(objects, obj)
	}
	if _, err := syncer(t, a, Options{Remote: "origin", Actor: "alice"}).Pull(bg); err != nil {
		t.Fatal(err)
	}
	for _, obj := range objects {
		if _, err := os.Stat(obj); err == nil {
			t.Fatalf("a lease commit the cache holds was fetched again: %s", obj)
		}
	}
	if got := cards(t, a); !strings.Contains(got, "C1 claimed alice") || !strings.Contains(got, "C2 claimed alice") {
		t.Fatalf("state:\n%s", got)
	}
	// A write on top of a tip whose commit the clone no longer has: the
	// new tip names it as parent, and the remote has it.
	s2 := syncer(t, a, Options{Remote: "origin", Actor: "alice"})
	var c1 ledger.Card
	_ = a.View(func(st *ledger.State, _ time.Time) error { c1, _ = st.Card("C1"); return nil })
	if _, _, err := s2.Lease(bg, "", func(ctx context.Context, rid string) (ledger.Card, error) {
		return a.Complete(ctx, ledger.LeaseRequest{Mutation: ledger.Mutation{Actor: "alice", RequestID: rid}, ID: "C1", Owner: "alice", Epoch: c1.ClaimEpoch})
	}); err != nil {
		t.Fatalf("complete on a tip the clone lacks: %v", err)
	}
	w.git(w.bare, "fsck", "--no-dangling")
	plain := filepath.Join(w.root, "plain")
	w.git(w.root, "clone", "-q", w.bare, plain)
	if got := cards(t, open(t, plain)); !strings.Contains(got, "C1 done") {
		t.Fatalf("a plain clone after the complete:\n%s", got)
	}
}

// FuzzLeaseCacheFile: any bytes parse without a panic, and what parses
// is written back byte for byte.
func FuzzLeaseCacheFile(f *testing.F) {
	dir := f.TempDir()
	c := loadLeaseCache(dir)
	h := plumbing.NewHash(strings.Repeat("ab", 20))
	_, _ = c.get(h, func(plumbing.Hash) ([][]byte, error) { return [][]byte{[]byte("{\"x\":1}\n")}, nil })
	c.save(map[string]plumbing.Hash{"A": h})
	seed, _ := os.ReadFile(c.path)
	f.Add(seed)
	f.Add([]byte(leaseCacheHeader + "00000000\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, judged, _, ok := parseLeaseCache(data)
		if !ok {
			return
		}
		tips := map[string]plumbing.Hash{}
		for tip := range entries {
			tips[tip.String()] = tip
		}
		d := t.TempDir()
		out := &leaseCache{dir: d, path: filepath.Join(d, filepath.FromSlash(leaseLinesFile)), lines: entries, judged: judged, changed: true}
		out.save(tips)
		back, err := os.ReadFile(out.path)
		if err != nil {
			t.Fatal(err)
		}
		again, judgedAgain, _, ok := parseLeaseCache(back)
		if !ok || !reflect.DeepEqual(again, entries) || !reflect.DeepEqual(judgedAgain, judged) {
			t.Fatalf("%q parsed as %q, written as %q", data, entries, back)
		}
	})
}

// A lease cache that git tracks came with a teammate's push (git replaces
// an ignored file when it checks out a tracked one): its lines are not
// believed, and the file is not written. Untracked, the same file is.
func TestLeaseCacheTrackedIsNotBelieved(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	root := t.TempDir()
	dir := filepath.Join(root, ".backlog")
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	h1 := plumbing.NewHash(strings.Repeat("1", 40))
	c := loadLeaseCache(dir)
	if _, err := c.get(h1, func(plumbing.Hash) ([][]byte, error) { return [][]byte{[]byte("{\"forged\":1}\n")}, nil }); err != nil {
		t.Fatal(err)
	}
	c.save(map[string]plumbing.Hash{"A": h1})
	if !loadLeaseCache(dir).has(h1) {
		t.Fatal("an untracked cache was not read back")
	}
	git("add", "-f", ".backlog/cache/leaselines")
	got := loadLeaseCache(dir)
	if got.has(h1) || got.path != "" {
		t.Fatalf("a tracked cache was believed: %q", got.lines)
	}
	before, _ := os.ReadFile(filepath.Join(dir, ledger.CacheDir, "leaselines"))
	got.changed = true
	got.save(map[string]plumbing.Hash{})
	if after, _ := os.ReadFile(filepath.Join(dir, ledger.CacheDir, "leaselines")); string(after) != string(before) {
		t.Fatal("a tracked cache was written")
	}
}
