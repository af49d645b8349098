package store

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Links below cache/ that git does not track (outside git nothing is
// tracked, so TrustLocal believes the files): no writer of a local file
// goes through them, a directory link or a file link, and LocalLinks
// names them. See testdata/script/git_tracked_cache_links.txtar for
// links a teammate commits.
func TestLocalWritersRefuseLinks(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	cache := filepath.Join(dir, CacheDir)
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"seen.json", "quarantine.jsonl", "snapshot.vetted", "tracked-local"} {
		if err := os.Symlink(filepath.Join(outside, name), filepath.Join(cache, name)); err != nil {
			t.Fatal(err)
		}
	}
	var lerr *LocalLinkError
	if err := writeSeen(dir, seenRecord{Events: 1, Cursor: "x"}); !errors.As(err, &lerr) || lerr.Link != SeenFile {
		t.Errorf("writeSeen through a link: %v", err)
	}
	if _, err := RecordQuarantine(dir, []Quarantined{{From: "origin/main", Commit: "c", File: LedgerFile, Sum: "s"}}); err != nil {
		t.Errorf("RecordQuarantine: %v", err)
	}
	// The list bl appends to has its link removed, as ledger.jsonl.broken
	// does (clearTeammates), and is written in the cache.
	if fi, err := os.Lstat(filepath.Join(dir, QuarantineFile)); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("quarantine list after the append: %v, %v", fi, err)
	}
	recordVettedSum(dir, []byte{1, 2})
	NoteTrackedLocal(dir, nil)

	// A directory link: cache itself.
	dir2 := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir2, CacheDir)); err != nil {
		t.Fatal(err)
	}
	if err := writeIndex(dir2, snapshotID{}, &IndexBuild{}); !errors.As(err, &lerr) || lerr.Link != CacheDir {
		t.Errorf("writeIndex through a linked cache: %v", err)
	}
	if err := writeSeen(dir2, seenRecord{Events: 1, Cursor: "x"}); !errors.As(err, &lerr) {
		t.Errorf("writeSeen through a linked cache: %v", err)
	}

	if ents, _ := os.ReadDir(outside); len(ents) > 0 {
		t.Errorf("written outside the backlog: %v", ents)
	}
	want := []string{"cache/seen.json", "cache/snapshot.vetted", "cache/tracked-local"}
	if got := LocalLinks(dir); !slices.Equal(got, want) {
		t.Errorf("LocalLinks = %v, want %v", got, want)
	}
	if got := LocalLinks(dir2); !slices.Equal(got, []string{CacheDir}) {
		t.Errorf("LocalLinks of a linked cache = %v", got)
	}
	if done, err := RemoveLocalLinks(dir); err != nil || len(done) != 3 || len(LocalLinks(dir)) != 0 {
		t.Errorf("RemoveLocalLinks = %v, %v; left %v", done, err, LocalLinks(dir))
	}
	if err := CheckLocalPath(dir, SeenFile); err != nil {
		t.Errorf("CheckLocalPath after the repair: %v", err)
	}
}
