package repair

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	json "github.com/goccy/go-json"
)

// checkSnapshotFold holds snapshot.json to the history it says it folds.
// The snapshot is a cache of the archived events, committed to git by
// anyone with push access, so a line can be edited and re-checksummed:
// a card claimed by someone with no claim behind it. Loads check each line
// against what a fold can produce (validateCard); doctor goes further and
// folds the archive segments again, streaming them, and compares the
// result with the snapshot line by line. A snapshot no history produces is
// damage ("forged"), and so is one that fails validation; when the archives
// hold every event the snapshot counts, bl doctor --repair rebuilds it
// from them, losing nothing.
//
// rep already lists any damage in the snapshot, and a stale one (an
// archive set it did not fold) is only compared once rebuilt.
func checkSnapshotFold(dir string, rep *Report, hdr wire.SnapshotHeader) {
	if slices.ContainsFunc(rep.Damage, func(d Damage) bool { return d.File == store.SnapshotFile && d.Kind == "stale" }) {
		return
	}
	readable := !slices.ContainsFunc(rep.Damage, func(d Damage) bool { return d.File == store.SnapshotFile })
	data, err := os.ReadFile(filepath.Join(dir, store.SnapshotFile))
	if err != nil {
		return
	}
	names, err := store.ArchiveNames(dir)
	if err != nil {
		return
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n == rep.Leftover })
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = filepath.Join(dir, filepath.FromSlash(n))
	}
	s := fold.NewState()
	if _, err := store.ArchivedEvents(paths, wire.Cursor{}, func(e *wire.Event) error {
		_ = s.Apply(e) // a refused event is a recorded conflict, as in any fold
		return nil
	}); err != nil {
		return // damage in a segment, reported with its line already
	}
	if !readable {
		// A snapshot whose lines hold their checksums but not what a fold
		// writes (edited and re-checksummed): rebuildable when the
		// archives hold what it counts. Other damage keeps its advice
		// (restore the file from git).
		if _, _, err := store.LoadSnapshot(dir); !errors.Is(err, wire.ErrSnapshotField) && !errors.Is(err, wire.ErrRepeatedKey) {
			return
		}
		claims := store.SnapshotClaims(data)
		for i := range rep.Damage {
			if d := &rep.Damage[i]; d.File == store.SnapshotFile && d.Kind == "snapshot" && claims > 0 && s.Events() >= claims {
				d.Repairable = true
				d.Reason += fmt.Sprintf("; the archive segments hold all %d events it folded: bl doctor --repair rebuilds it from them", claims)
			}
		}
		return
	}
	if s.Events() < hdr.Events {
		rep.Damage = append(rep.Damage, Damage{File: store.SnapshotFile, Line: 1, Kind: "snapshot",
			Reason: fmt.Sprintf("the snapshot folds %d events but the archive segments hold %d: restore %s/ from git (git log --stat -- %s)", hdr.Events, s.Events(), store.ArchiveDir, gitPath(dir, store.ArchiveDir))})
		return
	}
	want, _, err := store.EncodeSnapshot(s, names, nil)
	if err != nil {
		return
	}
	if why, line := snapshotDiff(data, want); why != "" || s.Events() != hdr.Events || s.Last().ID != hdr.LastID {
		if why == "" {
			why = fmt.Sprintf("its header counts %d events up to %q; the archive segments hold %d up to %q", hdr.Events, hdr.LastID, s.Events(), s.Last().ID)
		}
		rep.Damage = append(rep.Damage, Damage{File: store.SnapshotFile, Line: line, Kind: "forged", Repairable: true,
			Reason: "no history produces this snapshot (it was edited, or written from other events): " + why + "; bl doctor --repair rebuilds it from the archived events"})
	}
}

// snapshotDiff compares the lines after the header of a snapshot on disk
// (have) with the fold's (want) and says how they differ, naming up to
// three cards, with the line of the first difference; "" when they agree.
func snapshotDiff(have, want []byte) (string, int) {
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

// dropShortSnapshot removes the snapshot after repair moved aside lines
// of the archive segments it folded (aside of them, lines stamped outside
// the accepted range): its count of events would exceed what the archives
// hold, and the rebuild that follows would refuse it as missing archives.
// It goes only when the archives hold every other event it counts; the
// rebuild then writes it anew from them.
func dropShortSnapshot(dir string, aside int) error {
	snap := filepath.Join(dir, store.SnapshotFile)
	data, err := os.ReadFile(snap)
	if err != nil {
		return nil
	}
	segs, err := store.Segments(dir)
	if err != nil {
		return err
	}
	var held int64
	if _, err := store.ArchivedEvents(segs[:len(segs)-1], wire.Cursor{}, func(*wire.Event) error {
		held++
		return nil
	}); err != nil {
		return err
	}
	if store.SnapshotClaims(data) <= held+int64(aside) {
		return os.Remove(snap)
	}
	return nil
}
