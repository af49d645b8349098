// Package fsutil holds the file writes whose durability bl promises: a
// file replaced atomically, an append made durable, a directory entry made
// durable. Standard library only: the lean bl binary links it.
package fsutil

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ReplaceFile atomically replaces path with data: a temp file in the same
// directory, written, fsynced, renamed over path, then the directory
// fsynced, so after a crash path holds the old bytes or the new ones. The
// file keeps the permissions of the one it replaces (0644 for a new one).
// mid, when set, runs halfway through the write (a crash-test failpoint).
func ReplaceFile(path string, data []byte, mid func()) error {
	return ReplaceFileFrom(path, func(w io.Writer) error {
		half := len(data) / 2
		if _, err := w.Write(data[:half]); err != nil {
			return err
		}
		if mid != nil {
			mid()
		}
		_, err := w.Write(data[half:])
		return err
	})
}

// ReplaceFileFrom is ReplaceFile of the bytes write writes to the temp
// file (unbuffered: a writer that buffers flushes before it returns), so
// they need not be held whole: a compaction's snapshot and archive
// segment are as large as the backlog.
func ReplaceFileFrom(path string, write func(w io.Writer) error) (err error) {
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(mode); err != nil { // CreateTemp makes 0600
		return err
	}
	if err = write(tmp); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// AppendSync appends b to path (created 0644 if missing) in one write and
// fsyncs it. It appends to a regular file only, never through a symbolic
// link (ErrNotRegular): the files bl appends to this way are local, and a
// link a teammate committed in one's place would take the bytes wherever
// it leads (.git/config).
func AppendSync(path string, b []byte) error {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return &fs.PathError{Op: "append", Path: path, Err: ErrNotRegular}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return &fs.PathError{Op: "append", Path: path, Err: ErrNotRegular}
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ErrNotRegular: AppendSync found a link, a directory or a device at
// its path.
var ErrNotRegular = errors.New("not a regular file (a symbolic link is never followed)")

// SyncDir fsyncs a directory so an entry created, renamed or removed in it
// is durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
