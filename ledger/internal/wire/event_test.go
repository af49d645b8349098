package wire

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

// crc32c is a bit-at-a-time CRC-32C (Castagnoli, reflected polynomial
// 0x82F63B78), written out so the framing check does not lean on the code
// under test.
func crc32c(data []byte) uint32 {
	crc := ^uint32(0)
	for _, b := range data {
		crc ^= uint32(b)
		for i := 0; i < 8; i++ {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0x82F63B78
			} else {
				crc >>= 1
			}
		}
	}
	return ^crc
}

// frame turns a JSON object into a ledger line with a correct checksum.
func frame(obj string) []byte {
	return []byte(fmt.Sprintf(`%s,"crc":"%08x"}`+"\n", obj[:len(obj)-1], crc32c([]byte(obj))))
}

func TestCRC32CKnownValue(t *testing.T) {
	// The standard check value of CRC-32C.
	if got := crc32c([]byte("123456789")); got != 0xe3069283 {
		t.Fatalf("crc32c check value = %08x", got)
	}
}

func TestEncodeLineGolden(t *testing.T) {
	at := time.Date(2026, 11, 22, 1, 50, 0, 1, time.UTC)
	cases := []struct {
		ev   Event
		want string
	}{
		{
			Event{V: 1, ID: "9f2c51d0a4b7e361", At: at, Actor: "alice@host", Op: OpClaim, Card: "A4", RequestID: "r1",
				ExpectVersion: 3, Epoch: 2, Owner: "w1", TTLSeconds: 600},
			`{"v":1,"id":"9f2c51d0a4b7e361","at":"2026-11-22T01:50:00.000000001Z","actor":"alice@host","op":"claim","card":"A4","request_id":"r1","expect_version":3,"epoch":2,"owner":"w1","ttl_seconds":600,"crc":"bc5ac656"}` + "\n",
		},
		{
			Event{V: 1, ID: "0000000000000001", At: at.Add(time.Second - 1), Actor: "bob", Op: OpCreate, Card: "B",
				Fields: &Fields{Title: strp("<a & b>"), Priority: intp(0), Labels: &[]string{"x"}, DependsOn: &[]string{}, IdempotencyKey: "k"}},
			`{"v":1,"id":"0000000000000001","at":"2026-11-22T01:50:01Z","actor":"bob","op":"create","card":"B","fields":{"title":"<a & b>","priority":0,"labels":["x"],"depends_on":[],"idempotency_key":"k"},"crc":"71769b56"}` + "\n",
		},
		{
			Event{V: 1, ID: "0000000000000002", At: at, Actor: "c", Op: OpHeartbeat, Card: "C", Owner: "w", Epoch: 1,
				Progress: intp(0), Checkpoint: json.RawMessage(`{"step":"é"}`)},
			`{"v":1,"id":"0000000000000002","at":"2026-11-22T01:50:00.000000001Z","actor":"c","op":"heartbeat","card":"C","epoch":1,"owner":"w","progress":0,"checkpoint":{"step":"é"},"crc":"b55e82b4"}` + "\n",
		},
		{
			Event{V: 1, ID: "0000000000000003", At: at, Actor: "d", Op: OpReclaim, Card: "D", Epoch: 4, Force: true, Reason: "stuck\nagent"},
			`{"v":1,"id":"0000000000000003","at":"2026-11-22T01:50:00.000000001Z","actor":"d","op":"reclaim","card":"D","epoch":4,"reason":"stuck\nagent","force":true,"crc":"a11fe9d9"}` + "\n",
		},
	}
	for _, tc := range cases {
		t.Run(string(tc.ev.Op), func(t *testing.T) {
			got, err := EncodeLine(&tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("EncodeLine:\n got %s\nwant %s", got, tc.want)
			}
			if bytes.Count(got, []byte{'\n'}) != 1 {
				t.Fatal("a line must hold exactly one newline, at its end")
			}
			// The crc covers the line without its crc member.
			i := bytes.LastIndex(got, []byte(`,"crc":"`))
			body := append(append([]byte{}, got[:i]...), '}')
			if want := fmt.Sprintf(`,"crc":"%08x"}`+"\n", crc32c(body)); string(got[i:]) != want {
				t.Fatalf("crc member %q, want %q", got[i:], want)
			}
			if !bytes.Equal(frame(string(body)), got) {
				t.Fatal("frame disagrees with EncodeLine")
			}
		})
	}
}

