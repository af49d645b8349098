package repair

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
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
	if why, line := store.SnapshotDiff(data, want); why != "" || s.Events() != hdr.Events || s.Last().ID != hdr.LastID {
		if why == "" {
			why = fmt.Sprintf("its header counts %d events up to %q; the archive segments hold %d up to %q", hdr.Events, hdr.LastID, s.Events(), s.Last().ID)
		}
		rep.Damage = append(rep.Damage, Damage{File: store.SnapshotFile, Line: line, Kind: "forged", Repairable: true,
			Reason: "no history produces this snapshot (it was edited, or written from other events): " + why + "; bl doctor --repair rebuilds it from the archived events"})
	}
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
