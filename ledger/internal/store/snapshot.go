package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	json "github.com/goccy/go-json"
)

// Snapshot and archive names inside a backlog directory.
const (
	SnapshotFile = "snapshot.json"
	ArchiveDir   = "archive"
)

// archiveFingerprint identifies a set of archive segment names.
func archiveFingerprint(names []string) string {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	sum := sha256.Sum256([]byte(strings.Join(sorted, "\n")))
	return hex.EncodeToString(sum[:8])
}

// ArchiveNames lists the segment files in dir's archive, by tree name,
// oldest first (zero-padded sequence numbers sort in order). It is the one
// lister of the archive.
func ArchiveNames(dir string) ([]string, error) {
	entries, err := readDirTypes(filepath.Join(dir, ArchiveDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var names []string
	root := ""
	for _, e := range entries {
		name := ArchiveDir + "/" + e.name
		if !Tracked(name) {
			continue
		}
		if e.link {
			// A segment a teammate committed as a link out of the
			// backlog (-> /dev/stdin) would hold every command that
			// reads the archive, or read a file of the user's: refused
			// as CheckLinks refuses a linked ledger.
			if root == "" {
				if root, err = filepath.EvalSymlinks(dir); err != nil {
					return nil, err
				}
			}
			if err := linkInside(root, filepath.Join(dir, ArchiveDir, e.name)); err != nil {
				return nil, err
			}
		}
		names = append(names, name)
	}
	return names, nil
}

// EncodeSnapshot renders s as snapshot.json: a header line, then one line
// per card sorted by id, per receipt sorted by request id, and per conflict
// in fold order. The same state always gives the same bytes. It also
// returns where each line went, for the snapshot index.
func EncodeSnapshot(s *fold.State, archives []string, tail []byte) ([]byte, *IndexBuild, error) {
	var buf bytes.Buffer
	crc := ""
	if len(tail) > 0 {
		crc = wire.CrcHex(tail)
	}
	out, err := encodeSnapshotTo(&buf, s, archives, int64(len(tail)), crc, nil)
	if err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), out.ib, nil
}

// LoadSnapshot reads the whole of snapshot.json from dir into a new state
// (bl doctor). A missing snapshot is an empty state and a zero header.
func LoadSnapshot(dir string) (*fold.State, wire.SnapshotHeader, error) {
	s, hdr, f, err := openSnapshot(dir, func(path string, f *os.File) (*fold.State, wire.SnapshotHeader, error) {
		return DecodeSnapshot(path, f, nil)
	})
	if f != nil {
		f.Close()
	}
	return s, hdr, err
}

// openSnapshot opens dir's snapshot.json and reads it with read. A
// missing snapshot is an empty state and a nil file; when read fails the
// file is closed. Otherwise the file is returned still open, so the caller
// can check it is still the one at the path after reading the ledger:
// holding it open keeps its inode from being reused by a newer snapshot
// meanwhile.
func openSnapshot(dir string, read func(path string, f *os.File) (*fold.State, wire.SnapshotHeader, error)) (*fold.State, wire.SnapshotHeader, *os.File, error) {
	path := filepath.Join(dir, SnapshotFile)
	f, err := fsutil.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return fold.NewState(), wire.SnapshotHeader{}, nil, nil
	}
	if err != nil {
		return nil, wire.SnapshotHeader{}, nil, err
	}
	s, hdr, err := read(path, f)
	if err != nil {
		f.Close()
		return nil, hdr, nil, err
	}
	return s, hdr, f, nil
}

// DecodeSnapshot reads a whole snapshot into a new state; with ib set, it
// also records where each line lies, for the snapshot index. The snapshot
// is written whole (temp file, rename), so every line must be good: a torn
// tail is damage too. A snapshot whose every line is good but which is not
// one fold as bl writes it — a second header line, card or receipt lines
// out of order or repeated, counts its header does not give: the union of
// two snapshots a git merge made — is stale, not damage: the error wraps
// errStale and the caller folds the archives instead.
func DecodeSnapshot(path string, r io.ReaderAt, ib *IndexBuild) (*fold.State, wire.SnapshotHeader, error) {
	d := &snapshotDecoder{path: path, lr: wire.NewLineReader(path, r, wire.LineStart{}, wire.FileBufSize), s: fold.NewState(), ib: ib}
	judge := d.judge
	for {
		d.line, d.header = wire.SnapshotLine{}, false
		raw, torn, err := d.lr.NextJudged(judge)
		if err == io.EOF {
			break
		}
		if torn != nil {
			return nil, d.hdr, d.lr.Corrupt(&raw, fmt.Errorf("%w: %s in a snapshot, which is written whole", wire.ErrFraming, torn.Reason))
		}
		if err != nil {
			return nil, d.hdr, err
		}
		d.offset = raw.Off + raw.Size
		if raw.N == 1 {
			continue
		}
		if err := d.take(&raw); err != nil {
			return nil, d.hdr, err
		}
	}
	s, err := d.finish()
	return s, d.hdr, err
}

