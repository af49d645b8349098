//go:build unix

package fsutil

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// readRegular opens path without an *os.File: one opened by os.OpenFile
// is registered with the runtime's poller (O_NONBLOCK makes even a
// regular file a candidate), which costs a short call several system
// calls per file.
func readRegular(path string, max int64) ([]byte, error) {
	fd, err := open(path, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if uint32(st.Mode)&syscall.S_IFMT != syscall.S_IFREG {
		return nil, &NotRegularError{Path: path, Mode: fileType(uint32(st.Mode))}
	}
	data, err := readAll(fdReader(fd), path, int64(st.Size), max)
	var tooLarge *TooLargeError
	if err != nil && !errors.As(err, &tooLarge) {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return data, err
}

// OpenFile is os.OpenFile for a regular file bl reads or appends to (not
// a FIFO, not with O_NONBLOCK): the *os.File is made with os.NewFile, so
// it is not registered with the runtime's poller, which a regular file
// has no use for and which costs each open five system calls.
func OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	fd, err := open(name, flag, uint32(perm.Perm()))
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

func open(name string, flag int, perm uint32) (int, error) {
	for {
		fd, err := syscall.Open(name, flag|syscall.O_CLOEXEC, perm)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return fd, nil
	}
}

func fstat(fd int, st *syscall.Stat_t) error {
	for {
		if err := syscall.Fstat(fd, st); err != syscall.EINTR {
			return err
		}
	}
}

// fdReader reads a descriptor, 0 bytes being its end.
type fdReader int

func (r fdReader) Read(b []byte) (int, error) {
	for {
		n, err := syscall.Read(int(r), b)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// fileType is the fs.FileMode type bits of a stat mode.
func fileType(mode uint32) fs.FileMode {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}