func roundTripEvents() []*Event {
	at := time.Date(2026, 3, 4, 5, 6, 7, 891011121, time.UTC)
	deferUntil := at.Add(48 * time.Hour)
	return []*Event{
		{V: 1, ID: "a1", At: at, Actor: "x", Op: OpCreate, Card: "A", RequestID: "r", Fields: &Fields{
			Title: strp("ünïcödé ✓ \"quoted\" \\ </script>"), Body: strp("line1\nline2\t\u2028"), Phase: strp("p"),
			Priority: intp(-5), Labels: strs("a", "b"), DependsOn: strs("B"), Parent: strp("P"), Acceptance: strs("ok"),
			MaxAttempts: intp(3), DeferUntil: &deferUntil, IdempotencyKey: "key"}},
		{V: 1, ID: "a2", At: at, Actor: "x", Op: OpUpdate, Card: "A", Fields: &Fields{Priority: intp(0), Labels: &[]string{}}},
		{V: 1, ID: "a3", At: at, Actor: "x", Op: OpClaim, Card: "A", ExpectVersion: 2, Epoch: 1, Owner: "w", TTLSeconds: 1},
		{V: 1, ID: "a4", At: at, Actor: "x", Op: OpHeartbeat, Card: "A", Epoch: 1, Owner: "w", Progress: intp(100),
			Checkpoint: json.RawMessage(`{"n":[1,2,{"k":null}]}`)},
		{V: 1, ID: "a5", At: at, Actor: "x", Op: OpRelease, Card: "A", Epoch: 1, Owner: "w", Reason: "r"},
		{V: 1, ID: "a6", At: at, Actor: "x", Op: OpReclaim, Card: "A", Epoch: 9, Force: true},
		{V: 1, ID: "a7", At: at, Actor: "x", Op: OpComplete, Card: "A", Reason: "done"},
		{V: 1, ID: "a8", At: at, Actor: "x", Op: OpBlock, Card: "A", Reason: "why"},
		{V: 1, ID: "a9", At: at, Actor: "x", Op: OpUnblock, Card: "A"},
		{V: 1, ID: "aa", At: at, Actor: "x", Op: OpReopen, Card: "A"},
		{V: 1, ID: "ab", At: at, Actor: "x", Op: OpLink, Card: "A", To: "B"},
		{V: 1, ID: "ac", At: at, Actor: "x", Op: OpUnlink, Card: "A", To: "B"},
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, ev := range roundTripEvents() {
		line, err := EncodeLine(ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range [][]byte{line, line[:len(line)-1]} {
			got, err := DecodeLine(in)
			if err != nil {
				t.Fatalf("%s: DecodeLine(%s): %v", ev.Op, in, err)
			}
			if !reflect.DeepEqual(got, ev) {
				t.Fatalf("%s: round trip\n got %+v\nwant %+v", ev.Op, got, ev)
			}
			again, _ := EncodeLine(got)
			if !bytes.Equal(again, line) {
				t.Fatalf("%s: re-encoding differs:\n%s%s", ev.Op, line, again)
			}
		}
	}
}

func TestDecodeLineRejects(t *testing.T) {
	good, err := EncodeLine(roundTripEvents()[2])
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte{}, good...)
	flipped[20] ^= 0x01
	badDigit := bytes.Replace(good, []byte(`"crc":"`), []byte(`"crc":"z`), 1)
	badDigit = append(badDigit[:len(badDigit)-4], badDigit[len(badDigit)-3:]...) // keep the length
	otherCRC := []byte(strings.Replace(string(good), string(good[len(good)-11:len(good)-3]), "00000000", 1))
	base := `{"v":1,"id":"e","at":"2026-01-01T00:00:00Z","actor":"a","op":"block","card":"A"}`
	cases := []struct {
		name string
		line []byte
		want error
	}{
		{"empty", nil, ErrFraming},
		{"just a newline", []byte("\n"), ErrFraming},
		{"empty object", []byte("{}\n"), ErrFraming},
		{"NULs", bytes.Repeat([]byte{0}, 64), ErrFraming},
		{"no crc", []byte(base + "\n"), ErrFraming},
		{"truncated", good[:len(good)-3], ErrFraming},
		{"two newlines", append(append([]byte{}, good...), '\n'), ErrFraming},
		{"flipped byte", flipped, ErrChecksum},
		{"wrong crc", otherCRC, ErrChecksum},
		{"crc not hex", badDigit, ErrFraming},
		{"not JSON under a valid crc", frame(`{"v":1,"id":,}`), ErrFraming},
		{"not an object", frame(`["v",1,"crc"]`), ErrFraming},
		{"version 0", frame(strings.Replace(base, `"v":1`, `"v":0`, 1)), ErrFraming},
		{"a newer version", frame(strings.Replace(base, `"v":1`, fmt.Sprintf(`"v":%d`, FormatVersion+1), 1)), ErrVersion},
		{"unknown op", frame(strings.Replace(base, `"block"`, `"explode"`, 1)), ErrFraming},
		{"no card", frame(strings.Replace(base, `,"card":"A"`, ``, 1)), ErrFraming},
		{"no id", frame(strings.Replace(base, `"id":"e",`, ``, 1)), ErrFraming},
		{"no time", frame(strings.Replace(base, `"at":"2026-01-01T00:00:00Z",`, ``, 1)), ErrFraming},
		{"bad time", frame(strings.Replace(base, `2026-01-01T00:00:00Z`, `yesterday`, 1)), ErrFraming},
		{"wrong type", frame(strings.Replace(base, `"v":1`, `"v":"1"`, 1)), ErrFraming},
	}
	if _, err := DecodeLine(frame(base)); err != nil {
		t.Fatalf("base line does not decode: %v", err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := DecodeLine(tc.line)
			if e != nil || !errors.Is(err, tc.want) {
				t.Fatalf("DecodeLine(%q) = %+v, %v; want %v", tc.line, e, err, tc.want)
			}
		})
	}
}