// snapshotDecoder is DecodeSnapshot's progress through the file.
type snapshotDecoder struct {
	path   string
	lr     *wire.LineReader
	s      *fold.State
	ib     *IndexBuild // the index being built alongside, or nil
	hdr    wire.SnapshotHeader
	offset int64 // where the last line read ends

	line   wire.SnapshotLine // the line judge read
	header bool              // judge read a header line after the first, or a conflict marker

	union   string // why the file is not one snapshot, once found
	section int    // 0 cards, 1 receipts, 2 conflicts: the order they are written in
	lastKey string // the last card id or request id read, in its section
}

// judge reads one line (lr.n) for the line reader's rule: the header,
// a card, receipt or conflict, or what a union of two snapshots leaves (a
// conflict marker, a second header), which it notes.
func (d *snapshotDecoder) judge(b []byte) error {
	if wire.ConflictMarker(b) {
		// A merge made before the union rule: the lines between
		// the markers are the two snapshots'.
		d.header = true
		d.notUnion("git conflict markers at line %d", d.lr.N)
		return nil
	}
	line, err := wire.CheckFrame(b)
	if err != nil {
		return err
	}
	if d.lr.N == 1 {
		if d.hdr, err = wire.ReadHeader(line); err != nil {
			return err
		}
		return checkSnapshotVersion(d.hdr.V)
	}
	d.line, err = wire.ReadSnapshotLine(line)
	if err == nil && d.line.Card == nil && d.line.Receipt == nil && d.line.Conflict == nil {
		if other, err := wire.ReadHeader(line); err == nil && other.V > 0 {
			if err := checkSnapshotVersion(other.V); err != nil {
				return err
			}
			d.header = true
			if d.hdr.V == 0 { // the first line was a conflict marker
				d.hdr = other
			}
			d.notUnion("a second header at line %d", d.lr.N)
		}
	}
	return err
}

func checkSnapshotVersion(v int) error {
	if v > wire.FormatVersion {
		return wire.Errorf(wire.ErrVersion, "snapshot has format v%d, this bl reads v%d; upgrade bl", v, wire.FormatVersion)
	}
	return nil
}

// notUnion records the first sign that the file is not one snapshot.
func (d *snapshotDecoder) notUnion(format string, args ...any) {
	if d.union == "" {
		d.union = fmt.Sprintf(format, args...)
	}
}

// order checks that line n, of section sec with key, comes after the
// line before it: out of order or repeated means two snapshots.
func (d *snapshotDecoder) order(n, sec int, key string) {
	if sec < d.section || (sec == d.section && sec < 2 && key <= d.lastKey) {
		d.notUnion("line %d is out of order or repeated", n)
	}
	if sec != d.section {
		d.section, d.lastKey = sec, ""
	}
	d.lastKey = key
}

// take adds the line judge read (raw) to the state and the index.
func (d *snapshotDecoder) take(raw *wire.FrameLine) error {
	at, n := raw.Off, int(raw.Size)
	s, ib, l := d.s, d.ib, d.line
	switch {
	case l.Card != nil:
		c := l.Card
		d.order(raw.N, 0, c.ID)
		s.RestoreCard(c)
		if ib != nil {
			ib.addCard(c, at, n)
		}
	case l.Receipt != nil:
		d.order(raw.N, 1, l.Receipt.RequestID)
		s.RestoreReceipt(l.Receipt.RequestID, l.Receipt.Receipt)
		if ib != nil {
			ib.receipts = append(ib.receipts, indexEntry{key: l.Receipt.RequestID, off: at, n: n})
		}
	case l.Conflict != nil:
		d.order(raw.N, 2, "")
		if ib != nil && s.NumConflicts() == 0 {
			ib.conflicts = at
		}
		s.RestoreConflict(*l.Conflict)
	case d.header:
		// a second header: what follows is the other snapshot's
	default:
		return d.lr.Corrupt(raw, errors.New("line holds no card, receipt or conflict"))
	}
	return nil
}

// finish checks the whole: a header, counts that match it, one snapshot
// (errStale for a union of two); and completes the state from the header.
func (d *snapshotDecoder) finish() (*fold.State, error) {
	s, hdr := d.s, d.hdr
	if hdr.V == 0 {
		return nil, &wire.CorruptError{Path: d.path, Line: 1, Err: errors.New("snapshot has no header")}
	}
	if cards, receipts, conflicts := s.InMemory(); cards != hdr.Cards || receipts != hdr.Receipts || conflicts != hdr.Conflicts {
		d.notUnion("its header counts %d cards, %d receipts, %d conflicts; it holds %d, %d, %d",
			hdr.Cards, hdr.Receipts, hdr.Conflicts, cards, receipts, conflicts)
	}
	if d.union != "" {
		return nil, fmt.Errorf("%w: %s is not one snapshot (%s; a git union merge of two?): every line reads, so it is rebuilt from the archive segments", ErrStale, d.path, d.union)
	}
	if d.ib != nil && s.NumConflicts() == 0 {
		d.ib.conflicts = d.offset
	}
	s.RestorePosition(hdr.Events, wire.Event{At: hdr.LastAt, ID: hdr.LastID})
	if hdr.V < 3 { // written before the fold counted open children
		s.RecountChildren()
	}
	return s, nil
}

