package gitdir

import (
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
)

// git's index also records each file's stat data as git last saw it
// (ctime, mtime, device, inode, mode, uid, gid, size). When the file's
// stat now is exactly that, git takes the file as holding the index's
// blob without reading it — unless the entry is racily clean: its mtime
// is not older than the index file's own, so the file may have been
// written again in the same second after git looked at it
// (Documentation/technical/racy-git.txt; git compares seconds unless
// built with USE_NSEC, so a same-second entry is racy here too).

// statData is the part of a file's stat git's index keeps, each field
// truncated to 32 bits as git writes it.
type statData struct {
	ctimeSec, ctimeNsec, mtimeSec, mtimeNsec uint32
	dev, ino, uid, gid, size                 uint32
}

// Index entry flags that make the stat data say nothing about the file:
// assume-valid (git does not look at the file), and the extended flags
// skip-worktree and intent-to-add.
const (
	flagAssumeValid = 0x8000
	xflagSkipOrITA  = 0x4000 | 0x2000
)

// IndexBlobID is the blob id (hex) of the file at rel (slash-separated,
// relative to the worktree root) as git's index of that worktree holds
// it, when the file's stat matches the entry's exactly and the entry is
// not racily clean, so the file's bytes are the ones git staged or
// checked out; fi is the file's stat then. ok is false — hash the file
// instead — for anything else: no stage-0 entry, a split index, an
// index this reader does not follow, a file that is not regular, any
// stat field that differs, a racy entry, or a platform whose stat this
// reader does not know. The index's id is of the blob git stores: where
// attributes convert the file (eol=crlf, a filter), the caller also
// checks the blob's size against the file's.
func IndexBlobID(root, rel string) (id string, fi os.FileInfo, ok bool) {
	gitDir, commonDir, err := Dirs(root)
	if err != nil {
		return "", nil, false
	}
	f, err := openRegular(filepath.Join(gitDir, "index")) // a FIFO would block
	if err != nil {
		return "", nil, false
	}
	defer f.Close()
	ifi, err := f.Stat()
	if err != nil || ifi.Size() > 64<<20 {
		return "", nil, false
	}
	raw := make([]byte, ifi.Size())
	if _, err := f.ReadAt(raw, 0); err != nil {
		return "", nil, false
	}
	hashSize := 20
	if sha256Repo(commonDir) {
		hashSize = 32
	}
	entries, link, err := readIndex(raw, hashSize)
	if err != nil || link != nil {
		return "", nil, false // a split index: its shared entries' racy rule is not this one
	}
	var e *indexEntry
	for i := range entries {
		if entries[i].stage == 0 && string(entries[i].name) == rel {
			e = &entries[i]
			break
		}
	}
	if e == nil || e.flags&flagAssumeValid != 0 || e.xflags&xflagSkipOrITA != 0 {
		return "", nil, false
	}
	if mode := binary.BigEndian.Uint32(e.stat[24:28]); mode != ModeFile && mode != ModeExecutable {
		return "", nil, false
	}
	fi, err = os.Lstat(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil || !fi.Mode().IsRegular() {
		return "", nil, false
	}
	now, known := statOf(fi)
	if !known || now != indexStat(e.stat) {
		return "", nil, false
	}
	// Racily clean: the index was written in the second the file was
	// last written, or before it (racy-git.txt).
	if int64(now.mtimeSec) >= ifi.ModTime().Unix() {
		return "", nil, false
	}
	return hex.EncodeToString(e.oid), fi, true
}

// indexStat decodes an index entry's 40 bytes of stat data.
func indexStat(b []byte) statData {
	u := func(i int) uint32 { return binary.BigEndian.Uint32(b[i*4:]) }
	return statData{
		ctimeSec: u(0), ctimeNsec: u(1), mtimeSec: u(2), mtimeNsec: u(3),
		dev: u(4), ino: u(5), uid: u(7), gid: u(8), size: u(9),
	}
}
