package ledger

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestIndexTruncatedWhileHeld: the snapshot index is a local cache file,
// and a user or a tool may empty it in place (": > snapshot.idx", cp over
// it) while a long-running process (bl mcp, bl serve) holds it mapped.
// The handle's reads then fall back to the whole snapshot, as for a
// damaged block: a read of the mapping past the file's new end faults the
// process (SIGBUS) otherwise. Run in a child process, which is what such
// a fault kills.
func TestIndexTruncatedWhileHeld(t *testing.T) {
	if dir := os.Getenv("BL_TEST_INDEX_TRUNCATED"); dir != "" {
		b, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if !isLazy(b) {
			t.Fatal("the index was not used")
		}
		if got, err := b.Get("card-001"); err != nil || got.ID != "card-001" {
			t.Fatalf("get before: %v", err)
		}
		if err := os.Truncate(filepath.Join(dir, CacheDir, IndexFile), 0); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"card-150", "card-299"} {
			if got, err := b.Get(id); err != nil || got.ID != id {
				t.Fatalf("get %s after the index was emptied: %v", id, err)
			}
		}
		return
	}
	e := manyCards(t)
	e.b.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestIndexTruncatedWhileHeld$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BL_TEST_INDEX_TRUNCATED="+e.dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		lines := out
		if len(lines) > 600 {
			lines = lines[:600]
		}
		t.Fatalf("the handle's process failed after its index was emptied in place: %v\n%s", err, lines)
	}
}
