package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// A line that arrives from another clone (the branch a sync fetched) and
// does not read — damaged, stamped outside the range bl accepts, not an
// event at all — is quarantined rather than refused: the rest of the
// remote's files fold and work, the line is recorded here with where it
// came from, and the next push of this backlog (bl sync --push) leaves it
// out of the branch for everyone. A line of a newer format (ErrVersion)
// is never quarantined: it is an event this bl cannot read, so the call
// fails with "upgrade bl" as before.

// QuarantineFile lists the quarantined lines, one JSON object a line. It
// lives in the cache directory: local to this clone, ignored by git.
const QuarantineFile = CacheDir + "/quarantine.jsonl"

// Quarantined is one line set aside as it arrived.
type Quarantined struct {
	From   string `json:"from"`   // where it came from: "origin/main", a lease ref
	Commit string `json:"commit"` // the commit that holds it
	File   string `json:"file"`   // its file in the backlog: ledger.jsonl, archive/…
	Line   int    `json:"line"`   // 1-based, in File as that commit holds it
	Reason string `json:"reason"`
	Sum    string `json:"sha256"` // of the line's bytes, which are not kept
	raw    []byte // the line's bytes, for a caller that sets them aside
}

// QuarantineLines splits a ledger file's data, as a commit from would
// holds it, into the lines that read (or that only a newer bl reads) and
// those it quarantines. An unterminated last line that reads stays. A
// line that reuses the event id of an earlier line for a different event
// (not the same event stamped again, which settle.go settles) is
// quarantined too: two events cannot share an id, and the earlier line
// is the one every clone already holds — a push appends, so the copy a
// teammate adds comes after the one it imitates. (Someone who moves it
// before could as well have deleted the line and added a new event:
// what a push can do anyway.)
func QuarantineLines(data []byte, from, commit, file string) ([]byte, []Quarantined) {
	return quarantineLines(data, from, commit, file, nil)
}

// quarantineLines is QuarantineLines that also sets aside the lines
// reject names (by 1-based number, with the reason).
func quarantineLines(data []byte, from, commit, file string, reject map[int]string) ([]byte, []Quarantined) {
	var out []byte
	var bad []Quarantined
	n := 0
	type first struct {
		line []byte
		n    int
	}
	ids := map[string]first{} // event id -> its first line that reads
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line = data[:i+1]
		}
		data = data[len(line):]
		n++
		e, err := wire.DecodeLine(line)
		if len(bytes.TrimSpace(line)) == 0 {
			err = wire.ErrBlank // holds no event, and every reader refuses it
		}
		if why, ok := reject[n]; ok && err == nil {
			err = errors.New(why)
		}
		if err == nil {
			if f, dup := ids[e.ID]; !dup {
				ids[e.ID] = first{line, n}
			} else if !sameEvent(f.line, e) {
				err = fmt.Errorf("event id %s is also used by line %d, a different event: two events cannot share an id", e.ID, f.n)
			}
		}
		if err != nil && !errors.Is(err, wire.ErrVersion) {
			if body := bytes.TrimRight(line, "\r\n"); wire.ConflictMarker(body) {
				err = wire.ErrConflictMarkers // a marker line holds no event: nothing is lost
			}
			sum := sha256.Sum256(line)
			bad = append(bad, Quarantined{From: from, Commit: commit, File: file, Line: n, Reason: printable(err.Error()), Sum: hex.EncodeToString(sum[:]), raw: line})
			continue
		}
		out = append(out, line...)
	}
	if bad == nil {
		return nil, nil
	}
	if out == nil {
		out = []byte{}
	}
	return out, bad
}

// sameEvent reports whether e is the event of line first, stamped again
// or not (see settle.go): two copies of one event, not two events.
func sameEvent(first []byte, e *wire.Event) bool {
	a, err := wire.DecodeLine(first)
	return err == nil && wire.SameButStamp(a, e)
}

