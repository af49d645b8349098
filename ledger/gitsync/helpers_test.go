package gitsync

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// world is a bare remote and clones of it, made with the system git.
type world struct {
	t    *testing.T
	root string
	bare string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	root := t.TempDir()
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	w := &world{t: t, root: root, bare: filepath.Join(root, "remote.git")}
	w.git(root, "config", "--global", "user.name", "tester")
	w.git(root, "config", "--global", "user.email", "tester@example.com")
	w.git(root, "config", "--global", "init.defaultBranch", "main")
	w.git(root, "init", "-q", "--bare", w.bare)
	return w
}

func (w *world) git(dir string, args ...string) string {
	w.t.Helper()
	out, err := w.tryGit(dir, args...)
	if err != nil {
		w.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (w *world) tryGit(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// clone makes a clone with a backlog (bl init) and returns its directory.
func (w *world) clone(name string) string {
	w.t.Helper()
	dir := filepath.Join(w.root, name)
	w.git(w.root, "clone", "-q", w.bare, dir)
	if _, err := ledger.Init(filepath.Join(dir, ".backlog")); err != nil {
		w.t.Fatal(err)
	}
	return dir
}

func open(t *testing.T, dir string) *ledger.Backlog {
	t.Helper()
	b, err := ledger.Open(filepath.Join(dir, ".backlog"), ledger.Options{LockTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func syncer(t *testing.T, b *ledger.Backlog, o Options) *Syncer {
	t.Helper()
	if o.Actor == "" {
		o.Actor = "tester"
	}
	s, err := New(b, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func create(t *testing.T, b *ledger.Backlog, actor string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, _, err := b.Create(context.Background(), ledger.CreateRequest{Mutation: ledger.Mutation{Actor: actor}, ID: id, Title: "card " + id}); err != nil {
			t.Fatal(err)
		}
	}
}

// eventIDs is every event id of the backlog's files, failing on a
// duplicate.
func eventIDs(t *testing.T, b *ledger.Backlog) []string {
	t.Helper()
	tr, err := b.Tree(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return treeIDs(t, tr)
}

func treeIDs(t *testing.T, tr ledger.Tree) []string {
	t.Helper()
	// Count lines, not Events (which deduplicates), so a duplicate shows.
	var ids []string
	for name, data := range tr {
		if name != ledger.LedgerFile && !strings.HasPrefix(name, ledger.ArchiveDir+"/") {
			continue
		}
		for _, line := range strings.SplitAfter(string(data), "\n") {
			if line == "" {
				continue
			}
			e, err := ledger.DecodeLine([]byte(line))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			ids = append(ids, e.ID)
		}
	}
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			t.Fatalf("event %s appears twice", ids[i])
		}
	}
	return ids
}

// cards lists the backlog's cards as "id status owner#epoch" lines.
func cards(t *testing.T, b *ledger.Backlog) string {
	t.Helper()
	list, err := b.List(ledger.Filter{}, "id")
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, c := range list {
		fmt.Fprintf(&sb, "%s %s %s#%d v%d\n", c.ID, c.Status, c.ClaimOwner, c.ClaimEpoch, c.Version)
	}
	return sb.String()
}
