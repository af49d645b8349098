package wire

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// A line that names a key twice folds with the last value while a person
// reading the diff sees the first: it is damage, however the key is
// spelled, at any depth but inside a checkpoint (the writer's own JSON).
func TestDecodeRefusesRepeatedKeys(t *testing.T) {
	const head = `{"v":1,"id":"e1","at":"2026-01-02T03:04:05Z","actor":"a",`
	for _, obj := range []string{
		head + `"op":"create","op":"claim","card":"A","fields":{"title":"t"}}`,
		head + `"op":"create","OP":"claim","card":"A","fields":{"title":"t"}}`,
		head + `"op":"create","o\u0070":"claim","card":"A","fields":{"title":"t"}}`,
		head + `"op":"create","card":"A","fields":{"title":"shown","title":"folded"}}`,
		head + `"op":"create","card":"A","card":"B","fields":{"title":"t"}}`,
	} {
		_, err := DecodeLine(frame(obj))
		if !errors.Is(err, ErrRepeatedKey) {
			t.Errorf("DecodeLine(%s) = %v, want a repeated key", obj, err)
		}
	}
	// Unknown members send a line to the JSON decoder; a checkpoint's own
	// keys are its writer's business.
	ok := head + `"op":"heartbeat","card":"A","owner":"w","checkpoint":{"k":1,"k":2},"later":{"x":1}}`
	if _, err := DecodeLine(frame(ok)); err != nil {
		t.Fatalf("checkpoint with its own repeated key: %v", err)
	}
	// Snapshot lines and headers too.
	card := `{"card":{"id":"A","title":"t","labels":[],"priority":0,"status":"ready","status":"done","depends_on":[],"acceptance":[],"claim_epoch":0,"attempts":0,"max_attempts":0,"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","version":1}}`
	if _, err := ReadSnapshotLine(bytes.TrimSuffix(frame(card), []byte{'\n'})); !errors.Is(err, ErrRepeatedKey) {
		t.Errorf("snapshot card with status twice: %v", err)
	}
	hdr := `{"v":2,"seq":0,"events":0,"events":9,"last_at":"0001-01-01T00:00:00Z","last_id":"","cards":0,"receipts":0,"conflicts":0,"archives":"x"}`
	if _, err := ReadHeader(bytes.TrimSuffix(frame(hdr), []byte{'\n'})); !errors.Is(err, ErrRepeatedKey) {
		t.Errorf("snapshot header with events twice: %v", err)
	}
}

// Stamps outside 2000-2200 are damage on read, so no time or cursor
// arithmetic meets them.
func TestStampRange(t *testing.T) {
	line := func(at, clock string) []byte {
		c := ""
		if clock != "" {
			c = `,"clock":"` + clock + `"`
		}
		return frame(`{"v":2,"id":"e1","at":"` + at + `"` + c + `,"actor":"a","op":"create","card":"A","fields":{"title":"t"}}`)
	}
	for _, l := range [][]byte{
		line("9999-12-31T23:59:59.999999999Z", ""),
		line("2262-04-12T00:00:00Z", ""),
		line("2201-01-01T00:00:00Z", ""),
		line("1999-12-31T23:59:59.999999999Z", ""),
		line("1970-01-01T00:00:00Z", ""),
		line("2026-01-02T03:04:05Z", "1000-01-01T00:00:00Z"),
	} {
		if _, err := DecodeLine(l); !errors.Is(err, ErrStampRange) {
			t.Errorf("DecodeLine(%s) = %v, want a stamp out of range", l, err)
		}
	}
	for _, at := range []string{"2000-01-01T00:00:00Z", "2200-12-31T23:59:59.999999999Z"} {
		e, err := DecodeLine(line(at, ""))
		if err != nil {
			t.Fatalf("DecodeLine at %s: %v", at, err)
		}
		c := CursorOf(e)
		back, err := ParseCursor(c.String())
		if err != nil || !back.At.Equal(e.At) || strings.HasPrefix(c.String(), "-") {
			t.Fatalf("cursor of %s = %q, parsed %v, %v", at, c.String(), back, err)
		}
	}
}

// BenchmarkReadSnapshotCard is what a load pays per card line: the decode
// (BenchmarkDecodeSnapshotCard) and the validation against the fold.
func BenchmarkReadSnapshotCard(b *testing.B) {
	line := typicalCardLine(b)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadSnapshotLine(line); err != nil {
			b.Fatal(err)
		}
	}
}
