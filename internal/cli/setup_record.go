package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/lock"
)

// bl setup remembers what each file it changes held before it (or that
// there was none) and the hash of what it wrote, in the user's own
// configuration (~/.config/bl/setup.json; never in the repository). The
// edit of a settings file can be undone byte for byte except where
// removing bl's entry leaves nothing: "{}", "{\n}\n" and a file setup made
// all read as the same empty object, and only this record tells them
// apart. So --remove gives back the bytes a file held before setup while
// it is as setup left it, and never deletes a file that was there before
// setup.

// setupRecordFile is the record's path under the configuration directory.
const setupRecordFile = "bl/setup.json"

// setupRecord is the record: by absolute path, the file before setup.
type setupRecord struct {
	path  string
	lock  *lock.File             // held from the read to the write: setups in two repositories at once
	Files map[string]setupBefore `json:"files"`
}

type setupBefore struct {
	Existed bool `json:"existed"`
	// Before is what the file held before setup, nil when not known (the
	// file changed after setup wrote it, and setup ran again).
	Before *string `json:"before,omitempty"`
	After  string  `json:"after"` // the sha256 of what setup wrote
}

// loadSetupRecord reads the record, or starts an empty one; its path is ""
// when there is no configuration directory (no HOME).
func loadSetupRecord(a *App) *setupRecord {
	r := &setupRecord{Files: map[string]setupBefore{}}
	dir := a.getenv("XDG_CONFIG_HOME")
	if dir == "" {
		if home := a.getenv("HOME"); home != "" {
			dir = filepath.Join(home, ".config")
		}
	}
	if dir == "" || !filepath.IsAbs(dir) {
		return r
	}
	r.path = filepath.Join(dir, filepath.FromSlash(setupRecordFile))
	// Each run reads the record, adds to it and replaces it: without the
	// lock, one run would write another's entries away. Where it cannot
	// be taken (a read-only HOME) the record cannot be written either
	// (save warns).
	if os.MkdirAll(filepath.Dir(r.path), 0o700) == nil {
		l := lock.New(r.path + ".lock")
		if l.Acquire(a.ctx, a.LockTimeout) == nil {
			r.lock = l
		}
	}
	if data, err := os.ReadFile(r.path); err == nil {
		if json.Unmarshal(data, r) != nil || r.Files == nil {
			r.Files = map[string]setupBefore{} // a damaged record is an empty one
		}
	}
	return r
}

// unlock releases the record's lock, if held.
func (r *setupRecord) unlock() {
	if r.lock != nil {
		_ = r.lock.Release()
	}
}

func (r *setupRecord) save() error {
	if r.path == "" {
		return nil
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(r.path), 0o700); err != nil {
		return err
	}
	return fsutil.ReplaceFile(r.path, append(data, '\n'), nil)
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// settle records what setup is about to write to w's file, or (remove)
// turns w into giving the file back as it was before setup.
func (r *setupRecord) settle(w *setupWrite, remove bool) {
	e, known := r.Files[w.path]
	if !remove {
		if w.same {
			return
		}
		if !known || !w.existed || sha(w.old) != e.After {
			// First setup, or the file changed since setup wrote it:
			// what was there before setup is what is there now, unless
			// an earlier setup's entry may be in it.
			before := string(w.old)
			e = setupBefore{Existed: w.existed, Before: &before}
			if known && w.existed {
				e.Before = nil
			}
		}
		e.After = sha(w.data)
		r.Files[w.path] = e
		return
	}
	if !known {
		return // setup by an older bl: its edit is taken out
	}
	delete(r.Files, w.path)
	if w.data != nil || !e.Existed || !w.existed {
		// bl's entry taken out leaves the rest byte for byte, or setup
		// made the file: the edit's undoing stands.
		return
	}
	// Nothing is left but an empty object, in a file that was there
	// before setup: it stays, with the bytes it held then while it is as
	// setup left it (and they held nothing of an older bl's), else empty.
	w.data = []byte{}
	if filepath.Ext(w.path) == ".json" {
		w.data = []byte("{}\n")
	}
	if e.Before != nil && sha(w.old) == e.After {
		if back, err := w.change([]byte(*e.Before), true); err == nil && (back == nil || string(back) == *e.Before) {
			w.data = append([]byte{}, *e.Before...) // never nil: nil removes
		}
	}
	w.same = string(w.old) == string(w.data)
}
