package wire

import (
	"bytes"
	"testing"
)

// FuzzDecodeLine: any bytes either fail to decode or decode to an event that
// encodes to a line decoding to the same event again.
func FuzzDecodeLine(f *testing.F) {
	for _, ev := range roundTripEvents() {
		line, err := EncodeLine(ev)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(line)
		f.Add(line[:len(line)/2])
	}
	f.Add([]byte{})
	f.Add([]byte("\n"))
	f.Add(frame(`{"v":3,"id":"e","at":"2026-01-01T00:00:00Z","actor":"a","op":"block","card":"A"}`))
	f.Add(frame(`{"v":1,"id":"e","at":"2026-01-01T00:00:00+02:00","actor":"a","op":"heartbeat","card":"A","checkpoint":{ "a" : [1, 2] },"progress":5}`))
	f.Add(frame(`{"v":1,"id":"e","at":"2026-01-01T00:00:00Z","actor":"a","op":"create","card":"A","fields":{"labels":null,"title":"\u00e9\ud800"},"x":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodeLine(t, data)
		// Most random bytes fail the checksum; checksum them so the
		// parser behind it gets fuzzed too.
		if obj := bytes.TrimSuffix(data, []byte{'\n'}); len(obj) >= 2 && obj[0] == '{' && obj[len(obj)-1] == '}' {
			checkDecodeLine(t, frame(string(obj)))
		}
	})
}

func checkDecodeLine(t *testing.T, line []byte) {
	e1, err := DecodeLine(line)
	if err != nil {
		if e1 != nil {
			t.Fatal("an error with an event")
		}
		return
	}
	enc1, err := EncodeLine(e1)
	if err != nil {
		t.Fatalf("decoded event does not encode: %v", err)
	}
	e2, err := DecodeLine(enc1)
	if err != nil {
		t.Fatalf("re-encoded line does not decode: %v\n%s", err, enc1)
	}
	enc2, err := EncodeLine(e2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc1, enc2) {
		t.Fatalf("encoding is not stable:\n%s%s", enc1, enc2)
	}
	// The event itself survives; only raw JSON spacing may be
	// normalised.
	if e1.V != e2.V || e1.ID != e2.ID || !e1.At.Equal(e2.At) || e1.Actor != e2.Actor || e1.Op != e2.Op ||
		e1.Card != e2.Card || e1.RequestID != e2.RequestID || e1.ExpectVersion != e2.ExpectVersion ||
		e1.Epoch != e2.Epoch || e1.Owner != e2.Owner || e1.TTLSeconds != e2.TTLSeconds || e1.Reason != e2.Reason ||
		e1.To != e2.To || e1.Force != e2.Force || !equalIntPtr(e1.Progress, e2.Progress) ||
		e1.Text != e2.Text || e1.BackoffSeconds != e2.BackoffSeconds || e1.BackoffMaxSeconds != e2.BackoffMaxSeconds ||
		(e1.Checkpoint == nil) != (e2.Checkpoint == nil) || (e1.Fields == nil) != (e2.Fields == nil) {
		t.Fatalf("round trip changed the event:\n%+v\n%+v", e1, e2)
	}
	if e1.Fields != nil && mustJSON(t, e1.Fields) != mustJSON(t, e2.Fields) {
		t.Fatalf("round trip changed the fields:\n%s\n%s", mustJSON(t, e1.Fields), mustJSON(t, e2.Fields))
	}
}

func equalIntPtr(a, b *int) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
