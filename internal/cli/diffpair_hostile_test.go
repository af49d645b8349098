package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// treeLineObjects serves one commit whose tree line is a revision, and
// records every name asked for.
type treeLineObjects struct{ asked []string }

func (o *treeLineObjects) Get(name string) (string, string, []byte, error) {
	o.asked = append(o.asked, name)
	if strings.HasSuffix(name, "^{commit}") {
		return strings.Repeat("a", 40), "commit", []byte("tree HEAD~1^{tree}\n\nx\n"), nil
	}
	return "", "", nil, errors.New("not here")
}

func (o *treeLineObjects) Info(name string) (string, string, int64, error) {
	return "", "", 0, errors.New("not here")
}

// TestDiffPairTreeLineNotARevision: a commit whose tree line is not an
// object id is declined (left to bl-git, which refuses it), never asked
// of git cat-file, which would resolve it as a revision.
func TestDiffPairTreeLineNotARevision(t *testing.T) {
	root := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", root).CombinedOutput(); err != nil {
		t.Skipf("git init: %v %s", err, out)
	}
	dir := filepath.Join(root, ".backlog")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	o := &treeLineObjects{}
	if _, err := readBacklogPair(o, dir, "A", "B"); err == nil {
		t.Fatal("a commit with tree HEAD~1^{tree} was read")
	}
	for _, name := range o.asked {
		if strings.Contains(name, "HEAD~1") {
			t.Errorf("asked for %q", name)
		}
	}
}
