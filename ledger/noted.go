package ledger

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/store"
)

// A NotedHeartbeat is a heartbeat an agent made that this clone answered
// without writing it (through a git remote, one within half a TTL of the
// last pushed one is not pushed on its own). The next push through the
// remote may carry it (gitsync), timed when it was made, so it is never
// more liveness than the agent showed.
type NotedHeartbeat struct {
	Card, Owner, Actor string
	Epoch              int64
	At                 time.Time
}

// notedDir holds one file per card: its newest noted heartbeat.
const notedDir = "heartbeats"

// NoteHeartbeat records h in the backlog's cache (local, ignored), in
// place of the card's older one; a failure to write costs only a push
// that carries nothing.
func (b *Backlog) NoteHeartbeat(h NotedHeartbeat) error {
	dir := filepath.Join(b.Dir(), CacheDir, notedDir)
	if err := store.CheckLocalPath(b.Dir(), notedPath(h)); err != nil {
		return err // a link a teammate committed: never written through
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, name := notedFile(dir, h)
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// NotedHeartbeats returns the heartbeats noted in the backlog's cache; a
// file that does not read as one is skipped.
func (b *Backlog) NotedHeartbeats() []NotedHeartbeat {
	dir := filepath.Join(b.Dir(), CacheDir, notedDir)
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		return nil
	}
	// A note git tracks is a teammate's, not a heartbeat an agent made
	// here: never carried.
	tracked, _ := store.TrackedLocal(b.Dir())
	var out []NotedHeartbeat
	for _, e := range ents {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") || slices.Contains(tracked, CacheDir+"/"+notedDir+"/"+e.Name()) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		f := strings.Split(string(data), "\n")
		if len(f) != 6 || f[5] != "" || hex.EncodeToString([]byte(f[0])) != e.Name() {
			continue
		}
		epoch, err1 := strconv.ParseInt(f[3], 10, 64)
		at, err2 := time.Parse(time.RFC3339Nano, f[4])
		if err1 != nil || err2 != nil || f[1] == "" {
			continue
		}
		out = append(out, NotedHeartbeat{Card: f[0], Owner: f[1], Actor: f[2], Epoch: epoch, At: at})
	}
	return out
}

// ForgetHeartbeat removes h from the cache, unless the card's note is
// another one by now.
func (b *Backlog) ForgetHeartbeat(h NotedHeartbeat) {
	if store.CheckLocalPath(b.Dir(), notedPath(h)) != nil {
		return // removed through a link, it could be a file elsewhere
	}
	data, name := notedFile(filepath.Join(b.Dir(), CacheDir, notedDir), h)
	if got, err := os.ReadFile(name); err == nil && string(got) == data {
		_ = os.Remove(name)
	}
}

// notedPath is h's note, relative to the backlog.
func notedPath(h NotedHeartbeat) string {
	return CacheDir + "/" + notedDir + "/" + hex.EncodeToString([]byte(h.Card))
}

// notedFile is the file of h's card in dir and the content that notes h.
func notedFile(dir string, h NotedHeartbeat) (data, name string) {
	data = fmt.Sprintf("%s\n%s\n%s\n%d\n%s\n", h.Card, h.Owner, h.Actor, h.Epoch, h.At.UTC().Format(time.RFC3339Nano))
	return data, filepath.Join(dir, hex.EncodeToString([]byte(h.Card)))
}
