package store

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	json "github.com/goccy/go-json"
)

// writeTree makes the backlog directory dir hold tree next instead of
// prev, through the journal (see "Journal" in doc.go): every changed file
// staged, then the manifest that decides the change, then RollForward.
// The caller holds the lock. A failure before the manifest is in place (a
// full disk) removes what was staged and leaves the old backlog.
func writeTree(dir string, prev, next Tree) (err error) {
	staging := filepath.Join(dir, StagingDir)
	defer func() {
		if err != nil && !pendingJournal(dir) {
			_ = os.RemoveAll(staging)
		}
	}()
	if err := os.RemoveAll(staging); err != nil {
		return err
	}
	var m manifest
	for name, data := range next {
		if old, had := prev[name]; had && bytes.Equal(old, data) {
			continue
		}
		path := filepath.Join(staging, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := ReplaceAtomic(path, data, nil); err != nil {
			return err
		}
		m.Write = append(m.Write, name)
	}
	for name := range prev {
		if _, keep := next[name]; !keep && (name == SnapshotFile || strings.HasPrefix(name, ArchiveDir+"/")) {
			m.Remove = append(m.Remove, name)
		}
	}
	if len(m.Write) == 0 && len(m.Remove) == 0 {
		return os.RemoveAll(staging)
	}
	// Archives before the snapshot before the ledger, as in compaction.
	slices.SortFunc(m.Write, func(a, c string) int { return cmp.Compare(writeRank(a), writeRank(c)) })
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := fsutil.SyncDir(filepath.Join(staging, ArchiveDir)); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := ReplaceAtomic(filepath.Join(staging, ManifestFile), data, nil); err != nil {
		return err
	}
	// The manifest now in place is this clone's: writeTree removed the
	// staging directory (a tracked journal with it) before staging.
	return rollForward(dir, true)
}

const (
	StagingDir   = ".staging"
	ManifestFile = "MANIFEST"
)

// manifest lists what a journaled tree change writes and removes.
type manifest struct {
	Write  []string `json:"write"`
	Remove []string `json:"remove"`
}

func writeRank(name string) string {
	switch {
	case strings.HasPrefix(name, ArchiveDir+"/"):
		return "0" + name
	case name == SnapshotFile:
		return "2"
	case name == LedgerFile:
		return "3"
	}
	return "1" + name
}

// RollForward finishes a journaled tree change if one was decided: it
// copies the staged files into place (each atomically), removes what the
// manifest says, and drops the staging directory. Running it again after a
// crash midway does the same thing, so it is safe to repeat. The caller
// holds the lock.
func RollForward(dir string) error { return rollForward(dir, false) }

// rollForward is RollForward; own says the manifest is the one this
// process just wrote, to be finished even while git still tracks the
// teammate's it replaced (else the change would be left staged, and a
// sync would commit the tree without it).
func rollForward(dir string, own bool) error {
	staging := filepath.Join(dir, StagingDir)
	data, err := os.ReadFile(filepath.Join(staging, ManifestFile))
	if os.IsNotExist(err) {
		return removeStaging(staging) // undecided: the old backlog stands
	}
	if err != nil {
		return err
	}
	if !own {
		tracked, err := trackedLocal(dir, StagingDir+"/"+ManifestFile)
		if err != nil {
			// Most likely this clone's own change, cut short: leave it
			// staged, and write nothing over it, until git can say.
			return fmt.Errorf("a change journaled in %s is not finished: could not tell whether git tracks it (%v); run the command again once git answers", staging, err)
		}
		if tracked {
			// A teammate force-added it (tracked_local.go): not a change
			// this clone decided, so nothing is written or removed by it.
			return nil
		}
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return wire.Errorf(wire.ErrCorrupt, "%s: %v", filepath.Join(staging, ManifestFile), err)
	}
	// bl journals only files of the backlog's tree: a name outside it (a
	// path through a link, "..") would write or remove wherever it leads.
	for _, name := range append(slices.Clone(m.Write), m.Remove...) {
		if !Tracked(name) || !filepath.IsLocal(filepath.FromSlash(name)) {
			return wire.Errorf(wire.ErrCorrupt, "%s names %q, not a file of the backlog: bl did not write it; delete %s",
				filepath.Join(staging, ManifestFile), printable(name), staging)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, ArchiveDir), 0o755); err != nil {
		return err
	}
	for _, name := range m.Write {
		src := filepath.Join(staging, filepath.FromSlash(name))
		content, err := os.ReadFile(src)
		if os.IsNotExist(err) {
			continue // moved into place before a crash
		}
		if err != nil {
			return err
		}
		if err := ReplaceAtomic(filepath.Join(dir, filepath.FromSlash(name)), content, nil); err != nil {
			return err
		}
		if err := os.Remove(src); err != nil {
			return err
		}
	}
	for _, name := range m.Remove {
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(name))); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := fsutil.SyncDir(dir); err != nil {
		return err
	}
	return removeStaging(staging)
}

// removeStaging drops the staging directory. One already gone, or going
// while it is read, is what was wanted: a writer whose lock file was
// deleted under it may be finishing the same change (see lock's doc).
func removeStaging(staging string) error {
	if err := os.RemoveAll(staging); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// pendingJournal reports whether a decided tree change waits to be
// finished.
func pendingJournal(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, StagingDir, ManifestFile))
	return err == nil
}
