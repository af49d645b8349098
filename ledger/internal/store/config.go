package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	json "github.com/goccy/go-json"
)

// Config is .backlog/config.json. Unknown keys are kept by bl's own
// writers and ignored here, so newer settings do not break older readers.
type Config struct {
	Version int `json:"version"`
	// ID is the backlog's identity, written by bl init and never changed:
	// it names the backlog's lease refs on a git remote, whatever branch
	// a clone is on (package gitsync). A backlog made before bl wrote it
	// has none; its lease refs are then named by its path.
	ID string `json:"id,omitempty"`
	// CompactBytes: once ledger.jsonl grows past this many bytes, the
	// writer that crossed it compacts. 0 means the default, -1 never.
	CompactBytes int64 `json:"compact_bytes,omitempty"`
	// Sync configures bl sync (see package gitsync).
	Sync SyncConfig `json:"sync"`
	// Claims configures bl claim, heartbeat and complete.
	Claims ClaimsConfig `json:"claims"`
	// Hooks is never run: config.json is tracked and a clone must not run
	// code. It is read only so bl can warn that hooks belong in the local
	// hooks.json (package hooks).
	Hooks json.RawMessage `json:"hooks,omitempty"`
	// RetryBackoff is how long a card waits after a failed attempt.
	RetryBackoff RetryBackoff `json:"retry_backoff"`
	// Epics sets how children hold their epic back (epics.go).
	Epics fold.EpicsConfig `json:"epics"`
	// Review configures the review gate (see ReviewConfig).
	Review ReviewConfig `json:"review"`
	// Worktree configures bl run --worktree.
	Worktree WorktreeConfig `json:"worktree"`
}

// RetryBackoff is the "retry_backoff" object of config.json, e.g.
// {"initial":"30s","max":"1h"}: after a fail, or the reclaim of an expired
// lease, the card is not claimable for Initial after its first failed
// attempt, twice that after the second, and so on up to Max. Either left out
// takes its default (DefaultRetryInitial, DefaultRetryMax); "0s" as Initial
// turns the backoff off. Each fail event records the values it used, so
// changing them later does not change the past.
type RetryBackoff struct {
	Initial string `json:"initial,omitempty"`
	Max     string `json:"max,omitempty"`
}

// The retry backoff when config.json sets none.
const (
	DefaultRetryInitial = 30 * time.Second
	DefaultRetryMax     = time.Hour
)

// SyncConfig is the "sync" object of config.json.
type SyncConfig struct {
	// Auto is what every mutating command does afterwards: "off" (or
	// empty), "commit" the backlog, or "push" it to Remote.
	Auto string `json:"auto,omitempty"`
	// Remote is the git remote bl sync exchanges with; "origin" when empty.
	Remote string `json:"remote,omitempty"`
	// Branch is the branch bl sync commits to and exchanges; the checked
	// out branch when empty.
	Branch string `json:"branch,omitempty"`
	// Board names a markdown file in the backlog directory (e.g.
	// "BOARD.md") that bl sync regenerates with the board before every
	// commit, so reviewers see the board change next to the events.
	Board string `json:"board,omitempty"`
}

// CheckBoardName refuses a sync.board that is not a plain markdown file
// name: config.json is tracked, so a teammate wrote it, and the board is
// overwritten at every bl sync. It must be a file name (no directory part)
// ending in .md, not hidden, and never a file bl manages.
func CheckBoardName(name string) error {
	bad := !strings.HasSuffix(name, ".md") || len(name) <= len(".md") ||
		strings.ContainsAny(name, "/\\:") || strings.HasPrefix(name, ".") ||
		strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0
	switch name {
	case LedgerFile, SnapshotFile, ConfigFile, IgnoreFile, AttributesFile, LockFile:
		bad = true
	}
	if bad {
		return wire.Errorf(wire.ErrInvalid, "%s: sync.board %q must be a plain file name ending in .md, such as BOARD.md: bl overwrites it at every sync, so it is never a path nor a file bl manages", ConfigFile, name)
	}
	return nil
}