// TestEventOrder: ledger order is (at, id).
func TestEventOrder(t *testing.T) {
	a := &Event{At: t0, ID: "b"}
	b := &Event{At: t0, ID: "c"}
	c := &Event{At: t0.Add(1), ID: "a"}
	if !a.Before(b) || b.Before(a) || !b.Before(c) || c.Before(a) || a.Before(a) {
		t.Fatal("before is not (at, id) order")
	}
}

// TestNewerLinesRefused: the lines of the v3 ops and fields carry v3, and
// a reader refuses a line newer than it reads with its documented message
// (a v2 reader meeting these lines is this reader meeting a v4 line).
func TestNewerLinesRefused(t *testing.T) {
	for _, ev := range []*Event{
		{Op: OpReview, Card: "A"}, {Op: OpApprove, Card: "A"}, {Op: OpReject, Card: "A"}, {Op: OpClaimReview, Card: "A"},
		{Op: OpComplete, Card: "A", Commit: "abc"}, {Op: OpComplete, Card: "A", Branch: "bl/A"},
		{Op: OpUpdate, Card: "A", Fields: &Fields{Paths: strs("src/**")}},
	} {
		if v := ev.LineVersion(); v != 3 {
			t.Errorf("%s %+v: v%d, want 3", ev.Op, ev, v)
		}
	}
	if v := (&Event{Op: OpComplete, Card: "A"}).LineVersion(); v != 1 {
		t.Errorf("a plain complete is v%d", v)
	}
	line, err := EncodeLine(&Event{V: FormatVersion + 1, ID: "9f2c51d0a4b7e361", At: t0, Actor: "a", Op: OpApprove, Card: "A"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = DecodeLine(line)
	if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "upgrade bl") {
		t.Fatalf("a newer line: %v", err)
	}
}

// TestV3Lines: the events a v2 reader would misread are written at v3,
// which it refuses with its documented message; everything else keeps the
// version it had.
func TestV3Lines(t *testing.T) {
	for _, tc := range []struct {
		e    Event
		want int
	}{
		{Event{Op: OpHandoff, Card: "A", Owner: "a", Epoch: 1, To: "b"}, 3},
		{Event{Op: OpDelete, Card: "A"}, 3},
		{Event{Op: OpRestore, Card: "A"}, 3},
		{Event{Op: OpLink, Card: "A", To: "B", LinkType: LinkRelated}, 3},
		{Event{Op: OpUnlink, Card: "A", To: "B", LinkType: LinkDuplicates}, 3},
		{Event{Op: OpComplete, Card: "E", To: "C"}, 3},
		{Event{Op: OpLink, Card: "A", To: "B"}, 1},
		{Event{Op: OpComplete, Card: "A"}, 1},
		{Event{Op: OpNote, Card: "A", Text: "x"}, 2},
		{Event{Op: OpUpdate, Card: "A", Fields: &Fields{Assignee: new("bob")}}, 4},
		{Event{Op: OpCreate, Card: "A", Fields: &Fields{Title: new("t"), Assignee: new("")}}, 4},
		{Event{Op: OpUpdate, Card: "A", Fields: &Fields{Title: new("t")}}, 1},
	} {
		if got := tc.e.LineVersion(); got != tc.want {
			t.Errorf("%s %+v: v%d, want v%d", tc.e.Op, tc.e, got, tc.want)
		}
	}
	line := []byte(`{"v":5,"id":"0000000000000001","at":"2026-01-02T03:04:05Z","actor":"x","op":"handoff","card":"A"}`)
	if _, err := DecodeLine(frame(string(line))); !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "upgrade bl") {
		t.Fatalf("a line from a newer format: %v", err)
	}
}

