package store

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// A link committed below cache/ (cache/heartbeats -> ../../elsewhere,
// cache/seen.json -> ~/.ssh/authorized_keys) would carry bl's own writes
// out of the backlog: MkdirAll, a temp file and a rename all follow a
// directory link, an append follows a file link. Readers already refuse
// such files (TrustLocal, readRegular); every writer of a local file asks
// CheckLocalPath first and writes nothing when a link is on the way, since
// the caches are optional. bl doctor lists the links (LocalLinks) and
// --repair removes them: git rm --cached first when git tracks them
// (tracked_local.go), a plain remove otherwise.

// LocalLinkError is a link on the way to a local file bl was about to
// write; nothing was written.
type LocalLinkError struct {
	Link string // relative to the backlog, slash-separated
}

func (e *LocalLinkError) Error() string {
	return fmt.Sprintf("%s in the backlog is a symbolic link: bl writes none of its local files through it; bl doctor --repair removes it", e.Link)
}

// CheckLocalPath returns a *LocalLinkError when an entry on the path from
// the backlog in dir down to its local file name (slash-separated,
// "cache/heartbeats/ab"), the file included, is a symbolic link. An entry
// that does not exist ends the walk: bl creates it as a real one. dir
// itself may be a link.
func CheckLocalPath(dir, name string) error {
	p := ""
	for _, part := range strings.Split(path.Clean(name), "/") {
		p = path.Join(p, part)
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			return nil
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return &LocalLinkError{Link: p}
		}
	}
	return nil
}

// LocalLinks lists the symbolic links in the backlog's cache/ (cache
// itself included), relative to the backlog; none is followed.
func LocalLinks(dir string) []string {
	var out []string
	_ = filepath.WalkDir(filepath.Join(dir, CacheDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if rel, err := filepath.Rel(dir, p); err == nil {
				out = append(out, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// RemoveLocalLinks removes the links of LocalLinks that git does not
// track (those it tracks go with untrackLocal) and returns their names.
func RemoveLocalLinks(dir string) ([]string, error) {
	var done []string
	for _, l := range LocalLinks(dir) {
		if tracked, err := trackedLocal(dir, l); err != nil || tracked {
			continue
		}
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(l))); err != nil {
			return done, err
		}
		done = append(done, l)
	}
	return done, nil
}