// RecordQuarantine adds q to the backlog's list in dir and returns those
// not listed before (the same line from the same commit is listed once).
func RecordQuarantine(dir string, q []Quarantined) ([]Quarantined, error) {
	if err := clearTeammates(dir, QuarantineFile); err != nil {
		return nil, err
	}
	have, err := ReadQuarantine(dir)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, h := range have {
		seen[h.Commit+h.File+h.Sum] = true
	}
	var fresh []Quarantined
	var buf []byte
	for _, x := range q {
		if seen[x.Commit+x.File+x.Sum] {
			continue
		}
		seen[x.Commit+x.File+x.Sum] = true
		b, err := json.Marshal(x)
		if err != nil {
			return nil, err
		}
		buf = append(append(buf, b...), '\n')
		fresh = append(fresh, x)
	}
	if len(buf) == 0 || !TrustLocal(dir, QuarantineFile) {
		return fresh, nil // a list git tracks is a teammate's: each warns until it is untracked
	}
	if CheckLocalPath(dir, QuarantineFile) != nil {
		return fresh, nil // a link on the way: never written through; the lines warn again
	}
	path := filepath.Join(dir, QuarantineFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return fresh, fsutil.AppendSync(path, buf)
}

// ReadQuarantine lists the lines quarantined in the backlog in dir;
// a line of the list that does not read is skipped. A list git tracks is
// a teammate's, not this clone's (tracked_local.go): it lists nothing.
func ReadQuarantine(dir string) ([]Quarantined, error) {
	data, err := os.ReadFile(filepath.Join(dir, QuarantineFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !TrustLocal(dir, QuarantineFile) {
		return nil, nil
	}
	var out []Quarantined
	for _, l := range bytes.Split(data, []byte{'\n'}) {
		var q Quarantined
		if len(l) > 0 && json.Unmarshal(l, &q) == nil {
			out = append(out, q)
		}
	}
	return out, nil
}

// QuarantineMessage is the warning for a line quarantined as it arrived.
func QuarantineMessage(q Quarantined) string {
	return fmt.Sprintf("quarantined line %d of %s from %s at commit %s (%s): not folded; bl doctor lists it, and bl sync --push leaves it out of the branch for everyone",
		q.Line, q.File, q.From, q.Commit, q.Reason)
}

// printable drops control characters from text taken from a line that
// arrived from elsewhere.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// SettleSnapshot holds the snapshot of a tree that arrived from another
// clone (t, as commit from holds it) to the events it says it folds. A
// snapshot is a cache of the archived events (and of the ledger lines its
// header counts), committed by anyone with push access: one that does not
// read, or that no history produces (a line edited and re-checksummed, a
// lease moved with no event behind it), is replaced in t by the fold of
// those events, and named as a quarantined line is. local is this
// clone's own snapshot: the same bytes are not checked again, so a pull
// that brings no new compaction folds nothing. Archive segments t leaves
// unread (nil) are read from dir, where they are the same. A snapshot
// whose events the archives do not all hold is left as it is (bl doctor
// names it; only git history can restore what is missing).
func SettleSnapshot(dir string, t Tree, local []byte, from, commit string) ([]Quarantined, error) {
	data := t[SnapshotFile]
	if data == nil || bytes.Equal(data, local) {
		return nil, nil
	}
	names := t.Archives()
	arch := Tree{}
	damaged := 0
	for _, n := range names {
		b := t[n]
		if b == nil { // this clone's own, the same there
			var err error
			if b, err = os.ReadFile(filepath.Join(dir, filepath.FromSlash(n))); err != nil {
				return nil, nil // not here to check against
			}
		} else if kept, bad := QuarantineLines(b, from, commit, n); bad != nil {
			// A segment line that arrived and does not read cannot vouch
			// for the snapshot: the fold below goes without it, and the
			// snapshot that counts it is rebuilt (a teammate's push must
			// not make a forged snapshot pass by damaging a line beside it).
			b, damaged = kept, damaged+len(bad)
		}
		arch[n] = b
	}
	evs, err := arch.Union(names...)
	if err != nil {
		return nil, nil // a newer bl's segment, or two events with one id: refused on their own
	}
	s := fold.NewState()
	for _, e := range evs {
		_ = s.Apply(e) // a refused event is a recorded conflict, as in any fold
	}
	_, hdr, derr := DecodeSnapshot(SnapshotFile, bytes.NewReader(data), nil)
	if errors.Is(derr, ErrStale) {
		return nil, nil // a union of two snapshots: every load refolds it
	}
	var tail []byte
	if led := t[LedgerFile]; derr == nil && hdr.TailBytes > 0 && int64(len(led)) >= hdr.TailBytes && wire.CrcHex(led[:hdr.TailBytes]) == hdr.TailCRC {
		tail = led[:hdr.TailBytes]
		tevs, err := DecodeAll(LedgerFile, tail)
		if err != nil {
			return nil, nil
		}
		for _, e := range tevs {
			_ = s.Apply(e)
		}
	}
	want, _, err := EncodeSnapshot(s, names, tail)
	if err != nil {
		return nil, err
	}
	why, line := SnapshotDiff(data, want)
	switch {
	case derr != nil:
		why = "it does not read: " + derr.Error()
	case s.Events() < hdr.Events:
		// The archives hold fewer events than it folds: a line dropped or
		// damaged in the same push, or a git revert or reset. Nothing
		// vouches for what only the snapshot says, so it is rebuilt from
		// what the archives hold, as bl doctor --repair rebuilds after a
		// revert; the missing events are in git history.
		why = fmt.Sprintf("its header counts %d events; the archives hold %d that read (%d damaged): nothing vouches for the rest", hdr.Events, s.Events(), damaged)
	case why == "" && (s.Events() != hdr.Events || s.Last().ID != hdr.LastID):
		why = fmt.Sprintf("its header counts %d events up to %q; the events hold %d up to %q", hdr.Events, hdr.LastID, s.Events(), s.Last().ID)
	case why == "":
		recordVetted(dir, data)
		return nil, nil
	default:
		why = "no history produces it: " + why
	}
	t[SnapshotFile] = want
	recordVetted(dir, want)
	sum := sha256.Sum256(data)
	return []Quarantined{{From: from, Commit: commit, File: SnapshotFile, Line: max(line, 1),
		Reason: printable(why) + "; rebuilt from the archived events", Sum: hex.EncodeToString(sum[:])}}, nil
}
