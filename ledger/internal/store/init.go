package store

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/ledger/internal/wire"
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
hooks.json
arbiter.json
# in-flight multi-file changes and temp files, gone once they finish
.staging/
.*.tmp-*
`

// gitattributes makes every clone's git merge the event files by keeping
// the lines of both sides (git's built-in union driver), never with
// conflict markers; bl settles order and duplicates when it reads. -text
// keeps the bytes git stores in every checkout. See "Git" in doc.go.
const gitattributes = `# bl: git keeps the lines of both sides when it merges these files; bl
# settles their order and duplicates when it reads them (bl help init)
ledger.jsonl merge=union -text
archive/*.jsonl merge=union -text
snapshot.json merge=union -text
*.md merge=union -text
`

// newConfig is the config.json of a new backlog: DefaultConfig with a
// fresh identity (Config.ID).
func newConfig() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return strings.Replace(DefaultConfig, "\n}", ",\n  \"id\": \""+hex.EncodeToString(b[:])+"\"\n}", 1)
}

// InitConfig reports whether data is a config.json as bl init writes it:
// DefaultConfig, with an identity or without.
func InitConfig(data []byte) bool {
	if string(data) == DefaultConfig {
		return true
	}
	id := ConfigID(data)
	return id != "" && string(data) == strings.Replace(DefaultConfig, "\n}", ",\n  \"id\": \""+id+"\"\n}", 1)
}

// ConfigID is the identity a config.json's data holds, "" for none (or
// for data that does not read).
func ConfigID(data []byte) string {
	var c struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(data, &c) != nil {
		return ""
	}
	return c.ID
}

// configIDKey finds a config.json's "id" member.
// Compiled on first use: every bl process links this package.
var configIDKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"id"\s*:\s*"[^"\\]*"`) })

// SetConfigID returns config.json data with the identity id, the rest of
// its bytes unchanged: a backlog's identity is its remote's, whatever a
// local edit of the file says (package gitsync).
func SetConfigID(data []byte, id string) []byte {
	switch ConfigID(data) {
	case id:
		return data
	case "":
		i := bytes.IndexByte(data, '{')
		if i < 0 {
			return data
		}
		sep := ","
		if rest := bytes.TrimSpace(data[i+1:]); len(rest) > 0 && rest[0] == '}' {
			sep = ""
		}
		out := append(slices.Clip(data[:i+1]), []byte("\n  \"id\": \""+id+"\""+sep)...)
		return append(out, data[i+1:]...)
	}
	loc := configIDKey().FindIndex(data)
	if loc == nil {
		return data
	}
	out := append(slices.Clip(data[:loc[0]]), []byte("\"id\": \""+id+"\"")...)
	return append(out, data[loc[1]:]...)
}

// Gitattributes is the content bl init gives .backlog/.gitattributes.
const Gitattributes = gitattributes

// InitContent returns what Init writes into the named file of a new
// backlog (config.json, .gitignore, .gitattributes), and whether Init
// writes that file with content.
func InitContent(name string) ([]byte, bool) {
	switch name {
	case ConfigFile:
		return []byte(DefaultConfig), true
	case IgnoreFile:
		return []byte(gitignore), true
	case AttributesFile:
		return []byte(gitattributes), true
	}
	return nil, false
}

// Init creates a backlog in dir (created if missing): an empty ledger,
// config.json, .gitignore, .gitattributes and the lock file. Files that exist are kept, so
// Init on an existing backlog only fills in what is missing; created reports
// whether the ledger was new. A directory that holds anything else and no
// backlog is refused with ErrInvalid, and files that are links out of dir
// with a *LinkError: Init writes only into a backlog.
func Init(dir string) (created bool, err error) {
	if err := initTarget(dir); err != nil {
		return false, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	if err := CheckLinks(dir); err != nil {
		return false, err
	}
	files := []struct {
		name, content string
	}{{ConfigFile, newConfig()}, {IgnoreFile, gitignore}, {AttributesFile, gitattributes}, {LockFile, ""}, {LedgerFile, ""}}
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
	return created, fsutil.SyncDir(dir)
}

// initTarget refuses to make a backlog of a directory that holds other
// things: dir must be missing, empty, a backlog already (it has a ledger or
// a snapshot), or hold only files bl itself writes there.
func initTarget(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("init %s: %w", dir, err)
	}
	var foreign []string
	for _, e := range entries {
		switch name := e.Name(); name {
		case LedgerFile, SnapshotFile:
			return nil
		case ConfigFile, IgnoreFile, AttributesFile, LockFile, ArchiveDir, CacheDir, StagingDir:
		default:
			foreign = append(foreign, name)
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	more := ""
	if len(foreign) > 1 {
		more = fmt.Sprintf(" and %d more", len(foreign)-1)
	}
	return wire.Errorf(wire.ErrInvalid, "%s is not empty (it holds %s%s) and is not a backlog (no %s): bl init writes only into a new or empty directory or an existing backlog; "+
		"name a new directory, such as %s", dir, foreign[0], more, LedgerFile, filepath.Join(dir, ".backlog"))
}
