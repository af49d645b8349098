package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/ledger"
)

// Archive segments are written once and never changed, so a sync round
// need not read the ones it has seen: it knows each one's git blob hash.
// The snapshot is replaced whole (by rename) when it changes, so the same
// holds for it between compactions. The local files' hashes are
// remembered in cache/blobs.json (local, like every cache), by name, size
// and modification time as git's index remembers a file's stat data; a
// file whose size or time changed, or whose blob the repository lacks, is
// read and hashed again. The remote's files come with their hashes in its
// tree. A segment (or snapshot) with the same name and hash on both sides
// is shared: not read, not decoded, not hashed for the commit (see
// ledger.Backlog.ApplyUpstreamUnread).

// blobsFile is the cache of segment hashes, inside the backlog directory.
const blobsFile = ledger.CacheDir + "/blobs.json"

type blobEntry struct {
	Size  int64  `json:"size"`
	MTime int64  `json:"mtime"` // unix nanoseconds
	Hash  string `json:"hash"`
}

// segments is the cache of the local segments' blob hashes.
type segments struct {
	mu      sync.Mutex
	loaded  bool
	dirty   bool
	entries map[string]blobEntry
}

// traceRead, when set by a test, is told of every archive segment and
// snapshot this package reads in full: "blob" from git, "file" from the
// backlog directory. (What package ledger reads is proven by poisoning the shared
// segments instead; see TestSyncRoundWorkIsBounded.)
var traceRead func(kind, name string)

func trace(kind, name string) {
	if traceRead != nil {
		traceRead(kind, name)
	}
}

func isSegment(name string) bool { return strings.HasPrefix(name, ledger.ArchiveDir+"/") }

// mayBeUnread reports whether a sync round may leave a file unread when
// both sides hold it with the same blob: the segments, and the snapshot
// (replaced whole, by rename, when it changes).
func mayBeUnread(name string) bool { return isSegment(name) || name == ledger.SnapshotFile }

// segmentBlob returns the blob hash and size of the local segment (or
// snapshot) name, reading and storing it in the repository only when the
// cache does not know it. ok is false when the backlog has no such file.
func (s *Syncer) segmentBlob(name string) (h plumbing.Hash, size int64, ok bool, err error) {
	p := filepath.Join(s.b.Dir(), filepath.FromSlash(name))
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return h, 0, false, nil
	}
	if err != nil {
		return h, 0, false, err
	}
	c := &s.segs
	c.mu.Lock()
	defer c.mu.Unlock()
	c.load(s.b.Dir())
	if e, hit := c.entries[name]; hit && e.Size == fi.Size() && e.MTime == fi.ModTime().UnixNano() {
		if h = plumbing.NewHash(e.Hash); s.g.repo.Storer.HasEncodedObject(h) == nil {
			return h, e.Size, true, nil
		}
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return h, 0, false, err
	}
	trace("file", name)
	if h, err = s.g.storeBlob(data); err != nil {
		return h, 0, false, fmt.Errorf("%s: %w", p, err)
	}
	c.entries[name] = blobEntry{Size: fi.Size(), MTime: fi.ModTime().UnixNano(), Hash: h.String()}
	c.dirty = true
	return h, fi.Size(), true, nil
}

func (c *segments) load(dir string) {
	if c.loaded {
		return
	}
	c.loaded = true
	c.entries = map[string]blobEntry{}
	if data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(blobsFile))); err == nil {
		if json.Unmarshal(data, &c.entries) != nil || c.entries == nil {
			c.entries = map[string]blobEntry{} // a damaged cache is an empty one
		}
	}
}

// saveSegments writes the cache back when it learned something, dropping
// segments the backlog no longer holds. It is only a cache: a failure
// costs a re-read next time.
func (s *Syncer) saveSegments() {
	c := &s.segs
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dirty {
		return
	}
	dir := s.b.Dir()
	for name := range c.entries {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name))); errors.Is(err, fs.ErrNotExist) {
			delete(c.entries, name)
		}
	}
	data, err := json.Marshal(c.entries)
	if err != nil {
		return
	}
	if ledger.CheckLocalPath(dir, blobsFile) != nil {
		return // a link a teammate committed: never written through
	}
	p := filepath.Join(dir, filepath.FromSlash(blobsFile))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".blobs.json.tmp-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), p) != nil {
		os.Remove(tmp.Name())
		return
	}
	c.dirty = false
}

// backlogFiles is the backlog as read for a commit: every tracked file,
// the archive segments unread (nil data) with their blob hashes and sizes.
type backlogFiles struct {
	t     ledger.Tree
	blobs map[string]plumbing.Hash
	sizes map[string]int64
}

// readFiles reads the backlog for a commit under its lock: the segments
// by hash (segmentBlob), the other files whole. check, when set, is given
// the state those files fold to, under the lock.
func (s *Syncer) readFiles(ctx context.Context, check func(*ledger.State) error) (backlogFiles, error) {
	f := backlogFiles{blobs: map[string]plumbing.Hash{}, sizes: map[string]int64{}}
	err := s.b.TreeUnread(ctx, mayBeUnread, func(t ledger.Tree, st *ledger.State) error {
		if check != nil {
			if err := check(st); err != nil {
				return err
			}
		}
		for _, name := range t.Unread() {
			h, size, ok, err := s.segmentBlob(name)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("%s vanished while the backlog lock was held", name)
			}
			f.blobs[name], f.sizes[name] = h, size
		}
		f.t = t
		return nil
	})
	s.saveSegments()
	return f, err
}

// blobLoader reads an unread segment of a commit's tree from git.
func (s *Syncer) blobLoader(hashes map[string]plumbing.Hash) ledger.Loader {
	return func(name string) ([]byte, error) {
		h, ok := hashes[name]
		if !ok {
			return nil, fmt.Errorf("%s: no such file in the commit", name)
		}
		trace("blob", name)
		return s.g.blob(h)
	}
}