// TestClockCodec: the clock member round-trips through both decoders in
// its place after at; a line without it is the line it always was.
func TestClockCodec(t *testing.T) {
	clock := t0.Add(123456789)
	e := &Event{V: 1, ID: "0123456789abcdef", At: t0.Add(year), Clock: &clock, Actor: "a", Op: OpClaim, Card: "A",
		ExpectVersion: 1, Epoch: 1, Owner: "w", TTLSeconds: 2}
	line, err := EncodeLine(e)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(line, []byte(`"at":"2027-01-02T03:04:05Z","clock":"2026-01-02T03:04:05.123456789Z","actor":`)) {
		t.Fatalf("line %s", line)
	}
	body, err := json.MarshalWithOption(e, json.DisableHTMLEscape())
	if err != nil {
		t.Fatal(err)
	}
	if enc, _ := appendEvent(nil, e); !bytes.Equal(enc, body) {
		t.Fatalf("appendEvent\n%s\nJSON encoder\n%s", enc, body)
	}
	framed, _ := CheckFrame(line)
	fast, ok := decodeFast(framed)
	if !ok {
		t.Fatal("decodeFast refused a line with a clock")
	}
	var slow Event
	if err := json.Unmarshal(framed, &slow); err != nil {
		t.Fatal(err)
	}
	for _, d := range []*Event{fast, &slow} {
		if d.Clock == nil || !d.Clock.Equal(clock) || !d.At.Equal(e.At) || d.WriterClock() != clock {
			t.Fatalf("decoded clock %v at %v", d.Clock, d.At)
		}
	}
	e.Clock = nil
	plain, _ := EncodeLine(e)
	if bytes.Contains(plain, []byte("clock")) {
		t.Fatalf("line without a clock: %s", plain)
	}
	// A clock after the stamp is never written; the fold uses the stamp.
	late := e.At.Add(time.Hour)
	e.Clock = &late
	if e.WriterClock() != e.At {
		t.Fatalf("clock() = %v for a clock after the stamp", e.WriterClock())
	}
}