// ReviewConfig is the "review" object of config.json.
type ReviewConfig struct {
	// Required sends every completion to review (as complete --review).
	Required bool `json:"required,omitempty"`
	// AllowSelf lets whoever sent a card to review approve it.
	AllowSelf bool `json:"allow_self,omitempty"`
}

// WorktreeConfig is the "worktree" object of config.json.
type WorktreeConfig struct {
	// Branch names the branch of a card's worktree; "{id}" stands for
	// the card id. "bl/{id}" when empty.
	Branch string `json:"branch,omitempty"`
}

// ClaimsConfig is the "claims" object of config.json.
type ClaimsConfig struct {
	// Remote, when set, makes claim, heartbeat and complete go through
	// that git remote, as with --remote.
	Remote string `json:"remote,omitempty"`
}

// Config returns the settings read from config.json when the backlog was
// opened, or by the last ReloadConfig that changed them.
func (b *Store) Config() Config {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cfg
}

// DefaultCompactBytes is the least ledger size that triggers compaction
// when config.json sets none. Every call folds the whole ledger tail, while
// it reads the snapshot only as far as it needs; a compaction rewrites the
// whole snapshot. So the default threshold grows with the snapshot, as
// 1/SnapshotShare of its size: a small backlog keeps a tail of a few
// hundred events, and one of 100k cards compacts every thousand or so events
// instead of rewriting 30 MB every few hundred.
const DefaultCompactBytes = 64 << 10

// SnapshotShare sets the default threshold for large snapshots: the
// ledger is compacted once it outgrows 1/SnapshotShare of snapshot.json.
const SnapshotShare = 128

// MaxConfigBytes bounds config.json: bl reads no more. Settings are a few
// hundred bytes; a file of megabytes is a mistake, or a push meant to make
// every bl process that reads it (at each start, and a long-running one at
// each change) read megabytes.
const MaxConfigBytes = 1 << 20

// readConfig reads dir/config.json; a missing file is the default config.
func readConfig(dir string) (Config, error) {
	cfg, _, err := readConfigData(dir)
	return cfg, err
}

// readConfigData is readConfig with the bytes it decoded (nil for a missing
// file).
func readConfigData(dir string) (Config, []byte, error) {
	cfg := Config{Version: 1}
	data, err := fsutil.ReadRegularMax(filepath.Join(dir, ConfigFile), MaxConfigBytes)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, nil, nil
	}
	var special *fsutil.NotRegularError
	if errors.As(err, &special) {
		return cfg, nil, wire.Errorf(wire.ErrInvalid, "%v; config.json must be a file", err)
	}
	var large *fsutil.TooLargeError
	if errors.As(err, &large) {
		return cfg, nil, wire.Errorf(wire.ErrInvalid, "%v; config.json holds settings, a few hundred bytes", err)
	}
	if err != nil {
		return cfg, nil, err
	}
	if err := decodeConfig(data, &cfg); err != nil {
		return cfg, nil, wire.Errorf(wire.ErrInvalid, "%s: %v", filepath.Join(dir, ConfigFile), err)
	}
	return cfg, data, nil
}

// openConfig is the config Open starts from: the caller's reading when
// given, else dir/config.json.
func openConfig(dir string, given *Config) (Config, error) {
	if given != nil {
		return *given, nil
	}
	return readConfig(dir)
}

// compactThreshold is the ledger size that triggers compaction, or 0 for
// never, given the size of the snapshot.
func (c Config) compactThreshold(snapshotBytes int64) int64 {
	switch {
	case c.CompactBytes < 0:
		return 0
	case c.CompactBytes == 0:
		return max(DefaultCompactBytes, snapshotBytes/SnapshotShare)
	}
	return c.CompactBytes
}

// ReadConfig reads the config.json of the backlog in dir without opening
// the backlog; a missing file is the default config.
func ReadConfig(dir string) (Config, error) { return readConfig(dir) }