// ArchiveName names the segment whose newest event is last:
// "<unix nanoseconds>-<event id>.jsonl". Names sort in time order, and two
// clones that compact the same events produce the same file, so merging
// their git histories adds segments rather than conflicting over one name.
func ArchiveName(last wire.Event) string {
	return filepath.Join(ArchiveDir, wire.CursorOf(&last).String()+".jsonl")
}

// SnapshotClaims returns the most events any header line of the snapshot
// data counts (a union of two snapshots has two headers), or 0. The
// archives must hold at least that many: a snapshot is their fold.
func SnapshotClaims(data []byte) int64 {
	var most int64
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if !bytes.HasPrefix(line, []byte(`{"v":`)) {
			continue
		}
		raw, err := wire.CheckFrame(bytes.TrimSuffix(line, []byte{'\r'}))
		if err != nil {
			continue
		}
		if hdr, err := wire.DecodeHeader(raw); err == nil && hdr.Events > most {
			most = hdr.Events
		}
	}
	return most
}

// SnapshotDiff compares the lines after the header of a snapshot on disk
// (have) with the fold's (want) and says how they differ, naming up to
// three cards, with the line of the first difference; "" when they agree.
func SnapshotDiff(have, want []byte) (string, int) {
	hl, wl := snapshotBody(have), snapshotBody(want)
	if slices.Equal(hl, wl) {
		return "", 0
	}
	first := 0
	for first < len(hl) && first < len(wl) && hl[first] == wl[first] {
		first++
	}
	cards := func(lines []string) map[string]*wire.Card {
		m := map[string]*wire.Card{}
		for _, l := range lines {
			var sl wire.SnapshotLine
			if json.Unmarshal([]byte(l), &sl) == nil && sl.Card != nil {
				m[sl.Card.ID] = sl.Card
			}
		}
		return m
	}
	hc, wc := cards(hl), cards(wl)
	ids := make([]string, 0, len(hc)+len(wc))
	for id := range hc {
		ids = append(ids, id)
	}
	for id := range wc {
		if _, ok := hc[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var diffs []string
	for _, id := range ids {
		h, w := hc[id], wc[id]
		switch {
		case w == nil:
			diffs = append(diffs, fmt.Sprintf("card %q is in the snapshot but no event creates it", id))
		case h == nil:
			diffs = append(diffs, fmt.Sprintf("card %q is missing from the snapshot", id))
		default:
			if f := cardFieldDiff(h, w); f != "" {
				diffs = append(diffs, fmt.Sprintf("card %q: %s", id, f))
			}
		}
	}
	why := "receipts or conflicts differ from the fold of the events"
	if n := len(diffs); n > 0 {
		why = strings.Join(diffs[:min(n, 3)], "; ")
		if n > 3 {
			why += fmt.Sprintf("; and %d more cards", n-3)
		}
	}
	return why, first + 2 // 1-based, after the header
}

// snapshotBody is the lines of a snapshot after its header, without line
// ends.
func snapshotBody(data []byte) []string {
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\r")
	}
	if len(lines) > 0 {
		lines = lines[1:]
	}
	return lines
}

// cardFieldDiff names the fields where the snapshot's card (have) differs
// from the fold's (want), with both values.
func cardFieldDiff(have, want *wire.Card) string {
	hb, _ := json.Marshal(have)
	wb, _ := json.Marshal(want)
	var hm, wm map[string]json.RawMessage
	if json.Unmarshal(hb, &hm) != nil || json.Unmarshal(wb, &wm) != nil {
		return ""
	}
	keys := make([]string, 0, len(hm)+len(wm))
	for k := range hm {
		keys = append(keys, k)
	}
	for k := range wm {
		if _, ok := hm[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		if !bytes.Equal(hm[k], wm[k]) {
			out = append(out, fmt.Sprintf("%s %s in the snapshot, %s from the events", k, shortJSON(hm[k]), shortJSON(wm[k])))
		}
	}
	return strings.Join(out, ", ")
}

// shortJSON shows a value for a message: at most 60 bytes, "none" for an
// absent one.
func shortJSON(v json.RawMessage) string {
	switch {
	case v == nil:
		return "none"
	case len(v) > 60:
		return string(v[:57]) + "..."
	}
	return string(v)
}
