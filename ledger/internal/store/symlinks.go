package store

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// LinkError is a file of the backlog that is a symbolic link leading out of
// the backlog directory (or nowhere). bl refuses to follow it: appending to
// it, locking it or creating it would write wherever it points, and reading
// it would show that file's contents as the backlog's. It matches
// ErrCorrupt (exit 6): the backlog is not laid out as bl writes it.
type LinkError struct {
	Path   string // the link, in the backlog directory
	Target string // where it leads, as far as it resolves
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link to %s, outside the backlog directory: bl does not follow it; "+
		"replace the link with the file itself (or point --dir at the real backlog)", e.Path, e.Target)
}

// Unwrap lets errors.Is(err, ErrCorrupt) match.
func (e *LinkError) Unwrap() error { return wire.ErrCorrupt }

// backlogNames are the entries of a backlog directory that bl opens,
// creates or replaces. The files in cache/ are not among them: bl reads
// and writes none of those through a link (bl doctor lists such links,
// --repair removes them), so a link there stops no command.
var backlogNames = []string{LedgerFile, LockFile, ConfigFile, IgnoreFile, SnapshotFile, ArchiveDir, CacheDir, StagingDir}

// CheckLinks refuses a backlog in dir whose files are symbolic links out of
// dir, with a *LinkError. A link to another file inside dir is allowed, and
// dir itself may be a link. Open runs it; so does bl for commands that read
// the files without opening the backlog (doctor).
func CheckLinks(dir string) error {
	var root string
	for _, name := range backlogNames {
		path := filepath.Join(dir, name)
		fi, err := os.Lstat(path)
		if err == nil && name == LedgerFile && fi.IsDir() {
			// git's checkout of a commit holding the ledger as a
			// submodule: named, never "no backlog" (bl init would
			// answer "already initialized").
			return wire.Errorf(wire.ErrCorrupt, "%s is a directory, not the ledger file (a commit holding it as a submodule, checked out?): "+
				"remove the directory and commit the file itself (git rm --cached %s)", path, path)
		}
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		if (name == CacheDir || name == StagingDir) && !TrustLocal(dir, name) {
			// A link a teammate committed in place of a directory local
			// to each clone (tracked_local.go): removed, never followed,
			// so that push stops no clone; bl makes its own directory.
			if err := os.Remove(path); err != nil {
				return err
			}
			continue
		}
		if root == "" {
			if root, err = filepath.EvalSymlinks(dir); err != nil {
				return err
			}
		}
		if err := linkInside(root, path); err != nil {
			return err
		}
	}
	return nil
}

// linkInside is CheckLinks' rule for the link at path: a *LinkError
// unless it leads to an entry inside root (the backlog, links resolved).
func linkInside(root, path string) error {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		// A link to nothing: whatever creates it would create
		// the file it names.
		target, _ = os.Readlink(path)
		return &LinkError{Path: path, Target: target}
	}
	if rel, err := filepath.Rel(root, target); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || rel == "." {
		return &LinkError{Path: path, Target: target}
	}
	return nil
}
