package gitsync

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"

	"github.com/bl-backlog/bl/ledger"
	"github.com/go-git/go-git/v5/plumbing"
)

// leaseCache holds the ledger lines of the lease ref commits this clone
// has read, by commit. Every remote call reads the tips of all the
// remote's lease refs, one ref per card ever leased through it; without
// the cache each call would look up and open one object per ref (at 5,000
// refs that is most of a second). A commit's message never changes, so an
// entry never goes stale: the cache can only be missing entries, never
// wrong ones. It lives in the backlog's cache directory (local, ignored),
// keeps the entries of the tips last seen, and a file that does not parse
// is ignored and written again.
type leaseCache struct {
	dir     string // the backlog
	path    string
	lines   map[plumbing.Hash][][]byte
	judged  map[plumbing.Hash]bool // entries whose lines the fold has judged (judgeLeases): all accepted
	refused map[plumbing.Hash]bool // judged entries of which the fold set lines aside (checkLease)
	changed bool
}

// leaseLinesFile is the cache, relative to the backlog.
const leaseLinesFile = ledger.CacheDir + "/leaselines"

// leaseCacheHeader starts the cache file's first line, which ends with the
// CRC-32C of the rest of the file in hex. Each entry follows as a line
// "<commit hash> <count> <judged: 0, 1, or 2 when lines were set aside>" and count ledger lines. A file whose checksum
// does not hold (cut short, edited, two writers' bytes) is no cache.
const leaseCacheHeader = "bl lease lines 4 "

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// loadLeaseCache reads the cache of the backlog in dir; an absent or
// unreadable file is an empty cache.
func loadLeaseCache(dir string) *leaseCache {
	c := &leaseCache{dir: dir, path: filepath.Join(dir, filepath.FromSlash(leaseLinesFile)), lines: map[plumbing.Hash][][]byte{}, judged: map[plumbing.Hash]bool{}, refused: map[plumbing.Hash]bool{}}
	data, err := os.ReadFile(c.path)
	if err != nil {
		return c
	}
	if !ledger.TrustLocal(dir, leaseLinesFile) {
		c.path = "" // a teammate's (git tracks it): neither believed nor written
		return c
	}
	if entries, judged, refused, ok := parseLeaseCache(data); ok {
		c.lines, c.judged, c.refused = entries, judged, refused
	}
	return c
}

// parseLeaseCache parses a cache file; ok is false for anything but a
// whole file in the format written.
func parseLeaseCache(data []byte) (lines map[plumbing.Hash][][]byte, judged, refused map[plumbing.Hash]bool, ok bool) {
	rest, ok := bytes.CutPrefix(data, []byte(leaseCacheHeader))
	sum, rest, cut := bytes.Cut(rest, []byte{'\n'})
	if !ok || !cut || string(sum) != fmt.Sprintf("%08x", crc32.Checksum(rest, crc32c)) {
		return nil, nil, nil, false
	}
	out := map[plumbing.Hash][][]byte{}
	judged, refused = map[plumbing.Hash]bool{}, map[plumbing.Hash]bool{}
	for len(rest) > 0 {
		line, after, ok := bytes.Cut(rest, []byte{'\n'})
		if !ok {
			return nil, nil, nil, false
		}
		hash, count, ok := bytes.Cut(line, []byte{' '})
		count, j, ok2 := bytes.Cut(count, []byte{' '})
		n, err := strconv.Atoi(string(count))
		if !ok || !ok2 || (string(j) != "0" && string(j) != "1" && string(j) != "2") || len(hash) != 40 || !plumbing.IsHash(string(hash)) || err != nil || n < 0 || n > len(after) {
			return nil, nil, nil, false
		}
		if string(j) != "0" {
			judged[plumbing.NewHash(string(hash))] = true
		}
		if string(j) == "2" {
			refused[plumbing.NewHash(string(hash))] = true
		}
		rest = after
		lines := make([][]byte, 0, n)
		for range n {
			l, after, ok := bytes.Cut(rest, []byte{'\n'})
			if !ok || len(l) == 0 || l[0] != '{' {
				return nil, nil, nil, false
			}
			lines = append(lines, append(l[:len(l):len(l)], '\n'))
			rest = after
		}
		out[plumbing.NewHash(string(hash))] = lines
	}
	return out, judged, refused, true
}

// has reports whether the lines of commit tip are cached.
func (c *leaseCache) has(tip plumbing.Hash) bool {
	_, ok := c.lines[tip]
	return ok
}

// get returns the cached lines of commit tip, or reads them with read and
// keeps them.
func (c *leaseCache) get(tip plumbing.Hash, read func(plumbing.Hash) ([][]byte, error)) ([][]byte, error) {
	if l, ok := c.lines[tip]; ok {
		return l, nil
	}
	l, err := read(tip)
	if err != nil {
		return nil, err
	}
	c.lines[tip], c.changed = l, true
	return l, nil
}

// judge records the lines of commit tip as the fold left them
// (judgeLeases): what it refused is dropped (refused says whether
// anything was), and the rest needs no fold again.
func (c *leaseCache) judge(tip plumbing.Hash, lines [][]byte, refused bool) {
	c.lines[tip], c.judged[tip], c.refused[tip], c.changed = lines, true, refused, true
}

// save writes the entries of tips (the lease refs as last fetched), when
// the cache gained or lost any; a failure to write costs only the next
// call's reads.
func (c *leaseCache) save(tips map[string]plumbing.Hash) {
	keep := make(map[plumbing.Hash]bool, len(tips))
	for _, t := range tips {
		keep[t] = true
	}
	for t := range c.lines {
		if !keep[t] {
			delete(c.lines, t)
			delete(c.judged, t)
			delete(c.refused, t)
			c.changed = true
		}
	}
	if !c.changed || c.path == "" {
		return
	}
	var b bytes.Buffer
	for _, t := range sortedTips(tips) {
		lines, ok := c.lines[t]
		if !ok {
			continue
		}
		j := 0
		if c.judged[t] {
			j = 1
		}
		if c.refused[t] {
			j = 2
		}
		fmt.Fprintf(&b, "%s %d %d\n", t, len(lines), j)
		for _, l := range lines {
			b.Write(l)
		}
	}
	file := fmt.Appendf(nil, "%s%08x\n", leaseCacheHeader, crc32.Checksum(b.Bytes(), crc32c))
	if err := writeCacheFile(c.dir, leaseLinesFile, append(file, b.Bytes()...)); err == nil {
		c.changed = false
	}
}

// sortedTips is the distinct tips in the order of their cards, so the
// file is the same for the same refs.
func sortedTips(tips map[string]plumbing.Hash) []plumbing.Hash {
	var out []plumbing.Hash
	seen := map[plumbing.Hash]bool{}
	for _, card := range sortedCards(tips) {
		if t := tips[card]; !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// writeCacheFile replaces the backlog's local file name with data by a rename, so a reader sees the
// old file or the new one. Not fsutil.ReplaceFile: its two fsyncs would add
// to most remote calls, and a cache lost or torn by a crash costs only time
// (the checksum turns a torn file into no cache).
func writeCacheFile(dir, name string, data []byte) error {
	if err := ledger.CheckLocalPath(dir, name); err != nil {
		return err // a link a teammate committed: never written through
	}
	path := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".leaselines-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}
