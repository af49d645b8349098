package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// DefaultConfig is the config.json a new backlog starts with.
const DefaultConfig = `{
  "version": 1
}
`

// gitignore keeps machine-local files out of git: the lock, torn tails set
// aside by recovery, and caches.
const gitignore = `# bl: local files, never committed
lock
*.broken
cache/
# in-flight multi-file changes and temp files, gone once they finish
.staging/
.*.tmp-*
`

// Init creates a backlog in dir (created if missing): an empty ledger,
// config.json, .gitignore and the lock file. Files that exist are kept, so
// Init on an existing backlog only fills in what is missing; created reports
// whether the ledger was new.
func Init(dir string) (created bool, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	files := []struct {
		name, content string
	}{{ConfigFile, DefaultConfig}, {IgnoreFile, gitignore}, {LockFile, ""}, {LedgerFile, ""}}
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("init %s: %w", path, err)
		}
		if _, err := fh.WriteString(f.content); err != nil {
			fh.Close()
			return false, fmt.Errorf("init %s: %w", path, err)
		}
		if err := fh.Sync(); err != nil {
			fh.Close()
			return false, err
		}
		if err := fh.Close(); err != nil {
			return false, err
		}
		if f.name == LedgerFile {
			created = true
		}
	}
	return created, syncDir(dir)
}
