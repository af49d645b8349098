//go:build !linux

package store

import "os"

// checkLocalFS has no portable way to tell a network filesystem here.
func checkLocalFS(string) error { return nil }

// fileKey has no portable inode here: no tail checkpoint is kept.
func fileKey(os.FileInfo) (dev, ino uint64, ok bool) { return 0, 0, false }

// changeTime: none without fileKey.
func changeTime(os.FileInfo) uint64 { return 0 }

// readRegular: no tail checkpoint is read here.
func readRegular(string, int64) ([]byte, error) { return nil, errNoCheckpoint }

// dirEntry is a name in a directory and whether it is a symbolic link.
type dirEntry struct {
	name string
	link bool
}

// readDirTypes is os.ReadDir for the facts ArchiveNames needs.
func readDirTypes(dir string) ([]dirEntry, error) {
	entries, err := os.ReadDir(dir)
	out := make([]dirEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, dirEntry{name: e.Name(), link: e.Type()&os.ModeSymlink != 0})
	}
	return out, err
}
