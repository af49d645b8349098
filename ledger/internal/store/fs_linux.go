package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// networkFS names the filesystems on which flock(2) and O_APPEND are not
// trustworthy across machines, by statfs magic number.
var networkFS = map[int64]string{
	0x6969:     "NFS",
	0x517b:     "SMB",
	0xff534d42: "CIFS",
	0xfe534d42: "SMB2",
	0x5346414f: "AFS",
}

// fsType returns the statfs magic number of the filesystem holding dir; a
// variable so tests can pretend to be on NFS.
var fsType = func(dir string) (int64, error) {
	var st syscall.Statfs_t
	err := syscall.Statfs(dir, &st)
	return int64(st.Type), err
}

// checkLocalFS refuses a directory on a network filesystem.
func checkLocalFS(dir string) error {
	typ, err := fsType(dir)
	if err != nil {
		return fmt.Errorf("statfs %s: %w", dir, err)
	}
	if name, ok := networkFS[typ]; ok {
		return wire.Errorf(wire.ErrNetworkFS, "%s is on %s, where file locks and appends are not atomic across machines; keep .backlog on a local disk and share it through git (bl sync), or set BL_ALLOW_NETWORK_FS=1 if every writer runs on one machine",
			dir, name)
	}
	return nil
}

// fileKey is the device and inode of a file: what binds a local cache to
// this checkout's own files (a copy or a clone has others).
func fileKey(fi os.FileInfo) (dev, ino uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Dev), st.Ino, true
}

// changeTime is a file's status change time in ns (ctime): unlike the
// mtime, no one can set it back after writing the file in place.
func changeTime(fi os.FileInfo) uint64 {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	return uint64(st.Ctim.Nano())
}

// readRegular reads the file at path when it is a regular file of at most
// max bytes. The check is made on the file opened, not the path: the open
// follows no symbolic link and does not wait on a FIFO. The file is
// opened without an *os.File, which would register it with the runtime's
// poller (five system calls, and the poller's own start in a short call).
//
// It is read, not mapped: the bytes are checked once and used long after
// (a card line is decoded when first needed, or copied into the next
// checkpoint), and a mapping shows whatever is written to the file in
// place meanwhile (": > tail.ckpt", cp over it), or faults the process
// with SIGBUS once the file is cut short. Only bl renames over it; others
// may not.
func readRegular(path string, max int64) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size <= 0 || st.Size > max {
		return nil, errNoCheckpoint
	}
	data := make([]byte, st.Size)
	for n := 0; n < len(data); {
		m, err := syscall.Read(fd, data[n:])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, err
		case m == 0:
			return nil, errNoCheckpoint // cut short since the fstat
		}
		n += m
	}
	return data, nil
}

// dirEntry is a name in a directory and whether it is a symbolic link.
type dirEntry struct {
	name string
	link bool
}

// readDirTypes is os.ReadDir for the few facts ArchiveNames needs, read
// with getdents(2) into one small buffer and without an *os.File: the
// archive is listed by every load, and os.ReadDir's file, finalizer and
// 8 KiB buffer cost a short call more than the listing. Sorted by name;
// an entry whose type the filesystem does not report is lstat'ed.
func readDirTypes(dir string) ([]dirEntry, error) {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer syscall.Close(fd)
	var out []dirEntry
	buf := make([]byte, 4096)
	for {
		n, err := syscall.ReadDirent(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "readdirent", Path: dir, Err: err}
		}
		if n <= 0 {
			break
		}
		for b := buf[:n]; len(b) >= 19; {
			// linux_dirent64: ino u64, off i64, reclen u16, type u8, name
			reclen := int(binary.NativeEndian.Uint16(b[16:]))
			if reclen < 19 || reclen > len(b) {
				return nil, &os.PathError{Op: "readdirent", Path: dir, Err: syscall.EIO}
			}
			ino, typ, name := binary.NativeEndian.Uint64(b), b[18], b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			if ino == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			e := dirEntry{name: string(name), link: typ == syscall.DT_LNK}
			if typ == syscall.DT_UNKNOWN {
				fi, err := os.Lstat(filepath.Join(dir, e.name))
				if err != nil {
					if errors.Is(err, os.ErrNotExist) {
						continue // gone since the listing
					}
					return nil, err
				}
				e.link = fi.Mode()&os.ModeSymlink != 0
			}
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b dirEntry) int { return strings.Compare(a.name, b.name) })
	return out, nil
}
